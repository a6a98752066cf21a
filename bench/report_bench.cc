// The report's speed and size on a large run: 1,000 trials x 8 ranks, made from a run recorded on 2x H200 (its
// trials' ranks repeated to 8, its configurations kept), written to a results.json and rendered as `coldstart report`
// does. Target: <= 1 s to render, HTML <= 2 MB.
//   build/report_bench [docs/results/2026-11-29-h200x2/default-logging.json] [trials] [ranks]
// The two halves alone (scripts/perf_check.sh counts the instructions of the second):
//   build/report_bench --make OUT.json [source] [trials] [ranks]    writes the large results.json
//   build/report_bench --render IN.json                              loads and renders it, timed
// And `report --compare` at scale (issue 32): one configuration of the source, its ok trials repeated to `trials` a
// side with 2% jitter per trial, the new run every phase 15% slower; compare and render timed (target: 10,000 x 2 in
// <= 1 s), and the verdict printed (it must be REGRESSION):
//   build/report_bench --compare [trials=10000] [source]
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <random>

#include <nlohmann/json.hpp>

#include "doctor/report.h"
#include "model/summary.h"
#include "report/compare.h"
#include "report/html.h"
#include "report/perfetto.h"
#include "report/table.h"
#include "util/fs.h"
#include "util/json.h"

using namespace coldstart;
using Clock = std::chrono::steady_clock;

namespace {
double since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

void make(const std::string& source, int trials, int ranks, const std::string& out) {
  BenchResults seed = load_bench_results(source);
  BenchResults big = seed;
  big.trials.clear();
  for (int i = 0; i < trials; ++i) {
    TrialResult t = seed.trials[static_cast<size_t>(i) % seed.trials.size()];
    t.index = i;
    std::vector<RankResult> rs;
    for (int r = 0; r < ranks; ++r) {
      RankResult rr = t.ranks[static_cast<size_t>(r) % t.ranks.size()];
      rr.rank = r;
      rs.push_back(std::move(rr));
    }
    t.ranks = std::move(rs);
    big.trials.push_back(std::move(t));
  }
  big.spec.devices.resize(static_cast<size_t>(ranks), "0");
  big.summaries = summarize(big.configs, big.trials, big.context.nccl);
  write_file_atomic(out, dump_json(nlohmann::json(big)));
}

// Loads `in` and renders it as the report does (HTML, Markdown, Perfetto), writing into `dir`.
void render(const std::string& in, const std::string& dir) {
  const std::clock_t cpu0 = std::clock();  // the process's own CPU time: what a busy machine does not inflate
  auto t0 = Clock::now();
  BenchResults r = load_bench_results(in);
  double load_ms = since(t0);
  auto t1 = Clock::now();
  report::HtmlOptions o;
  o.advice.push_back(doctor::masked_advice(r, doctor::facts_of_run(r)));
  std::string html = report::render_html({&r}, o);
  write_file_atomic(dir + "/report.html", html);
  double html_ms = since(t1);
  auto t2 = Clock::now();
  std::string md = report::render_markdown(r);
  double md_ms = since(t2);
  auto t3 = Clock::now();
  std::string perfetto = report::perfetto_trace({&r});
  write_file_atomic(dir + "/timeline.json", perfetto);
  double perfetto_ms = since(t3);
  size_t ranks = r.trials.empty() ? 0 : r.trials.front().ranks.size();
  std::printf("input: %zu trials x %zu ranks, %.1f MB results.json\n", r.trials.size(), ranks,
              std::filesystem::file_size(in) / 1e6);
  std::printf("load %.0f ms; html %.0f ms (%.2f MB); markdown %.1f ms; perfetto %.0f ms (%.1f MB)\n", load_ms, html_ms,
              html.size() / 1e6, md_ms, perfetto_ms, perfetto.size() / 1e6);
  std::printf(
      "all of it (load, html, markdown, perfetto): %.0f ms (target <= 1000 ms; html <= 2 MB); CPU time %.0f ms\n",
      load_ms + html_ms + md_ms + perfetto_ms, 1e3 * static_cast<double>(std::clock() - cpu0) / CLOCKS_PER_SEC);
}
// `trials` ok trials of the source's first configuration (repeated), each trial's phases scaled by `scale` and 2% of
// jitter of its own, so that values do not tie.
BenchResults one_configuration(const BenchResults& seed, int trials, double scale, uint64_t rng_seed) {
  BenchResults r = seed;
  r.trials.clear();
  std::vector<const TrialResult*> ok;
  for (const auto& t : seed.trials)
    if (t.ok() && t.config_id == seed.configs.front().id) ok.push_back(&t);
  std::mt19937_64 rng(rng_seed);
  std::normal_distribution<double> jitter(0, 0.02);
  for (int i = 0; i < trials && !ok.empty(); ++i) {
    TrialResult t = *ok[static_cast<size_t>(i) % ok.size()];
    t.index = i;
    const double f = scale * (1 + jitter(rng));
    for (auto& rank : t.ranks)
      for (auto& p : rank.phases) p.start_ms *= f, p.dur_ms *= f;
    r.trials.push_back(std::move(t));
  }
  r.configs.resize(1);
  r.summaries = summarize(r.configs, r.trials, r.context.nccl);
  return r;
}

int compare_bench(int trials, const std::string& source) {
  const BenchResults seed = load_bench_results(source);
  const BenchResults base = one_configuration(seed, trials, 1.0, 1), now = one_configuration(seed, trials, 1.15, 2);
  const std::clock_t cpu0 = std::clock();
  auto t0 = Clock::now();
  const report::CompareOptions o;
  const report::Comparison c = report::compare(base, now, o);
  const std::string text = report::render_comparison(c, o);
  const double ms = since(t0), cpu_ms = 1e3 * static_cast<double>(std::clock() - cpu0) / CLOCKS_PER_SEC;
  const report::CompareRow* ready = c.rows.empty() ? nullptr : &c.rows.front();
  std::printf("compare: %zu x %zu trials, %zu rows (ready and phases)\n", base.trials.size(), now.trials.size(),
              c.rows.size());
  if (ready)
    std::printf("ready: %+.1f%% [%+.1f%%, %+.1f%%] at %.1f%%, p %.3g: %s\n", ready->change_pct, ready->ci_low_pct,
                ready->ci_high_pct, 100 * ready->confidence, ready->p_value,
                std::string(name_of(ready->verdict)).c_str());
  std::printf("compare and render: %.0f ms (target <= 1000 ms); CPU time %.0f ms; status %d\n", ms, cpu_ms,
              static_cast<int>(c.status()));
  return c.status() == report::CompareStatus::regression ? 0 : 1;
}
}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "--compare") == 0)
    return compare_bench(
        argc > 2 ? std::atoi(argv[2]) : 10000,
        argc > 3 ? argv[3]
                 : std::string(COLDSTART_SOURCE_DIR) + "/docs/results/2026-11-29-h200x2/default-logging.json");
  const bool make_only = argc > 2 && std::strcmp(argv[1], "--make") == 0;
  const bool render_only = argc > 2 && std::strcmp(argv[1], "--render") == 0;
  const int skip = make_only || render_only ? 2 : 0;  // the flag and its file
  std::string source = argc > 1 + skip
                           ? argv[1 + skip]
                           : std::string(COLDSTART_SOURCE_DIR) + "/docs/results/2026-11-29-h200x2/default-logging.json";
  int trials = argc > 2 + skip ? std::atoi(argv[2 + skip]) : 1000,
      ranks = argc > 3 + skip ? std::atoi(argv[3 + skip]) : 8;
  const std::string dir = std::filesystem::temp_directory_path() /
                          ("coldstart-report-bench-" + std::to_string(static_cast<long>(::getpid())));
  std::filesystem::create_directories(dir);
  if (make_only) {
    make(source, trials, ranks, argv[2]);
  } else if (render_only) {
    render(argv[2], dir);
  } else {
    make(source, trials, ranks, dir + "/results.json");
    render(dir + "/results.json", dir);
  }
  std::filesystem::remove_all(dir);
  return 0;
}
