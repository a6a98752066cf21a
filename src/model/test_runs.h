// The tests' made-up ranks, one helper for every test file that builds a run by hand: a rank whose phases run one
// after another from the trial's start.
#pragma once
#include <initializer_list>
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

}  // namespace coldstart::test
