#include "analysis/verdict.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "util/strings.h"

namespace coldstart::analysis {
namespace {

bool leads(const FixRanking& k, int i) {
  return i >= 0 && std::find(k.leaders.begin(), k.leaders.end(), static_cast<size_t>(i)) != k.leaders.end();
}

std::string leader_names(const FixRanking& k) {
  std::vector<std::string> names;
  for (size_t i : k.leaders) names.push_back(k.fixes[i].shown());
  return join(names, ", ");
}

// What the fix ranking's best says beside the shortest ready: that it is the best, that others save alike, or which
// saves more on the part of ready each acts on.
std::string beside_the_best(const FixRanking& k, int shortest) {
  if (k.leaders.empty()) return shortest < 0 ? "; no fix measured shortens it beyond noise" : "";
  if (leads(k, shortest)) {
    if (k.leaders.size() == 1) return " — the best measured";
    std::vector<std::string> others;
    for (size_t i : k.leaders)
      if (static_cast<int>(i) != shortest) others.push_back(k.fixes[i].shown());
    return " — alike with " + join(others, ", ") + " (no difference measured between them)";
  }
  return fmt::format("; on the part of ready each acts on, the best measured {} {}",
                     k.leaders.size() == 1 ? "is" : "are", leader_names(k));
}

// "; NCCL memory +1.8 GiB; cost: ..." for a configuration that is the default with fixes.
std::string costs(const FixOutcome& f) {
  std::string s;
  if (f.mem_delta_bytes != 0)
    s +=
        fmt::format("; NCCL memory {}{}", f.mem_delta_bytes > 0 ? "+" : "-", format_bytes(std::abs(f.mem_delta_bytes)));
  if (f.busbw_gbps > 0 && std::abs(f.busbw_delta_pct) >= 1) s += fmt::format("; busbw {:+.0f}%", f.busbw_delta_pct);
  if (!f.cost_in_brief.empty()) s += "; cost: " + f.cost_in_brief;
  return s;
}

std::string verdict_of(const FixRanking& k) {
  std::string out = fmt::format("verdict for {} (the default: ready {} ms, n {}):\n", k.scope,
                                format_ms(k.baseline_ready.median), k.baseline_ready.n);
  const int best = shortest_ready(k);
  if (best < 0) {
    out += fmt::format("  shortest ready: the default itself, {} ms{}\n", format_ms(k.baseline_ready.median),
                       beside_the_best(k, best));
  } else {
    const FixOutcome& f = k.fixes[static_cast<size_t>(best)];
    out += fmt::format("  shortest ready: {}, {} ms: {} against the default{}{}\n", f.shown(),
                       format_ms(f.ready.median), format_saving(f), beside_the_best(k, best), costs(f));
  }
  for (size_t i = 0; i < k.fixes.size(); ++i) {
    const FixOutcome& f = k.fixes[i];
    if (static_cast<int>(i) == best) continue;
    if (f.is_failed())
      out += fmt::format("  {}: {} of {} trials did not finish ({}): not ranked\n", f.shown(), f.failed, f.trials,
                         f.failures);
    else
      out += fmt::format("  {}, {} ms: {}{}\n", f.shown(), format_ms(f.ready.median), format_saving(f), costs(f));
  }
  return out;
}

}  // namespace

int shortest_ready(const FixRanking& k) {
  int best = -1;
  double shortest = k.baseline_ready.n ? k.baseline_ready.median : 0;
  for (size_t i = 0; i < k.fixes.size(); ++i) {
    const FixOutcome& f = k.fixes[i];
    if (f.is_failed() || f.ready.n == 0) continue;
    if (f.ready.median < shortest) {
      shortest = f.ready.median;
      best = static_cast<int>(i);
    }
  }
  return best;
}

std::string render_verdicts(const std::vector<FixRanking>& rankings) {
  if (rankings.empty())
    return "verdict: nothing to judge here: no configuration of this run is another with a fix (--fix, "
           "NCCL_CUMEM_ENABLE=0, the patched NCCL beside its stock release); ready per configuration is in the "
           "table\n";
  std::string out;
  for (const auto& k : rankings) out += verdict_of(k);
  return out;
}

}  // namespace coldstart::analysis
