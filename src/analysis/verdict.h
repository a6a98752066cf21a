// The verdict a run ends with, in a few lines, read from the fix ranking: per default configuration (the stock NCCL,
// cuMem as NCCL has it, no --fix), the configuration with the shortest ready, what it saves against the default with
// its interval and n, and what each other one saves or loses and what it costs. bench ends with these lines and
// doctor --from's fixes-ranked finding ends with them: one function makes both (render_fix_rankings).
#pragma once
#include <string>
#include <vector>

#include "analysis/fixes.h"

namespace coldstart::analysis {

// The configuration with the shortest ready (median over ok trials) of a ranking: an index into k.fixes, or -1 where
// the default itself is (nothing beside it has a shorter median). A fix with a failed trial is never it.
int shortest_ready(const FixRanking& k);

// "verdict for SCOPE (the default: ready D ms, n N):" and a line per configuration, the shortest first; for no
// ranking, one line saying there is nothing to judge.
std::string render_verdicts(const std::vector<FixRanking>& rankings);

}  // namespace coldstart::analysis
