// What nccl_check sends and what it must get back: every rank's input is small integers in float32, so every
// collective's result is exact and each element of it has one expected value.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace coldstart::micro {

// Every collective coldstart runs, by the names coldstart uses.
inline const std::vector<std::string> kCollectives = {"all_reduce", "all_gather", "reduce_scatter",
                                                      "broadcast",  "sendrecv",   "all_to_all"};

// Element counts of one check of `bytes` (the larger buffer, as nccl-tests counts it; at least one element per rank).
enum class Kind { all_reduce, all_gather, reduce_scatter, broadcast, sendrecv, all_to_all, unknown };
struct Shape {
  Kind kind = Kind::unknown;
  size_t send_count = 0;  // elements this rank sends
  size_t recv_count = 0;  // elements it receives
  size_t chunk = 0;       // per rank (all_gather, reduce_scatter, all_to_all), else the count
  int root = 0;           // broadcast
};
Shape shape_for(const std::string& collective, uint64_t bytes, int world, int root);

// Rank r's input at index i: 1 + r + i % 251 (a sum over 64 ranks stays far below 2^24: exact in float32).
float input_value(int rank, size_t index);
// The value rank `rank` must hold at index i of its receive buffer after the collective (cheap: called per element).
float expected_value(const Shape& shape, int world, int rank, size_t index);

// 1 element (4 bytes), then powers of 4 up to max_bytes.
std::vector<uint64_t> default_sizes(uint64_t max_bytes);

// What one rank sees, given the job's GPUs (distinct) and rank i on gpus[i % n]: shared (every GPU, device i % n),
// isolated (its GPU only, device 0), remap (every GPU, its own first, device 0).
struct RankView {
  std::string visible;
  int device = 0;
};
bool rank_view(const std::string& mode, const std::vector<std::string>& gpus, int rank, RankView* view);

}  // namespace coldstart::micro
