// The tests' made-up runs, one helper for every test file that builds one by hand: a rank whose phases run one after
// another from the trial's start, and a configuration's summary of phase medians.
#pragma once
#include <initializer_list>
#include <string>
#include <utility>

#include "model/result.h"

namespace coldstart::test {

// Each phase `ms` long plus `extra` (a trial's own offset), in the order given; a phase of negative length is left out
// (a configuration that does not run it).
inline RankResult rank_in_order(std::initializer_list<std::pair<const char*, double>> phases, double extra = 0) {
  RankResult rank;
  double at = 0;
  for (const auto& [name, ms] : phases) {
    if (ms < 0) continue;
    rank.phases.push_back({name, at, ms + extra});
    at += ms + extra;
  }
  return rank;
}

// A configuration's summary with these phases' medians (each over 3 rank-samples), as the table and doctor read it.
inline ConfigSummary summary_with(const std::string& label,
                                  std::initializer_list<std::pair<const char*, double>> medians) {
  ConfigSummary s;
  s.label = label;
  for (const auto& [name, median] : medians) {
    Stats stats;
    stats.n = 3;
    stats.median = median;
    s.phases.push_back({name, stats});
  }
  return s;
}

}  // namespace coldstart::test
