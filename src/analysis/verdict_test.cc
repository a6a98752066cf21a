// The verdict a run ends with, on runs recorded on GPUs (docs/results/) and on made-up ones: the configuration with
// the shortest ready first, with what it saves against the default, its interval and n; then every other one with
// what it saves or loses and costs; failed ones said, never the shortest; one line where there is nothing to judge.
#include "analysis/verdict.h"

#include <gtest/gtest.h>

#include "model/summary.h"
#include "model/test_runs.h"
#include "util/strings.h"

namespace coldstart::analysis {
namespace {

const std::string kResults = std::string(COLDSTART_SOURCE_DIR) + "/docs/results/";

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  for (const auto& l : split(text, '\n'))
    if (!l.empty()) out.push_back(l);
  return out;
}

// A run of one default and its fixes, 3 trials each: two ranks whose first collective takes `first` ms after an init
// of `init` ms; `failed` trials of a fix hang.
struct Made {
  const char* fix;
  double init, first;
  int failed = 0;
};
BenchResults made_run(const std::vector<Made>& configs) {
  BenchResults r;
  r.spec.devices = {"0", "1"};
  for (const Made& m : configs) {
    Config c;
    c.id = static_cast<int>(r.configs.size());
    c.mode = Mode::isolated;
    c.fix = *Fix::parse(m.fix);
    r.configs.push_back(c);
    for (int trial = 0; trial < 3; ++trial) {
      TrialResult t;
      t.config_id = c.id;
      if (trial < m.failed) t.status = TrialStatus::hang;
      for (int k = 0; k < 2; ++k) {
        t.ranks.push_back(test::rank_in_order({{"process_start", 10.0},
                                               {"cuda_context", 250.0},
                                               {"sync_init", 1.0},
                                               {"comm_init", m.init},
                                               {"first_enqueue", m.first},
                                               {"first_wait", 0.2}},
                                              trial));
      }
      r.trials.push_back(t);
    }
  }
  r.summaries = summarize(r.configs, r.trials);
  return r;
}

}  // namespace

// Stock and patched NCCL 2.30.7 with cuMem on and off (one H200, 2 ranks): the patch has the shortest ready and saves
// alike with cuMem off; each other configuration says what it saves and costs.
TEST(Verdict, TheShortestReadyFirstWithWhatItSavesAgainstTheDefault) {
  auto rankings = rank_fixes(load_bench_results(kResults + "2026-12-01-h200x1-nccl-patch/bench-2.json"));
  const auto lines = lines_of(render_verdicts(rankings));
  ASSERT_EQ(lines.size(), 4u) << render_verdicts(rankings);
  EXPECT_EQ(lines[0],
            "verdict for isolated · NCCL_CUMEM_ENABLE=(unset) · NCCL 2.30.7 (the default: ready 962 ms, n 5):");
  EXPECT_EQ(lines[1],
            "  shortest ready: patched-nccl, 669 ms: saves 261 ms after the ranks met (97% interval 192 to 379 ms, n "
            "5/5) against the default — alike with cumem-off, patched-nccl+cumem-off (no difference measured between "
            "them); cost: a custom NCCL build every rank must load");
  EXPECT_TRUE(
      lines[2].starts_with("  cumem-off, 711 ms: saves 239 ms after the ranks met (97% interval 172 to 359 ms, "
                           "n 5/5); NCCL memory +248 MiB; cost: legacy CUDA IPC"))
      << lines[2];
  EXPECT_TRUE(lines[3].starts_with("  patched-nccl+cumem-off, 705 ms: saves 220 ms")) << lines[3];
  EXPECT_EQ(shortest_ready(rankings[0]), 0);
}

// The growth run of 8 ranks on one H100 (the patch's switch and cuMem as --env axes, 3 trials a side): the patch is
// the best measured; cuMem off saves nothing measurable, and with the patch it loses, both said with their intervals.
TEST(Verdict, OnARecordedGrowthRun) {
  auto rankings = rank_fixes(load_bench_results(kResults + "2026-12-05-h100x1-growth/growth-8/results.json"));
  const std::string text = render_verdicts(rankings);
  EXPECT_NE(text.find("  shortest ready: patched-nccl, 2060 ms: saves 259 ms after the ranks met (90% interval 158 "
                      "to 318 ms: too few trials for 95%, n 3/3) against the default — the best measured"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("  cumem-off, 2378 ms: no difference measured after the ranks met"), std::string::npos) << text;
  EXPECT_NE(text.find("  patched-nccl+cumem-off, 2463 ms: loses 65.9 ms"), std::string::npos) << text;
  // doctor --from's fixes-ranked finding is render_fix_rankings: the same lines, last.
  const std::string all = render_fix_rankings(rankings);
  ASSERT_GE(all.size(), text.size());
  EXPECT_EQ(all.substr(all.size() - text.size()), text);
}

// Where nothing is shorter than the default, the default is said to be; a fix whose trials failed is said with its
// count and is never the shortest, however short its other trials.
TEST(Verdict, TheDefaultItselfAndFailedFixes) {
  auto rankings = rank_fixes(made_run({{"none", 400, 20}, {"eager-connect", 460, 20}, {"cumem-off", 300, 1, 1}}));
  ASSERT_EQ(rankings.size(), 1u);
  EXPECT_EQ(shortest_ready(rankings[0]), -1);
  const auto lines = lines_of(render_verdicts(rankings));
  ASSERT_EQ(lines.size(), 4u) << render_verdicts(rankings);
  EXPECT_EQ(lines[1], "  shortest ready: the default itself, 687 ms; no fix measured shortens it beyond noise");
  EXPECT_EQ(lines[2], "  cumem-off: 1 of 3 trials did not finish (1 hang): not ranked");
  EXPECT_TRUE(lines[3].starts_with("  eager-connect, 747 ms: loses 60.0 ms after the ranks met")) << lines[3];
  EXPECT_NE(lines[3].find("; cost: every connection made at init"), std::string::npos) << lines[3];
}

TEST(Verdict, NothingToJudgeIsOneLine) {
  const auto lines = lines_of(render_verdicts({}));
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_TRUE(lines[0].starts_with("verdict: nothing to judge here")) << lines[0];
  EXPECT_TRUE(rank_fixes(made_run({{"none", 400, 20}})).empty());
}

}  // namespace coldstart::analysis
