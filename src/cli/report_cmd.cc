// coldstart report: renders bench results (terminal table, Markdown, Perfetto trace, HTML) and compares two runs.
#include <filesystem>
#include <iostream>
#include <memory>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "doctor/report.h"
#include "net/report.h"
#include "report/compare.h"
#include "report/growth.h"
#include "report/html.h"
#include "report/net_html.h"
#include "report/net_text.h"
#include "report/perfetto.h"
#include "report/table.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/json.h"

namespace coldstart::cli {
namespace {

struct ReportFlags {
  std::vector<std::string> files;
  std::string perfetto, html, compare;
  bool markdown = false, json = false, growth = false;
  double threshold = 10;
  int trial = -1;
  const CLI::Option* trial_opt = nullptr;
  const CLI::Option* threshold_opt = nullptr;
};

void write_output(const std::string& path, const std::string& data, const char* flag) {
  try {
    write_file_atomic(path, data);
  } catch (const RuntimeError& e) {
    throw InputError(std::string(flag) + " " + path + ": " + e.what() + "; give a path in a writable folder");
  }
}

// doctor net reports, when the files are that (every one of them: the two kinds do not mix); empty for bench results.
std::vector<net::NetReport> load_net_reports(const std::vector<std::string>& files) {
  std::vector<net::NetReport> out;
  for (const auto& file : files) {
    std::error_code ec;
    if (file != "-" && !std::filesystem::is_regular_file(file, ec)) return {};  // load_bench_results names it
    const std::string text =
        read_input_limited(file, kMaxResultsBytes, "give the results.json bench wrote or a doctor net --json file");
    if (!net::is_net_report_text(text)) {
      if (!out.empty()) throw InputError(file + ": a bench result beside a doctor net report; give one kind");
      return {};
    }
    out.push_back(net::net_report_from_text(text, file));  // the one reader, its bound net/report.h's
  }
  return out;
}

// Binds every flag to its field of `f`, in --help's order.
void add_report_flags(CLI::App& app, ReportFlags& f) {
  app.add_option("files", f.files,
                 "results.json files written by bench, or doctor net --json files ('-': standard input)")
      ->required();
  app.add_option("--perfetto", f.perfetto, "Write a Chrome/Perfetto trace (open in ui.perfetto.dev)");
  app.add_option("--html", f.html, "Write a self-contained HTML report");
  app.add_flag("--markdown", f.markdown, "Print the summary table as GitHub Markdown");
  app.add_flag("--json", f.json,
               "Print the run in the current schema (coldstart.bench/2; older files upgraded, summaries and ready "
               "recomputed): what coldstart.load() reads");
  app.add_option("--compare", f.compare,
                 "Baseline results.json: per configuration and phase, the change and whether "
                 "it is beyond noise; exit status 1 on a regression, 3 when undecided (too few trials, nothing in "
                 "common)");
  app.add_flag("--growth", f.growth,
               "Runs of the same configurations at 3 or more rank counts: how each phase grows with the ranks, its "
               "law and what it predicts at 1k-100k ranks (docs/scale.md)");
  f.threshold_opt = app.add_option("--threshold", f.threshold, "Slowdown (percent) that --compare calls a regression")
                        ->capture_default_str();
  f.trial_opt = app.add_option("--trial", f.trial,
                               "With --html: the trial whose per-rank timeline it draws (default: a slow one)");
}

// A flag that would change nothing is refused rather than ignored, and an output must not overwrite an input.
void check_report_flags(const ReportFlags& f) {
  if (!(f.threshold >= 0 && f.threshold <= 1000))  // NaN fails both
    throw InputError("--threshold " + std::to_string(f.threshold) + ": give a percentage from 0 to 1000");
  if (f.threshold_opt->count() > 0 && f.compare.empty())
    throw InputError("--threshold goes with --compare BASELINE (it sets what the comparison calls a regression)");
  if (f.trial_opt->count() > 0 && f.html.empty())
    throw InputError("--trial goes with --html FILE (it picks the trial whose timeline the HTML draws)");
  if (f.trial_opt->count() > 0 && f.trial < 0)
    throw InputError("--trial " + std::to_string(f.trial) + ": give a trial index, 0 or more");
  if (f.growth && (f.json || !f.compare.empty() || !f.perfetto.empty()))
    throw InputError(
        "--growth: give the runs alone, with --markdown or --html FILE if wanted (not --json, --compare or "
        "--perfetto)");
  if (f.json && (f.files.size() != 1 || f.markdown || !f.compare.empty()))
    throw InputError("--json: give one results file, without --markdown or --compare (stdout holds the JSON alone)");
  std::vector<std::string> inputs = f.files;
  if (!f.compare.empty()) inputs.push_back(f.compare);
  for (const auto& [flag, out] : {std::pair{"--html", f.html}, std::pair{"--perfetto", f.perfetto}}) {
    std::error_code ec;
    for (const auto& in : inputs)
      if (!out.empty() && std::filesystem::equivalent(out, in, ec))
        throw InputError(std::string(flag) + " " + out + ": that is an input file; give another path for the output");
  }
}

// doctor net reports: their text, or --html's page.
int report_net(const ReportFlags& f, const std::vector<net::NetReport>& nets) {
  if (f.markdown || f.json || !f.compare.empty() || !f.perfetto.empty() || f.trial_opt->count() > 0)
    throw InputError(f.files[0] +
                     ": a doctor net report; give --html FILE, or nothing for the text (--compare of two "
                     "network runs is doctor net --compare A B)");
  std::vector<const net::NetReport*> ptrs;
  for (const auto& r : nets) ptrs.push_back(&r);
  if (!f.html.empty()) {
    write_output(f.html, report::render_net_html(ptrs, f.files), "--html");
    std::cout << "html report: " << f.html << "\n";
  } else {
    for (const auto& r : nets) std::cout << report::render_text(r);
  }
  return 0;
}

// --compare's verdict on each run against the baseline: 1 on a regression anywhere, else 3 when undecided.
int compare_runs(const ReportFlags& f, const std::vector<BenchResults>& runs) {
  int status = 0;
  BenchResults base = load_bench_results(f.compare);
  report::CompareOptions o;
  o.threshold_pct = f.threshold;
  for (const auto& r : runs) {
    auto c = report::compare(base, r, o);
    std::cout << report::render_comparison(c, o);
    // A regression anywhere is 1, before an undecided comparison's 3.
    if (c.status() == report::CompareStatus::regression || status == 0) status = static_cast<int>(c.status());
  }
  return status;
}

// Bench results: each output asked for (the table when none is).
int report_runs(const ReportFlags& f) {
  std::vector<BenchResults> runs;
  for (const auto& file : f.files) runs.push_back(load_bench_results(file));
  std::vector<const BenchResults*> ptrs;
  for (const auto& r : runs) ptrs.push_back(&r);
  if (f.trial >= 0 && std::none_of(runs[0].trials.begin(), runs[0].trials.end(),
                                   [&](const TrialResult& t) { return t.index == f.trial; }))
    throw InputError("--trial " + std::to_string(f.trial) + ": " + f.files[0] + " has trials 0–" +
                     std::to_string(runs[0].trials.size() - 1) + "; give one of them");
  if (f.growth) std::cout << report::render_growth(analysis::growth(ptrs, f.files), f.markdown);
  const int status = f.compare.empty() ? 0 : compare_runs(f, runs);
  if (f.markdown && !f.growth)
    for (const auto& r : runs) std::cout << report::render_markdown(r);
  if (f.json) std::cout << dump_json(nlohmann::json(runs[0])) << "\n";
  if (!f.perfetto.empty()) {
    write_output(f.perfetto, report::perfetto_trace(ptrs), "--perfetto");
    std::cout << "perfetto trace: " << f.perfetto << "\n";
  }
  if (!f.html.empty()) {
    report::HtmlOptions o;
    o.trial = f.trial;
    o.names = f.files;
    for (const auto& r : runs) o.advice.push_back(doctor::masked_advice(r, doctor::facts_of_run(r)));
    write_output(f.html, report::render_html(ptrs, o), "--html");
    std::cout << "html report: " << f.html << "\n";
  }
  if (f.compare.empty() && !f.markdown && !f.json && f.perfetto.empty() && f.html.empty() && !f.growth)
    for (const auto& r : runs) std::cout << report::render_table(r);
  return status;
}

}  // namespace

Run add_report(CLI::App& app) {
  auto f = std::make_shared<ReportFlags>();
  add_report_flags(app, *f);
  return [f]() {
    check_report_flags(*f);
    if (std::vector<net::NetReport> nets = load_net_reports(f->files); !nets.empty()) return report_net(*f, nets);
    return report_runs(*f);
  };
}

}  // namespace coldstart::cli
