// A GPU as a run records it (the lab's node, doctor's facts).
#pragma once
#include <string>

namespace coldstart {

struct GpuInfo {
  int index = 0;  // CUDA's index in the process that looked
  std::string name;
  std::string bus_id;  // "0000:00:06.0" (util/strings.h: format_bus_id)
  std::string uuid;    // "GPU-98734c..."
  unsigned long long memory_bytes = 0;
  int sm = 0;  // its compute capability, 10 * major + minor (90: an H100 or H200); 0 when not read
  bool operator==(const GpuInfo&) const = default;
};

}  // namespace coldstart
