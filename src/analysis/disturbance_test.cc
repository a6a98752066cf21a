// The NCCL log's own cost, read from a run that has the log off and on beside each other: per phase, the shift with
// its interval; "beyond noise" only where the interval leaves zero out; nothing for a run without the pair.
#include "analysis/disturbance.h"

#include <gtest/gtest.h>

#include "model/summary.h"
#include "model/test_runs.h"

namespace coldstart::analysis {
namespace {

const std::string kRecordedRuns = std::string(COLDSTART_SOURCE_DIR) + "/docs/results/";

// One configuration with the log off and on, 6 trials each of 2 ranks; the log adds `added` ms to first_enqueue.
BenchResults made_pair(double added) {
  BenchResults r;
  r.spec.devices = {"0"};
  for (NcclLog level : {NcclLog::off, NcclLog::light}) {
    Config c;
    c.id = static_cast<int>(r.configs.size());
    c.mode = Mode::isolated;
    c.nccl_log = level;
    r.configs.push_back(c);
    for (int trial = 0; trial < 6; ++trial) {
      TrialResult t;
      t.config_id = c.id;
      for (int k = 0; k < 2; ++k) {
        const double jitter = (trial * 7 + k * 3) % 11;  // the same noise on both sides
        t.ranks.push_back(test::rank_in_order({{"process_start", 10.0},
                                               {"comm_init", 500.0 + jitter},
                                               {"first_enqueue", 260.0 + jitter + (level == NcclLog::off ? 0 : added)},
                                               {"first_wait", 1.0}}));
      }
      r.trials.push_back(t);
    }
  }
  r.summaries = summarize(r.configs, r.trials);
  return r;
}

}  // namespace

TEST(LogDisturbance, ALogThatAddsToAPhaseIsSaidBeyondNoise) {
  const auto d = log_disturbance(made_pair(65));
  ASSERT_EQ(d.size(), 1u);
  EXPECT_TRUE(d[0].beyond_noise());
  ASSERT_EQ(d[0].phases.size(), 4u);
  EXPECT_EQ(d[0].phases[1].phase, "first_enqueue");
  EXPECT_NEAR(d[0].phases[1].shift.estimate, 65, 1e-9);
  EXPECT_TRUE(d[0].phases[1].beyond_noise());
  EXPECT_FALSE(d[0].phases[0].beyond_noise());  // comm_init: the same on both sides
  const std::string text = render_log_disturbance(d);
  EXPECT_NE(text.find("the NCCL log's own cost, light against off"), std::string::npos) << text;
  EXPECT_NE(text.find("  isolated: beyond noise: first_enqueue +65.0 ms [61.0 to 69.0], ready +65.0 ms ["),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("n 6/6); read them from a run with --nccl-log off; within noise: comm_init +0.0 ms"),
            std::string::npos)
      << text;
}

TEST(LogDisturbance, ALogThatAddsNothingIsWithinNoise) {
  const auto d = log_disturbance(made_pair(0));
  ASSERT_EQ(d.size(), 1u);
  EXPECT_FALSE(d[0].beyond_noise());
  EXPECT_NE(render_log_disturbance(d).find("  isolated: within noise on every phase (comm_init +0.0 ms"),
            std::string::npos)
      << render_log_disturbance(d);
}

TEST(LogDisturbance, ARunWithoutTheLogOffBesideItSaysNothing) {
  BenchResults r = made_pair(65);
  r.configs[0].nccl_log = NcclLog::full;  // full and light: no pair with off
  EXPECT_TRUE(log_disturbance(r).empty());
  EXPECT_EQ(render_log_disturbance({}), "");
}

// 2x H200, NCCL 2.28.3, --nccl-log off,light,full over three launch models and cuMem on/off, 5 trials each
// (docs/nccllog.md's A/B): twelve pairs, each named by its configuration without the log.
TEST(LogDisturbance, TheRecordedLoggingRunGivesEveryPair) {
  const auto d = log_disturbance(load_bench_results(kRecordedRuns + "2026-11-29-h200x2/default-logging.json"));
  ASSERT_EQ(d.size(), 12u);
  int light = 0;
  for (const auto& x : d) {
    light += x.level == NcclLog::light;
    EXPECT_EQ(x.scope.find("nccl-log"), std::string::npos) << x.scope;
    EXPECT_EQ(x.phases.back().phase, "ready");
    EXPECT_EQ(x.phases.front().shift.n_a, 5) << x.scope;
  }
  EXPECT_EQ(light, 6);
  const std::string text = render_log_disturbance(d);
  EXPECT_NE(text.find("light against off"), std::string::npos);
  EXPECT_NE(text.find("full against off"), std::string::npos);
}

}  // namespace coldstart::analysis
