// One self-contained HTML file (no scripts, fonts or network): the summary table, stacked phase bars per
// configuration, per-rank timelines of one trial, the cold start / bandwidth / memory trade-off, a scaling view when
// the runs span GPU or channel counts, and the advice. Charts are SVG drawn here (docs/report.md says why).
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "doctor/rules.h"
#include "model/result.h"

namespace coldstart::report {

struct HtmlOptions {
  int trial = -1;  // the trial whose per-rank timelines are drawn (of the first run); -1: chosen (see html.cc)
  std::vector<std::string> names;                    // one per run (its file); shown as headings when several
  std::vector<std::vector<doctor::Finding>> advice;  // per run
};

std::string render_html(const std::vector<const BenchResults*>& runs, const HtmlOptions& o);

// What every page this folder writes shares: text escaped for HTML, and the head with the one style sheet (light and
// dark themes) and the page's title as its heading.
std::string html_escape(std::string_view s);
std::string page_head(std::string_view title);

// The trial drawn when none is chosen: the first ok trial of the configuration whose first collective is slowest
// (the cold start the report is about); -1 when no trial is ok.
int default_trial(const BenchResults& r);

}  // namespace coldstart::report
