// The report's speed and size on a large run: 1,000 trials x 8 ranks, made from a run recorded on 2x H200 (its
// trials' ranks repeated to 8, its configurations kept), written to a results.json and rendered as `coldstart report`
// does. Target: <= 1 s to render, HTML <= 2 MB.
//   build/report_bench [docs/results/2026-11-29-h200x2/default-logging.json] [trials] [ranks]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "doctor/report.h"
#include "model/summary.h"
#include "report/html.h"
#include "report/perfetto.h"
#include "report/table.h"
#include "util/fs.h"
#include "util/json.h"

using namespace coldstart;
using Clock = std::chrono::steady_clock;

namespace {
double since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }
}  // namespace

int main(int argc, char** argv) {
  std::string source =
      argc > 1 ? argv[1] : std::string(COLDSTART_SOURCE_DIR) + "/docs/results/2026-11-29-h200x2/default-logging.json";
  int trials = argc > 2 ? std::atoi(argv[2]) : 1000, ranks = argc > 3 ? std::atoi(argv[3]) : 8;
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
  const std::string dir = std::filesystem::temp_directory_path() / "coldstart-report-bench";
  std::filesystem::create_directories(dir);
  write_file_atomic(dir + "/results.json", dump_json(nlohmann::json(big)));

  auto t0 = Clock::now();
  BenchResults r = load_bench_results(dir + "/results.json");
  double load_ms = since(t0);
  auto t1 = Clock::now();
  report::HtmlOptions o;
  o.advice.push_back(doctor::masked_advice(r, doctor::facts_of_run(r)));
  std::string html = report::render_html({&r}, o);
  write_file_atomic(dir + "/report.html", html);
  double html_ms = since(t1);
  auto t2 = Clock::now();
  std::string md = render_markdown(r);
  double md_ms = since(t2);
  auto t3 = Clock::now();
  std::string perfetto = report::perfetto_trace({&r});
  write_file_atomic(dir + "/timeline.json", perfetto);
  double perfetto_ms = since(t3);
  std::printf("input: %d trials x %d ranks, %.1f MB results.json\n", trials, ranks,
              std::filesystem::file_size(dir + "/results.json") / 1e6);
  std::printf("load %.0f ms; html %.0f ms (%.2f MB); markdown %.1f ms; perfetto %.0f ms (%.1f MB)\n", load_ms, html_ms,
              html.size() / 1e6, md_ms, perfetto_ms, perfetto.size() / 1e6);
  std::printf("all of it (load, html, markdown, perfetto): %.0f ms (target <= 1000 ms; html <= 2 MB)\n",
              load_ms + html_ms + md_ms + perfetto_ms);
  std::filesystem::remove_all(dir);
  return 0;
}
