// The growth law: each law recovered from values it made (with noise), the constant law kept where nothing grows,
// intervals that hold the truth, the refusals of runs that cannot show a growth, and the law read off the sweep
// recorded on a GPU (docs/results/2026-12-05-h100x1-growth).
#include "analysis/growth.h"

#include <cmath>
#include <map>

#include <gtest/gtest.h>

#include "util/error.h"
#include "util/random.h"

namespace coldstart::analysis {
namespace {

// Three trials at each of 2..64 ranks of ms = fixed + scale·g(n), each off by up to ±noise (relative).
std::vector<GrowthPoint> made_by(Law law, double fixed, double scale, double noise, uint64_t seed = 7) {
  Rng rng(seed);
  std::vector<GrowthPoint> points;
  for (int n : {2, 4, 8, 16, 32, 64}) {
    GrowthPoint p{n, {}};
    for (int t = 0; t < 3; ++t) {
      const double u = static_cast<double>(rng.below(2001)) / 1000 - 1;  // -1 .. 1
      p.values.push_back((fixed + scale * law_term(law, n)) * (1 + noise * u));
    }
    points.push_back(p);
  }
  return points;
}

TEST(Growth, EachLawIsFoundInValuesItMade) {
  for (Law law : {Law::constant, Law::linear, Law::n_log_n, Law::quadratic}) {
    auto g = growth_of(made_by(law, 300, 40, 0.03), "c", "ready");
    ASSERT_TRUE(g);
    EXPECT_EQ(g->fits.front().law, law) << name_of(law);
    EXPECT_LT(g->fits.front().residual, 0.03) << name_of(law);
  }
}

TEST(Growth, TheConstantLawStaysWhereNothingGrows) {
  auto g = growth_of(made_by(Law::constant, 250, 0, 0.10), "c", "cuda_context");
  ASSERT_TRUE(g);
  EXPECT_EQ(g->fits.front().law, Law::constant);
  EXPECT_NEAR(g->fits.front().fixed_ms, 250, 15);
  EXPECT_LT(std::abs(g->exponent.estimate), 0.1);
}

TEST(Growth, ExponentAndPredictionHoldTheTruth) {
  auto g = growth_of(made_by(Law::quadratic, 0, 2, 0.05), "c", "first_enqueue");
  ASSERT_TRUE(g);
  EXPECT_EQ(g->fits.front().law, Law::quadratic);
  EXPECT_LE(g->exponent.low, 2.0);
  EXPECT_GE(g->exponent.high, 2.0);
  ASSERT_EQ(g->predictions.size(), std::size(kPredictedRanks));
  for (const Prediction& p : g->predictions) {
    const double truth = 2.0 * static_cast<double>(p.ranks) * static_cast<double>(p.ranks);
    EXPECT_LE(p.ms.low, truth) << p.ranks;
    EXPECT_GE(p.ms.high, truth) << p.ranks;
    EXPECT_LE(p.ms.low, p.ms.estimate);
    EXPECT_GE(p.ms.high, p.ms.estimate);
  }
}

TEST(Growth, FewerThanThreeRankCountsFitNothing) {
  std::vector<GrowthPoint> two{{2, {10, 11}}, {4, {20, 21}}};
  EXPECT_FALSE(growth_of(two, "c", "ready"));
  EXPECT_TRUE(fit_laws(two).empty());
  two.push_back({8, {}});  // a rank count without an ok trial is no point
  EXPECT_FALSE(growth_of(two, "c", "ready"));
}

std::vector<const BenchResults*> pointers(const std::vector<BenchResults>& runs) {
  std::vector<const BenchResults*> out;
  for (const BenchResults& r : runs) out.push_back(&r);
  return out;
}

BenchResults run_of(int ranks_per_gpu, double ready_ms) {
  BenchResults r;
  r.spec.devices = {"0"};
  r.spec.ranks_per_gpu = ranks_per_gpu;
  r.summaries.push_back(ConfigSummary{});
  r.summaries[0].label = "isolated";
  TrialResult t;
  t.config_key = "isolated|nccl";
  RankResult rank;
  rank.phases = {{"comm_init", 0, ready_ms / 2}, {"first_wait", ready_ms / 2, ready_ms / 2}};
  rank.nccl = RankNccl{};
  rank.nccl->init_timings_ms = {{"connections", ready_ms / 4}};
  t.ranks.push_back(rank);
  r.trials.push_back(t);
  return r;
}

TEST(Growth, RunsAreMatchedByConfigurationAndEachValueHasItsLaw) {
  std::vector<BenchResults> runs{run_of(8, 800), run_of(2, 200), run_of(4, 400)};
  std::vector<Growth> gs = growth(pointers(runs), {"a", "b", "c"});
  std::vector<std::string> phases;
  for (const Growth& g : gs) phases.push_back(g.phase);
  EXPECT_EQ(phases, (std::vector<std::string>{"ready", "comm_init", "first_wait", "init.connections"}));
  for (const Growth& g : gs) {
    EXPECT_EQ(g.config, "isolated");
    ASSERT_EQ(g.points.size(), 3u);
    EXPECT_EQ(g.points.front().ranks, 2);
  }
  EXPECT_NEAR(gs[0].points[2].values[0], 800, 1e-9);  // ready: the last phase's end
}

TEST(Growth, RunsThatCannotShowAGrowthAreRefusedNamingThem) {
  try {
    std::vector<BenchResults> runs{run_of(2, 1), run_of(2, 2), run_of(4, 3)};
    growth(pointers(runs), {"one", "two", "three"});
    ADD_FAILURE() << "two runs of 4 ranks accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("one and two: both are jobs of 2 ranks"), std::string::npos) << e.what();
  }
  std::vector<BenchResults> two{run_of(2, 1), run_of(4, 2)};
  EXPECT_THROW(growth(pointers(two), {"a", "b"}), InputError);
}

// A job of `ranks` over 1, 2 and 4 nodes, each configuration's ready = 100 ms per node (what crossing nodes costs)
BenchResults run_over_nodes(int ranks) {
  BenchResults r;
  r.spec.devices = {"0"};
  r.spec.ranks_per_gpu = ranks;
  r.spec.nodes = {1, 2, 4};
  for (int nodes : r.spec.nodes) {
    Config c;
    c.id = static_cast<int>(r.configs.size());
    c.mode = Mode::isolated;
    c.nodes = nodes;
    r.configs.push_back(c);
    r.summaries.push_back(ConfigSummary{});
    r.summaries.back().config_id = c.id;
    r.summaries.back().label = c.label();
    TrialResult t;
    t.config_id = c.id;
    t.config_key = c.key();
    t.ranks.push_back(RankResult{});
    t.ranks.back().phases = {{"comm_init", 0, 100.0 * nodes}, {"first_wait", 100.0 * nodes, 0}};
    r.trials.push_back(t);
  }
  return r;
}

// Runs across nodes: each configuration of a node count has its growth with the ranks, and each number of ranks per
// node its own (the job grown by nodes): 4 ranks per node is 1 node at 4 ranks, 2 at 8 and 4 at 16.
TEST(Growth, AJobAcrossNodesGrowsByNodesOfTheSameRanks) {
  std::vector<BenchResults> runs{run_over_nodes(4), run_over_nodes(8), run_over_nodes(16)};
  const std::vector<Growth> all = growth(pointers(runs), {"a", "b", "c"});
  std::map<std::string, const Growth*> ready;
  for (const Growth& g : all)
    if (g.phase == "ready") ready[g.config] = &g;
  ASSERT_TRUE(ready.contains("isolated · 2 nodes")) << ready.size();
  ASSERT_TRUE(ready.contains("isolated · 4 ranks per node"));
  const Growth& per_node = *ready.at("isolated · 4 ranks per node");
  ASSERT_EQ(per_node.points.size(), 3u);
  EXPECT_EQ(per_node.points[0].ranks, 4);
  EXPECT_NEAR(per_node.points[0].values.at(0), 100, 1e-9);  // 1 node
  EXPECT_NEAR(per_node.points[2].values.at(0), 400, 1e-9);  // 4 nodes of 4
  EXPECT_NEAR(per_node.exponent.estimate, 1, 1e-6);         // a node more, the same cost more
  // 2 ranks per node: 2 nodes at 4 ranks and 4 at 8, two points: no law, no series
  EXPECT_FALSE(ready.contains("isolated · 2 ranks per node"));
  // 16 ranks per node: one node count only, the configuration itself (isolated at 16 ranks), not a series of its own
  EXPECT_FALSE(ready.contains("isolated · 16 ranks per node"));
}

// The sweep recorded on an H100 (2 to 32 ranks on one GPU, NCCL 2.30.7 patched with its switch off and on): NCCL's
// own path's first collective grows faster than linearly, and its CUDA contexts (made one after another by the
// driver for ranks sharing the GPU) grow too.
TEST(Growth, TheRecordedSweepGrowsFasterThanLinearOnNcclsOwnPath) {
  const std::string dir = std::string(COLDSTART_SOURCE_DIR) + "/docs/results/2026-12-05-h100x1-growth/";
  std::vector<BenchResults> runs;
  std::vector<std::string> names;
  for (int k : {2, 4, 8, 16, 32}) {
    names.push_back("growth-" + std::to_string(k));
    runs.push_back(load_bench_results(dir + names.back() + "/results.json"));
  }
  bool seen = false;
  for (const Growth& g : growth(pointers(runs), names)) {
    if (g.phase != "first_enqueue" ||
        g.config.find("NCCL_P2P_PEER_REGION=0 · NCCL_CUMEM_ENABLE=(unset)") == std::string::npos)
      continue;
    seen = true;
    EXPECT_EQ(g.points.size(), 5u);
    EXPECT_NE(g.fits.front().law, Law::constant);
    EXPECT_NE(g.fits.front().law, Law::linear);
    EXPECT_GT(g.exponent.estimate, 1.0);
  }
  EXPECT_TRUE(seen);
}

}  // namespace
}  // namespace coldstart::analysis
