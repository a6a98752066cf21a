// Medians and ranges of per-rank numbers for the rank programs' tables and JSON, from the lab's order statistics.
#pragma once
#include <nlohmann/json.hpp>
#include <vector>

#include "util/stats.h"

namespace coldstart::micro {

inline double median(const std::vector<double>& v) { return summarize(v).median; }

// {"n", "median", "min", "max"}; zeros when empty.
inline nlohmann::json describe(const std::vector<double>& v) {
  const Stats s = summarize(v);
  return {{"n", s.n}, {"median", s.median}, {"min", s.min}, {"max", s.max}};
}

}  // namespace coldstart::micro
