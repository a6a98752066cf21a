// Medians and ranges of per-rank numbers for the rank programs' tables and JSON.
#pragma once
#include <algorithm>
#include <nlohmann/json.hpp>
#include <vector>

namespace coldstart::micro {

inline double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// {"n", "median", "min", "max"}; zeros when empty.
inline nlohmann::json describe(const std::vector<double>& v) {
  auto [lo, hi] = v.empty() ? std::pair{0.0, 0.0}
                            : std::pair{*std::min_element(v.begin(), v.end()), *std::max_element(v.begin(), v.end())};
  return {{"n", v.size()}, {"median", median(v)}, {"min", lo}, {"max", hi}};
}

}  // namespace coldstart::micro
