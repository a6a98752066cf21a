// The renderers on results recorded on 2x / 4x H200 (docs/results/), compare on synthetic runs with known shifts and
// with pure noise, and report's one-line errors. Some 700 lines in one file: the renderers share their recorded runs
// and helpers, which a split would load and define twice.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>

#include <nlohmann/json.hpp>

#include "doctor/report.h"
#include "model/summary.h"
#include "model/test_runs.h"
#include "report/compare.h"
#include "report/html.h"
#include "report/perfetto.h"
#include "report/table.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/random.h"
#include "util/run_for_test.h"
#include "util/stats.h"

namespace coldstart::report {
namespace {
using nlohmann::json;

const std::string kResults = std::string(COLDSTART_SOURCE_DIR) + "/docs/results/";
using coldstart::test_cli::Output;
using coldstart::test_cli::run;

// Schema-level checks of Chrome trace events: every event has a phase; spans have numeric ts and non-negative dur;
// on each thread, spans nest (a span that starts inside another ends inside it).
void expect_valid_trace(const json& trace) {
  ASSERT_TRUE(trace.contains("traceEvents"));
  std::map<std::pair<int, int>, std::vector<std::pair<double, double>>> spans;
  for (const auto& e : trace["traceEvents"]) {
    ASSERT_TRUE(e.contains("ph") && e["ph"].is_string()) << e;
    ASSERT_TRUE(e.contains("pid") && e["pid"].is_number_integer()) << e;
    std::string ph = e["ph"];
    ASSERT_TRUE(ph == "X" || ph == "M" || ph == "i") << e;
    if (ph == "X") {
      ASSERT_TRUE(e["ts"].is_number() && e["dur"].is_number()) << e;
      ASSERT_GE(e["dur"].get<double>(), 0) << e;
      ASSERT_TRUE(e["name"].is_string());
      spans[{e["pid"].get<int>(), e["tid"].get<int>()}].push_back(
          {e["ts"].get<double>(), e["ts"].get<double>() + e["dur"].get<double>()});
    }
  }
  for (auto& [key, list] : spans) {
    std::sort(list.begin(), list.end(),
              [](auto a, auto b) { return a.first < b.first || (a.first == b.first && a.second > b.second); });
    std::vector<double> open;  // ends of the spans enclosing the current one
    for (const auto& [s, e] : list) {
      while (!open.empty() && open.back() <= s + 1e-6) open.pop_back();
      if (!open.empty()) {
        EXPECT_LE(e, open.back() + 1e-6) << "span [" << s << ", " << e << "] crosses its parent's end on pid "
                                         << key.first;
      }
      open.push_back(e);
    }
  }
}

TEST(Perfetto, RecordedRunIsValidNamedAndNestsNcclInitInCommInit) {
  BenchResults r = load_bench_results(kResults + "2026-11-29-h200x2/default-logging.json");
  json t = json::parse(perfetto_trace({&r}));
  expect_valid_trace(t);
  int tracks = 0, init_parts = 0;
  std::string a_name;
  for (const auto& e : t["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "process_name") {
      ++tracks;
      if (a_name.empty()) a_name = e["args"]["name"];
    }
    if (e["ph"] == "X" && e["cat"] == "nccl") ++init_parts;
  }
  size_t ranks = 0;
  for (const auto& tr : r.trials) ranks += tr.ranks.size();
  EXPECT_EQ(static_cast<size_t>(tracks), ranks);  // one track per rank per trial
  EXPECT_GT(init_parts, 0);                       // NCCL's init timings, from its log
  EXPECT_EQ(a_name.rfind("trial 0 · ", 0), 0u) << a_name;
  EXPECT_NE(a_name.find(" · rank "), std::string::npos) << a_name;
  EXPECT_NE(a_name.find("bus 0000:00:0"), std::string::npos) << a_name;
}

TEST(Perfetto, TracedRunsGetTheirCudaCallsAndTrialsDoNotOverlap) {
  BenchResults r = load_bench_results(kResults + "2026-11-29-h200x4/gpus4-trace.json");
  json t = json::parse(perfetto_trace({&r}));
  expect_valid_trace(t);
  int cupti = 0;
  std::map<int, std::pair<double, double>> per_pid;  // the extent of each track
  for (const auto& e : t["traceEvents"]) {
    if (e["ph"] != "X") continue;
    if (e["cat"] == "cupti") ++cupti;
    auto& ext = per_pid.try_emplace(e["pid"].get<int>(), 1e300, -1e300).first->second;
    ext.first = std::min(ext.first, e["ts"].get<double>());
    ext.second = std::max(ext.second, e["ts"].get<double>() + e["dur"].get<double>());
  }
  EXPECT_GT(cupti, 0);
  // Tracks of different trials do not overlap in time: trials are laid out one after another.
  const size_t nranks = r.trials.front().ranks.size();
  for (int pid = 1; pid + static_cast<int>(nranks) <= static_cast<int>(per_pid.size()); pid += static_cast<int>(nranks))
    EXPECT_LE(per_pid[pid].second, per_pid[pid + static_cast<int>(nranks)].first);
}

// Every results file committed under docs/results, of either schema, loads and renders in every form.
TEST(Recorded, EveryCommittedResultsFileLoadsAndRenders) {
  int files = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(kResults)) {
    if (e.path().extension() != ".json") continue;
    json j = json::parse(read_file(e.path().string()), nullptr, false);
    if (!j.is_object() || !j.value("schema", "").starts_with("coldstart.bench/")) continue;
    ++files;
    SCOPED_TRACE(e.path().string());
    BenchResults r = bench_results_from_json(j, e.path().string());
    EXPECT_FALSE(render_table(r).empty());
    EXPECT_FALSE(render_markdown(r).empty());
    EXPECT_NE(render_html({&r}, {}).find("</html>"), std::string::npos);
    EXPECT_FALSE(json::parse(perfetto_trace({&r}), nullptr, false).is_discarded());
    // Cold start is known wherever a trial got through its first collective.
    for (const auto& s : r.summaries) {
      if (s.phase("first_wait") || s.phase("barrier_wait")) {
        EXPECT_GT(s.ready.n, 0) << s.label;
      }
    }
  }
  EXPECT_GE(files, 20);
}

TEST(Markdown, OneRowPerConfiguration) {
  BenchResults r = load_bench_results(kResults + "2026-11-29-h200x2/default.json");
  std::string md = render_markdown(r);
  EXPECT_EQ(md.rfind("| configuration | trials |", 0), 0u) << md;
  EXPECT_NE(md.find("\n|---|---:|"), std::string::npos);
  size_t rows = 0;
  for (size_t i = 0; (i = md.find("\n| ", i)) != std::string::npos; ++i) ++rows;
  EXPECT_EQ(rows, r.summaries.size());
  EXPECT_NE(md.find("| isolated · NCCL_CUMEM_ENABLE=0 |"), std::string::npos);
}

TEST(Html, SelfContainedWithEverySection) {
  BenchResults a = load_bench_results(kResults + "2026-11-29-h200x4/gpus2.json");
  BenchResults b = load_bench_results(kResults + "2026-11-29-h200x4/gpus4.json");
  BenchResults c = load_bench_results(kResults + "2026-11-29-h200x4/channels2.json");
  HtmlOptions o;
  for (const auto* r : {&a, &b, &c}) o.advice.push_back(doctor::masked_advice(*r, doctor::facts_of_run(*r)));
  std::string h = render_html({&a, &b, &c}, o);
  for (const char* forbidden : {"<script", "src=", "href=", "@import", "url(", "http://", "https://"})
    EXPECT_EQ(h.find(forbidden), std::string::npos) << forbidden;
  for (const char* section :
       {"<h2>Summary</h2>", "<h2>Phases per configuration</h2>", "<h2>Per-rank timeline of one trial</h2>",
        "<h2>Cold start vs bandwidth vs memory</h2>", "<h2>Advice</h2>", "<h3>By GPU count</h3>",
        "<h3>By channel count</h3>", "prefers-color-scheme: dark", "Masked ranks with cuMem on"})
    EXPECT_NE(h.find(section), std::string::npos) << section;
  // The same phase names as the JSON.
  EXPECT_NE(h.find("first_enqueue"), std::string::npos);
  EXPECT_NE(h.find("comm_init"), std::string::npos);
}

TEST(Html, DefaultTrialIsAnOkTrialOfTheSlowestFirstCollective) {
  BenchResults r = load_bench_results(kResults + "2026-11-29-h200x2/default.json");
  int t = default_trial(r);
  ASSERT_GE(t, 0);
  const TrialResult& tr = r.trials[static_cast<size_t>(t)];
  EXPECT_EQ(tr.status, TrialStatus::ok);
  EXPECT_EQ(r.configs[static_cast<size_t>(tr.config_id)].mode, Mode::isolated);  // masked: the slowest
}

// A synthetic run: one configuration, `trials` trials of `ranks` ranks. Each trial draws its own level ~ N(mean,
// sd_trial) that all its ranks share (ranks of one trial move together: one slow node, one slow driver call), and each
// rank adds N(0, sd_rank).
BenchResults synthetic(double mean, double sd_trial, int trials, uint64_t seed, int ranks = 2, double sd_rank = -1) {
  BenchResults r;
  Config c;
  c.mode = Mode::isolated;
  r.configs.push_back(c);
  std::mt19937_64 rng(seed);
  // The defaults: independent ranks (no shared level), as the first tests of compare assumed.
  const bool shared = sd_rank >= 0;
  std::normal_distribution<double> level(mean, shared ? sd_trial : 0.0), noise(0, shared ? sd_rank : sd_trial);
  for (int i = 0; i < trials; ++i) {
    TrialResult t;
    t.index = i;
    t.status = TrialStatus::ok;
    const double l = level(rng);
    for (int k = 0; k < ranks; ++k) {
      RankResult rr;
      rr.rank = k;
      const double init = l + noise(rng), first = (l + noise(rng)) / 3;
      rr.phases.push_back({"comm_init", 0, init});
      rr.phases.push_back({"first_enqueue", init, first});
      rr.phases.push_back({"first_wait", init + first, 0.1});
      t.ranks.push_back(rr);
    }
    r.trials.push_back(t);
  }
  return r;
}

TEST(Table, ShowsEveryConfigurationWithMedianAndSpread) {
  BenchResults r = synthetic(400, 0, 3, 1);
  r.trials[2].status = TrialStatus::hang;
  r.summaries = summarize(r.configs, r.trials);
  std::string t = render_table(r);
  EXPECT_NE(t.find("isolated"), std::string::npos) << t;
  EXPECT_NE(t.find("2/3"), std::string::npos) << t;
  EXPECT_NE(t.find("400 [400–400]"), std::string::npos) << t;
  EXPECT_NE(t.find("comm_init ms"), std::string::npos) << t;
  EXPECT_EQ(format_ms_spread(Stats{}), "–");
}

// NCCL's init spent mostly loading its kernels (NVIDIA/nccl#1646: kernels 52.45 of 55 s): the table says what it could
// be; a normal load (some hundred ms) or a larger part elsewhere says nothing.
TEST(Table, SaysWhatALongInitKernelsCouldBe) {
  BenchResults r;
  r.summaries = {test::summary_with("isolated", {{"init.kernels", 52450}, {"init.connections", 900}})};
  const std::string note = kernels_note(r);
  EXPECT_EQ(note.rfind("isolated: init.kernels 52450 ms, the largest part of comm_init", 0), 0u) << note;
  EXPECT_NE(note.find("`coldstart doctor` checks"), std::string::npos) << note;
  r.summaries[0].phases[0].stats.median = 230;
  EXPECT_EQ(kernels_note(r), "");
  r.summaries[0].phases[0].stats.median = 1500;
  r.summaries[0].phases[1].stats.median = 2000;
  EXPECT_EQ(kernels_note(r), "");
  // One cold start and warm ones (docs/results/2026-12-06-h100x1-casebook-jit: 249110 ms compiling, then 620 ms from
  // the JIT cache): the median is a warm one's, and the note still speaks, with the spread and what it means.
  Stats warm_and_cold;
  warm_and_cold.n = 3;
  warm_and_cold.median = 630;
  warm_and_cold.min = 620;
  warm_and_cold.max = 249110;
  r.summaries[0].phases[0].stats = warm_and_cold;
  r.summaries[0].phases[1].stats.median = 10;
  const std::string cached = kernels_note(r);
  EXPECT_EQ(cached.rfind("isolated: init.kernels 630 ms, the largest part of comm_init", 0), 0u) << cached;
  EXPECT_NE(cached.find("620 to 249110 ms over its rank-samples: the slow ones compiled, the fast ones found the JIT "
                        "cache a slow one filled"),
            std::string::npos)
      << cached;
}

// 32 ranks on one H200 with NCCL built for sm_90 (docs/results/2026-12-06-h200x1-next: init.kernels 1915 ms, 470 to
// 2030 over the ranks): the run read the library's SASS, so the note says the load was the GPU's sharing, not a JIT
// and not a JIT cache; a library without SASS for the GPU, or a JIT forced by --env, is a JIT; a library the run
// could not read leaves both causes open.
TEST(Table, TellsAJitFromRanksSharingAGpuByTheLibrarysSass) {
  BenchResults r;
  r.spec.ranks_per_gpu = 32;
  Config c;
  c.nccl_lib = "/cache/stock/libnccl.so.2";
  r.configs = {c};
  r.context.nccl = {{c.nccl_lib, "/cache/stock/libnccl.so.2.30.7", "2.30.7", {"90"}, "sass"}};
  r.summaries = {test::summary_with("isolated", {{"init.kernels", 1915}, {"init.connections", 760}})};
  r.summaries[0].phases[0].stats.min = 470;
  r.summaries[0].phases[0].stats.max = 2030;
  const std::string shared = kernels_note(r);
  EXPECT_NE(
      shared.find("NCCL's kernels loaded — from its SASS (sm_90), no JIT; 32 ranks share each GPU and load "
                  "theirs at once, each waiting on the others: the GPU's sharing, not NCCL's (docs/scale.md); 470 "
                  "to 2030 ms over its rank-samples\n"),
      std::string::npos)
      << shared;
  EXPECT_EQ(shared.find("JIT cache"), std::string::npos) << shared;
  EXPECT_EQ(shared.find("doctor"), std::string::npos) << shared;

  r.context.nccl[0].kernels = "ptx";
  const std::string jit = kernels_note(r);
  EXPECT_NE(jit.find("a JIT: the driver compiles the library's PTX in each process's first load (it has no SASS for "
                     "this GPU); 470 to 2030 ms over its rank-samples: the slow ones compiled"),
            std::string::npos)
      << jit;
  EXPECT_NE(jit.find("`coldstart doctor` checks"), std::string::npos) << jit;

  r.context.nccl[0].kernels = "sass";
  r.configs[0].env = {{"CUDA_FORCE_PTX_JIT", "1"}};
  EXPECT_NE(kernels_note(r).find("(CUDA_FORCE_PTX_JIT=1)"), std::string::npos) << kernels_note(r);

  r.configs[0].env.clear();
  r.context.nccl[0].kernels.clear();
  const std::string unknown = kernels_note(r);
  EXPECT_NE(unknown.find("a JIT of its PTX when the library has no SASS for the GPU, or 32 ranks sharing each GPU "
                         "loading theirs at once; 470 to 2030 ms over its rank-samples; `coldstart doctor` checks"),
            std::string::npos)
      << unknown;
}

// The torch probe's store calls (per phase they fell in) survive the results file and give the table's line: the
// store's share of each phase, medians over rank-samples; a run without them says nothing of the store.
TEST(Table, SaysTheRendezvousStoresShareOfThePhasesItsCallsFellIn) {
  BenchResults r = synthetic(400, 0, 3, 1);
  for (auto& t : r.trials)
    for (auto& rank : t.ranks) rank.store_calls["comm_init"] = CallTally{6, 10.0 + rank.rank};
  r.summaries = summarize(r.configs, r.trials);
  const nlohmann::json written = r;
  const BenchResults back = bench_results_from_text(written.dump(), "round trip");
  ASSERT_EQ(back.trials[0].ranks[1].store_calls.at("comm_init").count, 6);
  EXPECT_EQ(back.trials[0].ranks[1].store_calls.at("comm_init").ms, 11.0);
  const std::string note = store_note(back);
  EXPECT_NE(
      note.find(": the rendezvous store (torch's TCPStore, each rank's own calls): comm_init 10.5 ms of 400 ms\n"),
      std::string::npos)
      << note;
  EXPECT_NE(render_table(back).find(note), std::string::npos);
  EXPECT_NE(render_html({&back}, {}).find("<p class=\"meta\">isolated: the rendezvous store (torch's TCPStore"),
            std::string::npos);
  EXPECT_EQ(store_note(synthetic(400, 0, 3, 1)), "");
}

// bench --trace's calls per phase before the first collective survive the results file, are checked like the other
// call tallies, and give one line a phase: its median beside its calls' medians, largest first; the first
// collective's line follows them.
TEST(Table, SaysWhichCudaCallsFilledInitAndTheFirstCollective) {
  BenchResults r = synthetic(400, 0, 3, 1);
  for (auto& t : r.trials)
    for (auto& rank : t.ranks) {
      rank.phase_calls["comm_init"] = {{"kernel_loading", CallTally{40, 250.0 + rank.rank}},
                                       {"peer_query", CallTally{9, 0.2}}};
      rank.first_collective_calls["launch"] = CallTally{1, 30.0};
    }
  r.summaries = summarize(r.configs, r.trials);
  const nlohmann::json written = r;
  const BenchResults back = bench_results_from_text(written.dump(), "round trip");
  ASSERT_EQ(back.trials[0].ranks[1].phase_calls.at("comm_init").at("kernel_loading").count, 40);
  EXPECT_EQ(back.summaries[0].phase_calls.at("comm_init").at("kernel_loading").median, 250.5);
  const std::string table = render_table(back);
  const size_t init = table.find("isolated: comm_init 400 ms; in the rank's process: kernel_loading 250\n");
  const size_t first = table.find("isolated: first collective 133 ms; in the rank's process: launch 30.0\n");
  EXPECT_NE(init, std::string::npos) << table;
  EXPECT_NE(first, std::string::npos) << table;
  EXPECT_LT(init, first);
  EXPECT_EQ(table.find("peer_query"), std::string::npos) << "calls under 0.5 ms are left out";
  const std::string timeline = perfetto_trace({&back});
  EXPECT_NE(timeline.find(R"("name":"kernel_loading ×40","cat":"cupti")"), std::string::npos)
      << timeline.substr(0, 2000);
  EXPECT_NE(timeline.find(R"("name":"launch ×1","cat":"cupti")"), std::string::npos);
  nlohmann::json bad = written;
  bad["trials"][0]["ranks"][0]["phase_calls"]["comm_init"]["kernel_loading"]["ms"] = -1.5;
  try {
    bench_results_from_text(bad.dump(), "bad.json");
    ADD_FAILURE() << "a negative time in phase_calls was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("trials[0].ranks[0].phase_calls.comm_init.kernel_loading.ms: -1.5"),
              std::string::npos)
        << e.what();
  }
}

// The recorded log A/B (2x H200, --nccl-log off,light,full): the HTML report's verdict says what the log cost, as
// bench's last lines do; a run without the log off beside it says nothing of the log.
TEST(Html, TheVerdictSaysWhatTheLogCostWhereTheRunHasItOff) {
  const std::string dir = std::string(COLDSTART_SOURCE_DIR) + "/docs/results/2026-11-29-h200x2/";
  const BenchResults logged = load_bench_results(dir + "default-logging.json");
  const std::string html = render_html({&logged}, {});
  const size_t verdict = html.find("<h2>Verdict</h2>"), summary = html.find("<h2>Summary</h2>");
  const size_t log = html.find("the NCCL log's own cost, light against off");
  ASSERT_NE(log, std::string::npos);
  EXPECT_LT(verdict, log);
  EXPECT_LT(log, summary);
  const BenchResults plain = load_bench_results(dir + "default.json");
  EXPECT_EQ(render_html({&plain}, {}).find("the NCCL log's own cost"), std::string::npos);
}

TEST(Compare, MannWhitneyIsExactForFewValuesAndNormalBeyond) {
  // scipy.stats.mannwhitneyu([1..5], [6..10], method="exact"): p = 2/252
  EXPECT_NEAR(mann_whitney_p({1, 2, 3, 4, 5}, {6, 7, 8, 9, 10}), 2.0 / 252, 1e-9);
  EXPECT_NEAR(mann_whitney_p({1, 2, 3}, {1, 2, 3}), 1.0, 1e-9);
  // With ties, the normal approximation with tie and continuity correction (U = 1, three values tied at 5).
  EXPECT_NEAR(mann_whitney_p({1, 2, 3, 4, 5, 5}, {5, 7, 8, 9, 10}), 0.012866, 1e-5);
  // 3 against 3 cannot reach p < 0.05, however far apart: 2/20.
  EXPECT_NEAR(smallest_p(3, 3), 0.1, 1e-12);
  EXPECT_LT(smallest_p(4, 4), 0.05);
}

TEST(Compare, HodgesLehmannIntervalHasTheRanksOfTheUDistribution) {
  // 5 against 5: 25 differences; P(U <= 2) = 4/252 is the largest tail within 2.5%, so the interval is the 3rd to
  // the 23rd difference at 1 - 8/252 = 96.8%.
  Shift s = hodges_lehmann({0, 1, 2, 3, 4}, {10, 11, 12, 13, 14});
  EXPECT_DOUBLE_EQ(s.estimate, 10);
  EXPECT_TRUE(s.reached);
  EXPECT_NEAR(s.confidence, 1 - 8.0 / 252, 1e-12);
  EXPECT_DOUBLE_EQ(s.low, 7);  // differences 6, 7, 7, 8, ...
  EXPECT_DOUBLE_EQ(s.high, 13);
  EXPECT_FALSE(s.spans_zero());
  // 3 against 3: the widest interval (all differences) reaches 90%.
  Shift few = hodges_lehmann({0, 1, 2}, {10, 11, 12});
  EXPECT_FALSE(few.reached);
  EXPECT_NEAR(few.confidence, 0.9, 1e-12);
  EXPECT_DOUBLE_EQ(few.low, 8);
  EXPECT_DOUBLE_EQ(few.high, 12);
  // Holm: the smallest times 3, then 2, then 1, kept monotone.
  auto adj = holm({0.01, 0.04, 0.03});
  EXPECT_NEAR(adj[0], 0.03, 1e-12);
  EXPECT_NEAR(adj[2], 0.06, 1e-12);
  EXPECT_NEAR(adj[1], 0.06, 1e-12);
}

// The shift and its interval as hodges_lehmann computed them before it selected: every difference formed and sorted,
// the interval's k found by walking the U distribution up from 0. The reference for selection (n1 + n2 > 40: below,
// each mann_whitney_cdf builds the exact distribution again).
Shift brute_force_shift(const std::vector<double>& a, const std::vector<double>& b, double level = 0.95) {
  std::vector<double> d;
  for (double x : a)
    for (double y : b) d.push_back(y - x);
  std::sort(d.begin(), d.end());
  const int na = static_cast<int>(a.size()), nb = static_cast<int>(b.size());
  const auto N = static_cast<int64_t>(d.size());
  Shift s;
  s.estimate = percentile(d, 50);
  const double tail = (1 - level) / 2;
  int64_t k = 0;
  s.reached = mann_whitney_cdf(na, nb, 0) <= tail;
  while (s.reached && k + 1 < (N + 1) / 2 && mann_whitney_cdf(na, nb, k + 1) <= tail) ++k;
  s.low = d[static_cast<size_t>(k)];
  s.high = d[static_cast<size_t>(N - k - 1)];
  s.confidence = 1 - 2 * mann_whitney_cdf(na, nb, k);
  return s;
}

std::vector<double> sorted_differences(const std::vector<double>& a, const std::vector<double>& b) {
  std::vector<double> d;
  for (double x : a)
    for (double y : b) d.push_back(y - x);
  std::sort(d.begin(), d.end());
  return d;
}

// ms values as the lab writes them (three decimals), around `mean`, with a long right tail.
std::vector<double> ms_sample(std::mt19937_64& rng, int n, double mean, double sd) {
  std::lognormal_distribution<double> tail(0, 0.6);
  std::normal_distribution<double> noise(0, sd);
  std::vector<double> v;
  for (int i = 0; i < n; ++i) v.push_back(std::round((mean + noise(rng) + sd * tail(rng)) * 1000) / 1000);
  return v;
}

TEST(Compare, KthDifferenceIsTheDifferenceSortingThemAllPutsThere) {
  std::mt19937_64 rng(7);
  for (auto [n1, n2] :
       std::vector<std::pair<int, int>>{{1, 1}, {1, 9}, {3, 3}, {7, 30}, {30, 17}, {300, 200}, {123, 377}}) {
    std::vector<double> a = ms_sample(rng, n1, 900, 40), b = ms_sample(rng, n2, 950, 60);
    const std::vector<double> d = sorted_differences(a, b);
    std::sort(a.begin(), a.end());
    std::sort(b.begin(), b.end());
    const auto N = static_cast<int64_t>(d.size());
    std::vector<int64_t> ks;
    if (N <= 1000) {
      for (int64_t k = 0; k < N; ++k) ks.push_back(k);
    } else {
      for (int64_t k = 0; k < N; k += 997) ks.push_back(k);
      for (int64_t k : {int64_t{1}, N / 2 - 1, N / 2, N / 2 + 1, N - 2, N - 1}) ks.push_back(k);
    }
    for (int64_t k : ks) ASSERT_EQ(kth_difference(a, b, k), d[static_cast<size_t>(k)]) << n1 << "x" << n2 << " k " << k;
  }
}

TEST(Compare, LargeSamplesGiveExactlyWhatSortingEveryDifferenceGave) {
  std::mt19937_64 rng(11);
  for (auto [n1, n2] :
       std::vector<std::pair<int, int>>{{21, 20}, {1, 60}, {41, 45}, {250, 250}, {123, 377}, {400, 90}}) {
    for (double shift : {0.0, 5.0, 40.0}) {
      const std::vector<double> a = ms_sample(rng, n1, 900, 40), b = ms_sample(rng, n2, 900 + shift, 40);
      for (double level : {0.9, 0.95, 0.99}) {
        const Shift got = hodges_lehmann(a, b, level), want = brute_force_shift(a, b, level);
        EXPECT_EQ(got.estimate, want.estimate) << n1 << "x" << n2;
        EXPECT_EQ(got.low, want.low) << n1 << "x" << n2 << " level " << level;
        EXPECT_EQ(got.high, want.high) << n1 << "x" << n2 << " level " << level;
        EXPECT_EQ(got.confidence, want.confidence) << n1 << "x" << n2;
        EXPECT_EQ(got.reached, want.reached) << n1 << "x" << n2;
        EXPECT_EQ(got.p_value, mann_whitney_p(a, b));
      }
    }
  }
  // The interval's rank, by bisection over the normal approximation, is the one the walk from 0 finds, at every size
  // just past the exact distribution and beyond.
  for (int n1 : {1, 2, 5, 20, 21, 40, 41, 64, 100})
    for (int n2 : {20, 21, 39, 40, 41, 77, 150}) {
      if (n1 + n2 <= 40) continue;
      std::vector<double> a, b;
      for (int i = 0; i < n1; ++i) a.push_back(i);
      for (int j = 0; j < n2; ++j) b.push_back(0.5 + 0.75 * j);
      for (double level : {0.8, 0.9, 0.95, 0.99}) {
        const Shift got = hodges_lehmann(a, b, level), want = brute_force_shift(a, b, level);
        EXPECT_EQ(got.low, want.low) << n1 << "x" << n2 << " level " << level;
        EXPECT_EQ(got.high, want.high) << n1 << "x" << n2 << " level " << level;
        EXPECT_EQ(got.confidence, want.confidence) << n1 << "x" << n2 << " level " << level;
      }
    }
}

// Issue 32: from 1,024 values a side, n1 n2 (n1 + n2 + 1) overflowed an int; the U distribution came out NaN, no
// interval reached 95%, and a clear regression was "too few trials to decide".
TEST(Compare, ElevenHundredTrialsASideOfAClearRegressionAreARegression) {
  EXPECT_NEAR(mann_whitney_cdf(1100, 1100, 1100 * 1100 / 2), 0.5, 1e-3);
  EXPECT_LT(mann_whitney_cdf(1100, 1100, 500000), 1e-6);
  const BenchResults base = synthetic(400, 20, 1100, 1), slower = synthetic(480, 20, 1100, 2);  // +20%
  const Comparison c = compare(base, slower);
  ASSERT_FALSE(c.rows.empty());
  EXPECT_EQ(c.status(), CompareStatus::regression) << render_comparison(c, {});
  const CompareRow& ready = c.rows[0];
  ASSERT_TRUE(ready.headline());
  EXPECT_EQ(ready.n_base, 1100);
  EXPECT_EQ(ready.verdict, Verdict::regression);
  EXPECT_GE(ready.confidence, 0.95);
  EXPECT_NEAR(ready.change_pct, 20, 2);
  EXPECT_GT(ready.ci_low_pct, 17);
  EXPECT_LT(ready.ci_high_pct, 23);
  EXPECT_NE(render_comparison(c, {}).find("result: REGRESSION"), std::string::npos);
  // The same with nothing shifted is a pass, not undecided.
  EXPECT_EQ(compare(base, synthetic(400, 20, 1100, 3)).status(), CompareStatus::pass);
  // And at 10,000 a side the shift and its interval come from selection, not 10^8 differences.
  std::mt19937_64 rng(3);
  const Shift big = hodges_lehmann(ms_sample(rng, 10000, 400, 20), ms_sample(rng, 10000, 480, 20));
  EXPECT_TRUE(big.reached);
  EXPECT_GT(big.low, 75);
  EXPECT_LT(big.high, 85);
}

// Ties (ready in clock ticks of 10 ms under an outside launcher): selection still gives the sorted differences' own
// elements, the interval holds the estimate, and swapping the samples mirrors the interval exactly.
TEST(Compare, TiedSamplesSelectTheSortedDifferencesAndMirror) {
  std::mt19937_64 rng(5);
  std::uniform_int_distribution<int> tick(0, 6), size(1, 70);
  for (int round = 0; round < 60; ++round) {
    const int n1 = round < 50 ? size(rng) : 150 + round, n2 = round < 50 ? size(rng) : 260 - round;
    std::vector<double> a, b;
    for (int i = 0; i < n1; ++i) a.push_back(900 + 10 * tick(rng));
    for (int j = 0; j < n2; ++j) b.push_back(910 + 10 * tick(rng) + (round % 3 == 0 ? 0.001 : 0));
    const std::vector<double> d = sorted_differences(a, b);
    std::vector<double> sa = a, sb = b;
    std::sort(sa.begin(), sa.end());
    std::sort(sb.begin(), sb.end());
    const auto N = static_cast<int64_t>(d.size());
    for (int64_t k = 0; k < N; k += std::max<int64_t>(1, N / 500))
      ASSERT_EQ(kth_difference(sa, sb, k), d[static_cast<size_t>(k)]) << n1 << "x" << n2 << " k " << k;
    const Shift s = hodges_lehmann(a, b), back = hodges_lehmann(b, a);
    EXPECT_LE(s.low, s.estimate);
    EXPECT_LE(s.estimate, s.high);
    EXPECT_EQ(back.low, -s.high) << n1 << "x" << n2;
    EXPECT_EQ(back.high, -s.low) << n1 << "x" << n2;
    EXPECT_EQ(back.confidence, s.confidence);
    if (n1 + n2 > 40) {
      const Shift want = brute_force_shift(a, b);
      EXPECT_EQ(s.estimate, want.estimate) << n1 << "x" << n2;
      EXPECT_EQ(s.low, want.low) << n1 << "x" << n2;
      EXPECT_EQ(s.high, want.high) << n1 << "x" << n2;
    }
  }
}

bool flagged(const CompareRow& r) { return r.verdict != Verdict::no_change && r.verdict != Verdict::too_few; }

TEST(Compare, AKnownShiftIsARegressionAndAnImprovementIsNot) {
  BenchResults base = synthetic(400, 20, 10, 1);
  BenchResults slower = synthetic(480, 20, 10, 2);  // +20%
  Comparison c = compare(base, slower);
  ASSERT_EQ(c.rows.size(), 4u);  // ready, comm_init, first_enqueue, first_wait (the same 0.1 ms in both)
  for (const auto& row : c.rows) {
    if (row.phase == "first_wait") {
      EXPECT_EQ(row.verdict, Verdict::no_change);
      continue;
    }
    EXPECT_EQ(row.verdict, row.headline() ? Verdict::regression : Verdict::slower) << row.phase;
    EXPECT_NEAR(row.change_pct, 20, 6);
    EXPECT_GT(row.ci_low_pct, 10);
    EXPECT_LT(row.p_value, 0.001);
    EXPECT_EQ(row.n_base, 10);
  }
  EXPECT_TRUE(c.regression());
  EXPECT_EQ(c.status(), CompareStatus::regression);
  Comparison back = compare(slower, base);
  EXPECT_FALSE(back.regression());
  EXPECT_EQ(back.status(), CompareStatus::pass);
  EXPECT_EQ(back.rows[0].verdict, Verdict::improvement);
  // A smaller shift than the threshold is reported, not failed.
  CompareOptions loose;
  loose.threshold_pct = 30;
  Comparison within = compare(base, slower, loose);
  EXPECT_FALSE(within.regression());
  EXPECT_EQ(within.rows[0].verdict, Verdict::slower_within_threshold);
}

TEST(Compare, PureNoiseIsNotFlagged) {
  int n = 0;
  for (uint64_t seed = 10; seed < 30; ++seed) {
    Comparison c = compare(synthetic(400, 20, 8, seed), synthetic(400, 20, 8, seed + 1000));
    for (const auto& row : c.rows) n += flagged(row);
  }
  EXPECT_LE(n, 3);  // 80 rows, ready at 5% each
}

// Eight ranks that move together are one sample, not eight: with nothing shifted between the runs, a low threshold
// and 40 seeds, compare flags about alpha of them (rank-samples flagged 24 of 40 in this set-up).
TEST(Compare, RanksOfOneTrialMovingTogetherAreNotTakenForASignificantChange) {
  CompareOptions low;
  low.threshold_pct = 1;
  low.floor_ms = 0;
  int n = 0, rows = 0;
  for (uint64_t seed = 0; seed < 40; ++seed) {
    Comparison c = compare(synthetic(400, 30, 6, seed, 8, 5), synthetic(400, 30, 6, seed + 1000, 8, 5), low);
    for (const auto& row : c.rows) {
      ++rows;
      n += flagged(row);
      EXPECT_EQ(row.n_base, 6);  // one value per trial
    }
  }
  EXPECT_EQ(rows, 160);
  EXPECT_LE(n, 10) << "of " << rows;
  // A real shift in the same set-up is still a regression.
  Comparison shifted = compare(synthetic(400, 30, 10, 1, 8, 5), synthetic(500, 30, 10, 2, 8, 5));
  EXPECT_TRUE(shifted.regression());
}

TEST(Compare, ConfigurationsAreMatchedByLabelAndNothingInCommonIsNotPassed) {
  BenchResults base = synthetic(400, 20, 5, 1), now = synthetic(400, 20, 5, 2);
  now.configs[0].env.push_back({"NCCL_CUMEM_ENABLE", "0"});
  Comparison c = compare(base, now);
  EXPECT_TRUE(c.rows.empty());
  EXPECT_EQ(c.only_in_base, std::vector<std::string>{"isolated"});
  EXPECT_EQ(c.only_in_new, std::vector<std::string>{"isolated · NCCL_CUMEM_ENABLE=0"});
  EXPECT_EQ(c.status(), CompareStatus::undecided);
  std::string text = render_comparison(c, {});
  EXPECT_NE(text.find("NOTHING COMPARED"), std::string::npos) << text;
  EXPECT_EQ(text.find("no regression"), std::string::npos) << text;
}

// The first n ok trials of each configuration; with add_ms, every rank's first collective that much slower.
BenchResults cut(BenchResults r, int n, double add_ms = 0) {
  std::map<int, int> kept;
  std::vector<TrialResult> trials;
  for (auto& t : r.trials) {
    if (!t.ok() || kept[t.config_id]++ >= n) continue;
    for (auto& rank : t.ranks) {
      bool after = false;
      for (auto& p : rank.phases) {
        if (after) p.start_ms += add_ms;
        if (p.name == "first_wait") p.dur_ms += add_ms, after = true;
      }
    }
    trials.push_back(t);
  }
  r.trials = trials;
  r.summaries = summarize(r.configs, r.trials);
  return r;
}

TEST(Compare, ThreeTrialsASideOfAThreeTimesSlowerRunAreNotPassed) {
  const BenchResults full = load_bench_results(kResults + "2026-11-30-h200x2/default.json");
  Comparison c = compare(cut(full, 3), cut(full, 3, 2000));
  ASSERT_FALSE(c.rows.empty());
  EXPECT_NE(c.status(), CompareStatus::pass);
  for (const auto& row : c.rows)
    if (row.headline()) {
      EXPECT_EQ(row.verdict, Verdict::too_few) << row.config;
      EXPECT_GT(row.change_pct, 150) << row.config;
      EXPECT_EQ(row.n_base, 3);
    }
  std::string text = render_comparison(c, {});
  EXPECT_NE(text.find("UNDECIDED: too few trials"), std::string::npos) << text;
  EXPECT_NE(text.find("3/3"), std::string::npos) << text;
  // Five a side decide it.
  Comparison five = compare(cut(full, 5), cut(full, 5, 2000));
  EXPECT_EQ(five.status(), CompareStatus::regression);
  for (const auto& row : five.rows) {
    if (row.headline()) {
      EXPECT_EQ(row.verdict, Verdict::regression) << row.config;
    }
  }
  // And the same run against itself is no regression.
  EXPECT_EQ(compare(cut(full, 5), cut(full, 5)).status(), CompareStatus::pass);
}

TEST(Compare, TheSameConfigurationOnTwoLeasesIsNotARegression) {
  // ready moved by some 10% at p 0.33; a few phases of under a millisecond (connect, unique_id) moved a tenth of one.
  Comparison c = compare(load_bench_results(kResults + "2026-11-30-h200x2/fixes-torch-isolated-pinned.json"),
                         load_bench_results(kResults + "2026-11-30-h200x2-pieces/fixes-torch-isolated-pinned.json"));
  ASSERT_EQ(c.only_in_new.size(), 0u);
  EXPECT_EQ(c.status(), CompareStatus::pass) << render_comparison(c, {});
  for (const auto& row : c.rows) {
    if (row.phase == "connect" || row.phase == "unique_id") {
      EXPECT_FALSE(flagged(row)) << row.config << row.phase;
    }
    if (!row.headline()) {
      EXPECT_GE(row.p_adjusted, row.p_value);
    }
  }
}

TEST(CliReport, CompareExitsOneOnARegressionThreeWhenUndecidedAndWritesEveryOutput) {
  const std::string dir = "/tmp/coldstart-report-" + random_hex(6);
  std::filesystem::create_directories(dir);
  // The recorded run against itself: no regression.
  std::string f = kResults + "2026-11-29-h200x2/default.json";
  Output same =
      run("report " + f + " --compare " + f + " --markdown --html " + dir + "/r.html --perfetto " + dir + "/p.json");
  EXPECT_EQ(same.status, 0) << same.text;
  EXPECT_NE(same.text.find("result: no regression"), std::string::npos);
  EXPECT_TRUE(std::filesystem::file_size(dir + "/r.html") > 1000);
  EXPECT_TRUE(json::parse(std::ifstream(dir + "/p.json")).contains("traceEvents"));
  // A copy with comm_init 30% slower everywhere, and what follows it later by as much.
  json j = json::parse(std::ifstream(f));
  for (auto& t : j["trials"])
    for (auto& r : t["ranks"]) {
      double added = 0;
      for (auto& p : r["phases"]) {
        p["start_ms"] = p["start_ms"].get<double>() + added;
        if (p["name"] == "comm_init") {
          added = p["dur_ms"].get<double>() * 0.3;
          p["dur_ms"] = p["dur_ms"].get<double>() + added;
        }
      }
    }
  std::ofstream(dir + "/slower.json") << j.dump();
  Output slower = run("report " + dir + "/slower.json --compare " + f);
  EXPECT_EQ(slower.status, 1) << slower.text;
  EXPECT_NE(slower.text.find("REGRESSION"), std::string::npos);
  // Three trials a side, three times slower: undecided, status 3, not a pass.
  const BenchResults full = load_bench_results(kResults + "2026-11-30-h200x2/default.json");
  std::ofstream(dir + "/base3.json") << json(cut(full, 3)).dump();
  std::ofstream(dir + "/slow3.json") << json(cut(full, 3, 2000)).dump();
  Output few = run("report " + dir + "/slow3.json --compare " + dir + "/base3.json");
  EXPECT_EQ(few.status, 3) << few.text;
  EXPECT_NE(few.text.find("UNDECIDED"), std::string::npos) << few.text;
  // Files with no configuration in common: status 3.
  Output none = run("report " + f + " --compare " + kResults + "2026-11-30-h200x2/fixes-nccl-split.json");
  EXPECT_EQ(none.status, 3) << none.text;
  EXPECT_NE(none.text.find("NOTHING COMPARED"), std::string::npos) << none.text;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace coldstart::report
