// Relations that must hold on results recorded on real GPUs (docs/results/): the files load, the stored summaries are
// what the trials give, and every rank's phases lie inside the trial in order, without overlap.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "model/phases.h"
#include "model/result.h"
#include "model/summary.h"
#include "util/fs.h"

namespace coldstart {
namespace {
const std::string kDir = std::string(COLDSTART_SOURCE_DIR) + "/docs/results/2026-11-29-h200x2/";
}

class Recorded : public ::testing::TestWithParam<std::string> {};

// Summaries are recomputed on reading; on the committed files (written in schema /1) they reproduce what was stored.
TEST_P(Recorded, LoadsAndSummariesAreReproducible) {
  BenchResults r = load_bench_results(kDir + GetParam());
  ASSERT_FALSE(r.trials.empty());
  nlohmann::json stored = nlohmann::json::parse(read_file(kDir + GetParam()))["summaries"];
  nlohmann::json now = nlohmann::json(r)["summaries"];
  ASSERT_EQ(stored.size(), now.size());
  for (size_t i = 0; i < now.size(); ++i)
    for (const char* field : {"phases", "busbw_gbps", "lazy_connections", "status_counts", "config_id"}) {
      if (stored[i].contains(field)) {
        EXPECT_EQ(stored[i][field], now[i][field]) << field;
      }
    }
}

TEST_P(Recorded, PhasesAreOrderedDisjointAndInsideTheTrial) {
  BenchResults r = load_bench_results(kDir + GetParam());
  for (const auto& t : r.trials) {
    EXPECT_EQ(t.status, TrialStatus::ok) << t.message;
    EXPECT_GE(t.lab_overhead_ms, 0);
    for (const auto& rank : t.ranks) {
      double end = -1e9;
      for (const auto& p : rank.phases) {
        EXPECT_GE(p.dur_ms, 0) << p.name;
        if (p.name != phase::process_start) {
          EXPECT_GE(p.start_ms + 1e-3, end) << "trial " << t.index << " " << p.name;
        }
        end = p.start_ms + p.dur_ms;
      }
      EXPECT_LE(end, t.wall_ms) << "trial " << t.index;
      EXPECT_EQ(rank.uid_hash, t.ranks.front().uid_hash);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(H200x2, Recorded,
                         ::testing::Values("default.json", "nccl-builds.json", "groups.json", "groups-fresh.json",
                                           "default-logging.json"));

TEST(RecordedFinding, NcclsInitTimingsTotalAgreesWithTheMeasuredInit) {
  // NCCL prints its total with 10 ms resolution; the worker times ncclCommInitRankConfig around the call.
  BenchResults r = load_bench_results(kDir + "default-logging.json");
  int checked = 0;
  for (const auto& t : r.trials)
    for (const auto& rank : t.ranks) {
      if (!rank.nccl || !rank.nccl->init_timings_ms.count("total")) continue;
      double measured = rank.phase(std::string(phase::comm_init))->dur_ms;
      EXPECT_NEAR(rank.nccl->init_timings_ms.at("total"), measured, 15) << "trial " << t.index << " rank " << rank.rank;
      ++checked;
    }
  EXPECT_EQ(checked, 120);  // 60 trials with logging x 2 ranks
}

TEST(RecordedFinding, CumemConnectsLazilyAndCumemOffConnectsInsideInit) {
  BenchResults r = load_bench_results(kDir + "default-logging.json");
  for (const auto& t : r.trials) {
    const Config& c = r.configs[static_cast<size_t>(t.config_id)];
    if (c.nccl_log == NcclLog::off) continue;
    bool cumem_off = c.env.at(0).value.has_value();
    for (const auto& rank : t.ranks) {
      ASSERT_TRUE(rank.nccl);
      EXPECT_EQ(rank.nccl->lazy_connection_count(), cumem_off ? 0 : 24) << c.label();
      int at_init = 0;
      for (const auto& [k, n] : rank.nccl->init_connections) at_init += n;
      EXPECT_EQ(at_init, cumem_off ? 24 : 0) << c.label();
      // cudaDev != nvmlDev marks a process whose CUDA numbering differs from NVML's: rank 1 of isolated (masked) and
      // of remap (reordered, but it sees every GPU). Only the visible device count tells the two apart.
      EXPECT_EQ(rank.nccl->renumbered, c.mode != Mode::shared && rank.rank == 1) << c.label();
      EXPECT_EQ(rank.visible_device_count, c.mode == Mode::isolated ? 1 : 2) << c.label();
    }
  }
}

TEST(RecordedFinding, CumemMakesTheFirstCollectiveSlowInEveryMode) {
  // The mechanism of the field report, as recorded: with cuMem on (NCCL_CUMEM_ENABLE unset) the first collective's
  // host side is far slower than with it off, while steady-state bandwidth is the same.
  BenchResults r = load_bench_results(kDir + "default.json");
  for (Mode m : {Mode::shared, Mode::isolated, Mode::remap}) {
    const ConfigSummary *on = nullptr, *off = nullptr;
    for (const auto& s : r.summaries) {
      const Config& c = r.configs[static_cast<size_t>(s.config_id)];
      if (c.mode != m) continue;
      (c.env.at(0).value ? off : on) = &s;
    }
    ASSERT_TRUE(on && off);
    double first_on = on->phase(std::string(phase::first_enqueue))->median;
    double first_off = off->phase(std::string(phase::first_enqueue))->median;
    EXPECT_GT(first_on, 10 * first_off) << name_of(m);
    EXPECT_NEAR(on->busbw_gbps.median, off->busbw_gbps.median, 0.05 * off->busbw_gbps.median);
  }
}

}  // namespace coldstart
