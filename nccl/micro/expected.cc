#include "micro/expected.h"

#include <algorithm>

namespace coldstart::micro {

Shape shape_for(const std::string& collective, uint64_t bytes, int world, int root) {
  size_t n = std::max<uint64_t>(1, bytes / sizeof(float));
  size_t per_rank = std::max<size_t>(1, n / world);
  Shape s;
  s.root = root;
  auto at = std::find(kCollectives.begin(), kCollectives.end(), collective);
  s.kind = at == kCollectives.end() ? Kind::unknown : static_cast<Kind>(at - kCollectives.begin());
  if (collective == "all_gather") {
    s.chunk = per_rank;
    s.send_count = per_rank;
    s.recv_count = per_rank * world;
  } else if (collective == "reduce_scatter") {
    s.chunk = per_rank;
    s.send_count = per_rank * world;
    s.recv_count = per_rank;
  } else if (collective == "all_to_all") {
    s.chunk = per_rank;
    s.send_count = s.recv_count = per_rank * world;
  } else {  // all_reduce, broadcast, sendrecv
    s.chunk = s.send_count = s.recv_count = n;
  }
  return s;
}

float input_value(int rank, size_t index) { return static_cast<float>(1 + rank + static_cast<int>(index % 251)); }

float expected_value(const Shape& shape, int world, int rank, size_t index) {
  // The sum over ranks of input_value(r, i): world * (1 + i % 251) + world * (world - 1) / 2.
  auto sum_at = [&](size_t i) {
    return static_cast<float>(world * (1 + static_cast<int>(i % 251)) + world * (world - 1) / 2);
  };
  switch (shape.kind) {
    case Kind::all_reduce: return sum_at(index);
    case Kind::broadcast: return input_value(shape.root, index);
    case Kind::sendrecv: return input_value((rank + world - 1) % world, index);
    case Kind::all_gather: return input_value(static_cast<int>(index / shape.chunk), index % shape.chunk);
    case Kind::reduce_scatter: return sum_at(rank * shape.chunk + index);
    case Kind::all_to_all:  // from rank q: q's chunk for this rank
      return input_value(static_cast<int>(index / shape.chunk), rank * shape.chunk + index % shape.chunk);
    case Kind::unknown: break;
  }
  return -1;
}

std::vector<uint64_t> default_sizes(uint64_t max_bytes) {
  std::vector<uint64_t> sizes;
  for (uint64_t b = sizeof(float); b <= max_bytes; b *= 4) sizes.push_back(b);
  return sizes;
}

bool rank_view(const std::string& mode, const std::vector<std::string>& gpus, int rank, RankView* view) {
  if (gpus.empty() || rank < 0) return false;
  size_t own = static_cast<size_t>(rank) % gpus.size();
  std::string all;
  for (const auto& g : gpus) all += (all.empty() ? "" : ",") + g;
  if (mode == "shared") {
    *view = {all, static_cast<int>(own)};
  } else if (mode == "isolated") {
    *view = {gpus[own], 0};
  } else if (mode == "remap") {
    std::string order = gpus[own];
    for (size_t i = 0; i < gpus.size(); ++i)
      if (i != own) order += "," + gpus[i];
    *view = {order, 0};
  } else {
    return false;
  }
  return true;
}

}  // namespace coldstart::micro
