// The terminal table: per configuration, median [min–max] of the main phases, bus bandwidth and NCCL's memory.
#pragma once
#include <string>

#include "results/result.h"

namespace coldstart {

std::string render_table(const BenchResults& r);
// "152 [148–160]" (ms) or "5.1 [4.9–5.6]"; "–" when there are no samples.
std::string format_ms_spread(const Stats& s);

}  // namespace coldstart
