#include "lab/visibility.h"

#include <algorithm>
#include <cctype>
#include <set>

#include "util/error.h"
#include "util/strings.h"

namespace coldstart::lab {

Visibility visibility_for(const ModeSpec& spec, int local_rank, const std::vector<std::string>& gpus,
                          int ranks_per_gpu) {
  auto r = static_cast<size_t>(local_rank);
  size_t gpu = ranks_per_gpu > 0 ? r / static_cast<size_t>(ranks_per_gpu) : r;
  if (local_rank < 0 || gpu >= gpus.size())
    throw InputError("rank " + std::to_string(local_rank) + " has no GPU: the job has " + std::to_string(gpus.size()) +
                     "; lower --gpus, give more devices, or place several ranks on each GPU with --ranks-per-gpu");
  const std::string& own = gpus[gpu];
  switch (spec.mode) {
    case Mode::ray:
    case Mode::ray_noset: return {"", 0};  // Ray decides, in the actor
    case Mode::shared: return {join(gpus, ","), static_cast<int>(gpu)};
    case Mode::isolated: return {own, 0};
    case Mode::remap: {
      std::vector<std::string> order{own};
      for (const auto& g : gpus)
        if (g != own) order.push_back(g);
      return {join(order, ","), 0};
    }
    case Mode::explicit_list: {
      if (r >= spec.per_rank.size())
        throw InputError("--visible gives lists for " + std::to_string(spec.per_rank.size()) + " ranks but rank " +
                         std::to_string(local_rank) + " needs one; give one list per rank, separated by '/'");
      const RankView& view = spec.per_rank[r];
      int index = view.device_index;
      if (index < 0) {
        auto it = std::find(view.devices.begin(), view.devices.end(), own);
        if (it == view.devices.end())
          throw InputError("--visible: rank " + std::to_string(local_rank) + "'s list '" + join(view.devices, ",") +
                           "' does not hold its GPU " + own + "; add it or name the device with @INDEX");
        index = static_cast<int>(it - view.devices.begin());
      }
      if (static_cast<size_t>(index) >= view.devices.size())
        throw InputError("--visible: rank " + std::to_string(local_rank) + " selects device " + std::to_string(index) +
                         " of a list of " + std::to_string(view.devices.size()));
      return {join(view.devices, ","), index};
    }
  }
  return {};
}

namespace {
bool is_uuid_body(std::string_view s) {
  if (s.empty()) return false;
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return std::isxdigit(static_cast<unsigned char>(c)) || c == '-'; });
}
}  // namespace

std::vector<std::string> parse_device_list(const std::string& text, const std::string& what) {
  if (trim(text).empty()) throw InputError(what + " is empty; give GPU indices or UUIDs separated by commas, e.g. 0,1");
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (auto& raw : split(text, ',')) {
    std::string e(trim(raw));
    bool ok = false;
    if (auto v = parse_int(e))
      ok = *v >= 0;
    else if (starts_with(e, "GPU-"))
      ok = is_uuid_body(std::string_view(e).substr(4));
    else if (starts_with(e, "MIG-"))
      ok = e.size() > 4;
    if (!ok)
      throw InputError(what + ": '" + e + "' is not a GPU; use an index (0), a UUID (GPU-8f2e...) or MIG-<uuid>");
    if (!seen.insert(e).second) throw InputError(what + ": GPU '" + e + "' is listed twice; list each GPU once");
    out.push_back(e);
  }
  return out;
}

std::vector<RankView> parse_explicit_lists(const std::string& text) {
  std::vector<RankView> out;
  for (auto& part : split(text, '/')) {
    RankView v;
    std::string list = part;
    if (auto at = part.find('@'); at != std::string::npos) {
      auto idx = parse_int(std::string_view(part).substr(at + 1));
      if (!idx || *idx < 0)
        throw InputError("--visible: '" + part + "' has a bad device index after '@'; use e.g. 0,1@1");
      v.device_index = static_cast<int>(*idx);
      list = part.substr(0, at);
    }
    v.devices = parse_device_list(list, "--visible");
    out.push_back(std::move(v));
  }
  return out;
}

}  // namespace coldstart::lab
