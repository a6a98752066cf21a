// The fix ranking on the results recorded on 2x H200 (docs/results/2026-11-30-*) and on edited copies of them: each
// fix on the window it can act on, failed fixes never best, ties called ties, hidden shares above 100% explained, and
// why prewarm hid no more said only where it did hide clearly less.
#include <gtest/gtest.h>

#include <filesystem>

#include "analysis/fixes.h"
#include "model/summary.h"
#include "report/html.h"

namespace coldstart::analysis {
namespace {

const std::string kLease1 = std::string(COLDSTART_SOURCE_DIR) + "/docs/results/2026-11-30-h200x2/";
const std::string kLease2 = std::string(COLDSTART_SOURCE_DIR) + "/docs/results/2026-11-30-h200x2-pieces/";

const FixRanking& scope(const std::vector<FixRanking>& rankings, const std::string& starts_with) {
  for (const auto& k : rankings)
    if (k.scope.rfind(starts_with, 0) == 0) return k;
  ADD_FAILURE() << "no scope " << starts_with;
  return rankings.front();
}

const FixOutcome& fix(const FixRanking& k, const std::string& name) {
  for (const auto& f : k.fixes)
    if (f.name() == name) return f;
  ADD_FAILURE() << "no fix " << name << " in " << k.scope;
  return k.fixes.front();
}

std::vector<std::string> committed_fix_runs() {
  std::vector<std::string> out;
  for (const auto& dir : {kLease1, kLease2})
    for (const auto& e : std::filesystem::directory_iterator(dir))
      if (e.path().filename().string().rfind("fixes-", 0) == 0 && e.path().extension() == ".json")
        out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

TEST(FixRanking, EachFixIsMeasuredOnTheWindowItCanActOn) {
  // Isolated, 300 ms of CPU work: prewarm's first collective went from 180 to 0.3 ms, while comm_init (which a
  // warm-up started after init cannot change) moved by noise; its saving is measured after init.
  auto cpu = rank_fixes(load_bench_results(kLease1 + "fixes-nccl-cpu.json"));
  const FixRanking& isolated = scope(cpu, "isolated");
  const FixOutcome& prewarm = fix(isolated, "prewarm");
  EXPECT_EQ(prewarm.window, Window::after_init);
  EXPECT_EQ(fix(isolated, "cumem-off").window, Window::after_meeting);
  EXPECT_EQ(fix(isolated, "channels:8").window, Window::after_meeting);
  EXPECT_EQ(prewarm.saved.n_a, 5);
  EXPECT_EQ(prewarm.saved.n_b, 5);
  // What it saved is the connection cost, within its interval: not comm_init's noise on top.
  EXPECT_LE(prewarm.hidden_low_pct, 100) << format_hidden(prewarm);
  EXPECT_GT(prewarm.hidden_low_pct, 80) << format_hidden(prewarm);
  // split-share acts on the groups, not on the world communicator's init before them.
  auto split = rank_fixes(load_bench_results(kLease1 + "fixes-nccl-split.json"));
  ASSERT_EQ(split.size(), 1u);
  const FixOutcome& share = fix(split[0], "split-share");
  EXPECT_EQ(share.window, Window::groups);
  EXPECT_TRUE(share.tie() || std::abs(share.saved_ms) < 50) << format_saving(share);
  EXPECT_TRUE(split[0].leaders.empty()) << render_fix_rankings(split);
}

TEST(FixRanking, AFixWithFailedTrialsIsSaidFirstAndIsNeverBest) {
  BenchResults r = load_bench_results(kLease1 + "fixes-nccl-cpu.json");
  int hung = 0;
  for (auto& t : r.trials)
    if (r.configs[static_cast<size_t>(t.config_id)].fix.kind == Fix::Kind::prewarm &&
        r.configs[static_cast<size_t>(t.config_id)].mode == Mode::isolated && hung < 4) {
      t.status = TrialStatus::hang;
      ++hung;
    }
  ASSERT_EQ(hung, 4);
  r.summaries = summarize(r.configs, r.trials);
  auto rankings = rank_fixes(r);
  const FixRanking& k = scope(rankings, "isolated");
  ASSERT_FALSE(k.fixes.empty());
  EXPECT_EQ(k.fixes.front().fix.name(), "prewarm");
  EXPECT_TRUE(k.fixes.front().is_failed());
  EXPECT_EQ(k.fixes.front().failures, "4 hang");
  for (size_t i : k.leaders) {
    EXPECT_NE(k.fixes[i].fix.name(), "prewarm");
  }
  std::string text = render_fix_rankings(rankings);
  EXPECT_NE(text.find("FAILED prewarm        4 of 5 trials did not finish (4 hang): not ranked"), std::string::npos)
      << text;
  std::string html = report::render_html({&r}, {});
  EXPECT_EQ(html.find("Best fix measured: <b>prewarm</b>"), std::string::npos);
  size_t failed = html.find("prewarm: 4 of 5 trials did not finish (4 hang)");
  ASSERT_NE(failed, std::string::npos);
  EXPECT_LT(failed, html.find("Best fix measured"));
}

TEST(FixRanking, ASavingWhoseIntervalSpansZeroIsATieNeverBest) {
  // The torch level: prewarm beside 32 GiB copied 256 MiB at a time "saved 1.7 ms" across trials that spread over
  // 800 ms: no difference measured.
  auto rankings = rank_fixes(load_bench_results(kLease2 + "fixes-torch-isolated-both.json"));
  for (const auto& k : rankings)
    for (const auto& f : k.fixes) {
      if (f.tie()) {
        EXPECT_NE(format_saving(f).find("no difference measured"), std::string::npos);
        for (size_t i : k.leaders) {
          EXPECT_NE(&k.fixes[i], &f);
        }
      }
      for (size_t i : k.leaders) {
        EXPECT_TRUE(k.fixes[i].saves());
      }
    }
  // Every committed run: a leader saves beyond noise, and two leaders are said to save alike.
  for (const auto& file : committed_fix_runs()) {
    auto ks = rank_fixes(load_bench_results(file));
    std::string text = render_fix_rankings(ks);
    for (const auto& k : ks) {
      for (size_t i : k.leaders) {
        EXPECT_GT(k.fixes[i].saved.low, 0) << file;
      }
      if (k.leaders.size() > 1) {
        EXPECT_NE(text.find("no single best"), std::string::npos) << file;
      }
    }
  }
}

TEST(FixRanking, AHiddenShareAbove100IsExplainedAndWhyItHidNoMoreOnlyWhenItHidLess) {
  for (const auto& file : committed_fix_runs()) {
    for (const auto& k : rank_fixes(load_bench_results(file)))
      for (const auto& f : k.fixes) {
        if (f.hidden_low_pct > 100 && f.window != Window::groups) {
          EXPECT_FALSE(f.beyond.empty()) << file << " " << f.label << ": " << format_hidden(f);
        }
        if (!f.limit.empty()) {
          EXPECT_LT(f.hidden_high_pct, 100) << file << " " << f.label << ": " << f.limit;
        }
      }
  }
  // Pinned copies at the NCCL level: prewarm hid all of the connection cost; no "why it hid no more" (the warm-up
  // stretched behind the copies, yet the start-up was long enough to hide it).
  auto pinned = rank_fixes(load_bench_results(kLease1 + "fixes-nccl-pinned.json"));
  const FixOutcome& prewarm = fix(pinned.at(0), "prewarm");
  EXPECT_GE(prewarm.hidden_high_pct, 100) << format_hidden(prewarm);
  EXPECT_TRUE(prewarm.limit.empty()) << prewarm.limit;
  // 256 MiB pageable pieces at the NCCL level: it hid clearly less, and the warm-up stretched behind the copies.
  auto pieces = rank_fixes(load_bench_results(kLease2 + "fixes-nccl-pieces.json"));
  bool said = false;
  for (const auto& k : pieces)
    for (const auto& f : k.fixes)
      if (f.fix.kind == Fix::Kind::prewarm && f.limit.find("256 MiB at a time") != std::string::npos) said = true;
  EXPECT_TRUE(said) << render_fix_rankings(pieces);
}

TEST(FixRanking, TheThreeOutputsSayTheSame) {
  BenchResults r = load_bench_results(kLease2 + "fixes-nccl-pieces.json");
  auto rankings = rank_fixes(r);
  std::string text = render_fix_rankings(rankings);
  std::string html = report::render_html({&r}, {});
  for (const auto& k : rankings)
    for (const auto& f : k.fixes) {
      if (f.is_failed()) continue;
      // The saving with its interval and n, and why it hid no more, in both.
      std::string saving = format_saving(f);
      EXPECT_NE(text.find(saving), std::string::npos) << saving;
      EXPECT_NE(html.find(saving), std::string::npos) << saving;
      if (!f.limit.empty()) {
        EXPECT_NE(text.find("why it hid no more: " + f.limit), std::string::npos);
        EXPECT_NE(html.find("hid no more: " + f.limit), std::string::npos) << f.limit;
      }
    }
}

}  // namespace coldstart::analysis

namespace coldstart::analysis {

TEST(FixRanking, TheSameConfigurationOnTwoLeasesGivesOverlappingIntervals) {
  // torch level, isolated, 32 GiB from pinned memory: "hides 70% against 90%" as bare medians; with their intervals
  // the two leases agree.
  auto one = rank_fixes(load_bench_results(kLease1 + "fixes-torch-isolated-pinned.json"));
  auto two = rank_fixes(load_bench_results(kLease2 + "fixes-torch-isolated-pinned.json"));
  const FixOutcome& a = fix(one.at(0), "prewarm");
  const FixOutcome& b = fix(two.at(0), "prewarm");
  EXPECT_LE(a.hidden_low_pct, b.hidden_high_pct) << format_hidden(a) << " / " << format_hidden(b);
  EXPECT_LE(b.hidden_low_pct, a.hidden_high_pct) << format_hidden(a) << " / " << format_hidden(b);
  EXPECT_EQ(a.saved.n_a, 5);
  EXPECT_EQ(b.saved.n_a, 7);
}

}  // namespace coldstart::analysis

namespace coldstart::analysis {

TEST(FixRanking, MoreThanAllOfTheCostIsExplainedFromTheTrials) {
  // pinned copies at the NCCL level, with prewarm's start-up made 100 ms shorter in every trial (and what follows it
  // earlier by as much): it "hides" more than the connection cost, and the outputs say the rest of the window was
  // shorter in its trials.
  BenchResults r = load_bench_results(kLease1 + "fixes-nccl-pinned.json");
  for (auto& t : r.trials) {
    if (r.configs[static_cast<size_t>(t.config_id)].fix.kind != Fix::Kind::prewarm) continue;
    for (auto& rank : t.ranks) {
      const PhaseRecord* s = rank.phase("startup");
      ASSERT_NE(s, nullptr);
      const double end = s->start_ms + s->dur_ms;
      for (auto& p : rank.phases) {
        if (p.name == "startup")
          p.dur_ms -= 100;
        else if (p.name == "prewarm")
          p.dur_ms = std::min(p.dur_ms, end - 100 - p.start_ms);
        else if (p.start_ms >= end - 0.01)
          p.start_ms -= 100;
      }
    }
  }
  r.summaries = summarize(r.configs, r.trials);
  auto rankings = rank_fixes(r);
  const FixOutcome& prewarm = fix(rankings.at(0), "prewarm");
  EXPECT_GT(prewarm.hidden_low_pct, 100) << format_hidden(prewarm);
  EXPECT_NE(prewarm.beyond.find("more than the connection cost: the rest of the window"), std::string::npos)
      << prewarm.beyond;
  EXPECT_TRUE(prewarm.limit.empty());
  EXPECT_NE(render_fix_rankings(rankings).find("it hides " + prewarm.beyond), std::string::npos);
  EXPECT_NE(report::render_html({&r}, {}).find("prewarm hides " + prewarm.beyond), std::string::npos);
}

}  // namespace coldstart::analysis

namespace coldstart::analysis {

// Two patched builds beside one stock release (the series and its candidates, as docs/results/2026-12-06-h200x1-next
// ran them): both are "patched-nccl" against the same default, so each line names its NCCL as the labels do.
TEST(FixRanking, TwoPatchedBuildsOfOneReleaseAreToldApartByTheirNccl) {
  BenchResults r =
      load_bench_results(std::string(COLDSTART_SOURCE_DIR) + "/docs/results/2026-12-01-h200x1-nccl-patch/bench-2.json");
  NcclLibInfo next = r.context.nccl.at(0);  // the patched build, in /tmp/nccl-build/patched/
  ASSERT_NE(next.version.find('+'), std::string::npos);
  next.requested = "/tmp/nccl-build/next/lib/libnccl.so.2";
  next.path = "/tmp/nccl-build/next/lib/libnccl.so.2.30.7";
  const std::string patched = r.context.nccl.at(0).requested;
  r.context.nccl.push_back(next);
  tell_apart(r.context.nccl);
  const size_t configs = r.configs.size(), trials = r.trials.size();
  for (size_t i = 0; i < configs; ++i) {
    if (r.configs[i].nccl_lib != patched) continue;
    Config c = r.configs[i];
    c.id = static_cast<int>(r.configs.size());
    c.nccl_lib = next.requested;
    r.configs.push_back(c);
    for (size_t t = 0; t < trials; ++t)
      if (r.trials[t].config_id == r.configs[i].id) {
        TrialResult copy = r.trials[t];
        copy.config_id = c.id;
        r.trials.push_back(copy);
      }
  }
  r.summaries = summarize(r.configs, r.trials, r.context.nccl);
  const std::string text = render_fix_rankings(rank_fixes(r));
  for (const char* line :
       {"patched-nccl · NCCL 2.30.7+peer-regions (patched)", "patched-nccl · NCCL 2.30.7+peer-regions (next)",
        "patched-nccl+cumem-off · NCCL 2.30.7+peer-regions (next)"})
    EXPECT_NE(text.find(line), std::string::npos) << line << "\n" << text;
  EXPECT_NE(text.find(" cumem-off "), std::string::npos) << "one of its name: said as before\n" << text;
}

TEST(FixRanking, APatchedNcclBesideItsStockReleaseIsRankedAsAFixWithItsCost) {
  // One H200, 2 ranks, NCCL 2.30.7 stock and patched (nccl/) interleaved, cuMem on and off as an --env axis: one
  // default (the stock library, cuMem on) and three fixes against it: the patch, cuMem off, and both together.
  const std::string dir = std::string(COLDSTART_SOURCE_DIR) + "/docs/results/2026-12-01-h200x1-nccl-patch/";
  BenchResults r = load_bench_results(dir + "bench-2.json");
  auto rankings = rank_fixes(r);
  ASSERT_EQ(rankings.size(), 1u) << render_fix_rankings(rankings);
  const FixRanking& on = scope(rankings, "isolated · NCCL_CUMEM_ENABLE=(unset)");
  EXPECT_NE(on.scope.find("NCCL 2.30.7"), std::string::npos) << on.scope;
  EXPECT_EQ(on.scope.find("peer-regions"), std::string::npos) << "the baseline is the stock library: " << on.scope;
  const FixOutcome& patch = fix(on, "patched-nccl");
  EXPECT_EQ(patch.window, Window::after_meeting);
  EXPECT_EQ(patch.saved.n_a, 5);
  EXPECT_TRUE(patch.saves()) << format_saving(patch);
  EXPECT_NE(patch.cost.find("custom NCCL build"), std::string::npos);
  EXPECT_TRUE(fix(on, "cumem-off").saves()) << format_saving(fix(on, "cumem-off"));
  const FixOutcome& both = fix(on, "patched-nccl+cumem-off");
  EXPECT_EQ(both.fix.kind, Fix::Kind::patched_nccl);
  ASSERT_EQ(both.with.size(), 1u);
  EXPECT_EQ(both.with[0].kind, Fix::Kind::cumem_off);
  EXPECT_EQ(both.window, Window::after_meeting);
  EXPECT_NE(both.cost.find("custom NCCL build"), std::string::npos);
  EXPECT_NE(both.cost.find("legacy CUDA IPC"), std::string::npos);
  // With cuMem off there is no lazy connection for the patch to save: the three save alike.
  EXPECT_EQ(on.leaders.size(), 3u) << render_fix_rankings(rankings);
  std::string text = render_fix_rankings(rankings);
  EXPECT_NE(text.find("patched-nccl"), std::string::npos) << text;
  EXPECT_NE(text.find(std::string(patch.cost)), std::string::npos) << text;
  // The torch level of the second design's run: the same verdict from the probe's first barrier.
  auto torch = rank_fixes(load_bench_results(std::string(COLDSTART_SOURCE_DIR) +
                                             "/docs/results/2026-12-01-h200x1-nccl-patch-v2/torch-2.json"));
  ASSERT_EQ(torch.size(), 1u) << render_fix_rankings(torch);
  EXPECT_TRUE(fix(scope(torch, "isolated · NCCL_CUMEM_ENABLE=(unset)"), "patched-nccl").saves());
  // Without the stock release beside it, a patched library is a configuration like any other: cuMem off is ranked
  // on each library, and nothing is the patch.
  std::erase_if(r.context.nccl, [](const NcclLibInfo& lib) { return lib.version.find('+') == std::string::npos; });
  auto apart = rank_fixes(r);
  EXPECT_EQ(apart.size(), 2u) << render_fix_rankings(apart);
  for (const auto& k : apart)
    for (const auto& f : k.fixes) {
      EXPECT_EQ(f.name(), "cumem-off");
    }
}

// The patch's switch as an --env axis beside cuMem (the growth runs: one patched library, NCCL_P2P_PEER_REGION=0,1
// and NCCL_CUMEM_ENABLE=,0): the switch off is NCCL's own connect path, the default; the switch on is the patch.
TEST(FixRanking, ThePatchsSwitchOnIsThePatchAgainstItsSwitchOff) {
  BenchResults r = load_bench_results(std::string(COLDSTART_SOURCE_DIR) +
                                      "/docs/results/2026-12-05-h100x1-growth/growth-8/results.json");
  auto rankings = rank_fixes(r);
  ASSERT_EQ(rankings.size(), 1u) << render_fix_rankings(rankings);
  const FixRanking& k = rankings[0];
  EXPECT_NE(k.scope.find("NCCL_P2P_PEER_REGION=0 · NCCL_CUMEM_ENABLE=(unset)"), std::string::npos) << k.scope;
  ASSERT_EQ(k.fixes.size(), 3u);
  EXPECT_TRUE(fix(k, "patched-nccl").saves()) << format_saving(fix(k, "patched-nccl"));
  EXPECT_NE(fix(k, "patched-nccl").label.find("NCCL_P2P_PEER_REGION=1 · NCCL_CUMEM_ENABLE=(unset)"), std::string::npos);
  EXPECT_NE(fix(k, "cumem-off").label.find("NCCL_P2P_PEER_REGION=0 · NCCL_CUMEM_ENABLE=0"), std::string::npos);
  EXPECT_NE(fix(k, "patched-nccl+cumem-off").label.find("NCCL_P2P_PEER_REGION=1 · NCCL_CUMEM_ENABLE=0"),
            std::string::npos);
}

// A --fix whose variables the run recorded in its configuration's env (every run since the env held them) is ranked
// against the configuration without them: its own variables are not part of the default.
TEST(FixRanking, AFixsOwnVariablesAreNotPartOfItsScope) {
  BenchResults r = load_bench_results(kLease1 + "fixes-nccl-cpu.json");
  for (auto& c : r.configs)
    for (const auto& e : c.fix.env()) c.env.push_back(e);
  const auto before = rank_fixes(load_bench_results(kLease1 + "fixes-nccl-cpu.json"));
  const auto after = rank_fixes(r);
  ASSERT_EQ(after.size(), before.size());
  for (size_t i = 0; i < after.size(); ++i) {
    EXPECT_EQ(after[i].fixes.size(), before[i].fixes.size()) << after[i].scope;
  }
  EXPECT_EQ(render_fix_rankings(after), render_fix_rankings(before));
}

}  // namespace coldstart::analysis
