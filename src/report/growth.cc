#include "report/growth.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <string_view>

#include <fmt/format.h>

#include "report/html.h"
#include "report/table.h"
#include "util/stats.h"
#include "util/strings.h"

namespace coldstart::report {
namespace {

using analysis::Growth;
using analysis::GrowthPoint;

constexpr const char* kGrowthNote =
    "each value: the slowest rank's per trial (the job waits for it), median over trials; law: ms = a + b·g(n), the "
    "one AICc prefers (constant within 2 of the best), its residual on a log scale; n^k: a free power law's exponent; "
    "predicted: the law carried to that many ranks, with the 95% interval of a bootstrap over the trials (not over "
    "the choice of law), an extrapolation (docs/scale.md)";

double median_of(const GrowthPoint& p) { return summarize(p.values).median; }

std::vector<std::string> configs_of(const std::vector<Growth>& all) {
  std::vector<std::string> out;
  for (const Growth& g : all)
    if (std::find(out.begin(), out.end(), g.config) == out.end()) out.push_back(g.config);
  return out;
}

std::vector<int> rank_counts(const std::vector<const Growth*>& shown) {
  std::vector<int> out;
  for (const Growth* g : shown)
    for (const GrowthPoint& p : g->points)
      if (std::find(out.begin(), out.end(), p.ranks) == out.end()) out.push_back(p.ranks);
  std::sort(out.begin(), out.end());
  return out;
}

std::string law_text(const Growth& g) {
  const analysis::LawFit& best = g.fits.front();
  return std::string(name_of(best.law)) + (g.ambiguous ? " (or " + std::string(name_of(g.fits[1].law)) + ")" : "");
}

// The fitted law itself: "1.08 s + 23.2 ms·n²".
std::string fit_text(const analysis::LawFit& fit) {
  static constexpr std::pair<analysis::Law, const char*> kTerms[] = {
      {analysis::Law::linear, "·n"}, {analysis::Law::n_log_n, "·n log2 n"}, {analysis::Law::quadratic, "·n²"}};
  std::string out = format_duration_ms(fit.fixed_ms);
  for (const auto& [law, term] : kTerms)
    if (fit.law == law && fit.scale_ms > 0) out += " + " + format_duration_ms(fit.scale_ms) + term;
  return out;
}

std::string interval_text(const analysis::Interval& i, std::string (*format)(double)) {
  return fmt::format("{} [{}–{}]", format(i.estimate), format(i.low), format(i.high));
}

std::string exponent_text(double k) { return fmt::format("{:.2f}", k); }

// One configuration's rows: each value's medians by rank count, law, residual, exponent and predictions.
std::pair<std::vector<std::string>, std::vector<std::vector<std::string>>> growth_rows(
    const std::vector<const Growth*>& shown) {
  const std::vector<int> counts = rank_counts(shown);
  std::vector<std::string> header{"value"};
  for (int n : counts) header.push_back(fmt::format("{} ranks", n));
  header.insert(header.end(), {"law", "fit", "residual", "n^k [95%]"});
  for (int64_t n : analysis::kPredictedRanks) header.push_back(fmt::format("{}k ranks (predicted)", n / 1000));
  std::vector<std::vector<std::string>> rows;
  for (const Growth* g : shown) {
    std::vector<std::string> row{g->phase};
    for (int n : counts) {
      auto p = std::find_if(g->points.begin(), g->points.end(), [&](const GrowthPoint& x) { return x.ranks == n; });
      row.push_back(p == g->points.end() ? "–" : format_duration_ms(median_of(*p)));
    }
    row.insert(row.end(), {law_text(*g), fit_text(g->fits.front()), fmt::format("{:.2f}", g->fits.front().residual),
                           interval_text(g->exponent, exponent_text)});
    for (const analysis::Prediction& p : g->predictions) row.push_back(interval_text(p.ms, format_duration_ms));
    rows.push_back(std::move(row));
  }
  return {header, rows};
}

// A decade of the y axis: "0.1 ms" .. "100 ms", then "1 s", "10 s", "100 s" (a log axis reads best in one unit a side).
std::string decade_text(double ms) { return ms < 1e3 ? format_ms(ms) + " ms" : fmt::format("{:g} s", ms / 1e3); }

// The values a chart draws (the table lists every shown value): the cold start, the phases on its critical path that
// grow, and NCCL's own split of its init between hosts (bootstrap, allgathers, connections) and on the GPU (kernels).
bool charted(const std::string& value) {
  static constexpr std::string_view kCharted[] = {"ready",           "cuda_context",     "comm_init",
                                                  "first_enqueue",   "first_wait",       "init.bootstrap",
                                                  "init.allgathers", "init.connections", "init.kernels"};
  return std::find(std::begin(kCharted), std::end(kCharted), value) != std::end(kCharted);
}

// A log–log chart of one configuration's values: each value's medians (whiskers: min to max over trials) and its
// law's line over the measured ranks.
std::string log_log_chart(const std::vector<const Growth*>& shown) {
  static const char* colours[] = {"#4e79a7", "#e15759", "#59a14f", "#f28e2b", "#b07aa1",
                                  "#76b7b2", "#edc948", "#9c755f", "#ff9da7", "#bab0ac"};
  double xmin = 1e300, xmax = 0, ymin = 1e300, ymax = 0;
  for (const Growth* g : shown)
    for (const GrowthPoint& p : g->points)
      for (double v : p.values) {
        xmin = std::min(xmin, double(p.ranks)), xmax = std::max(xmax, double(p.ranks));
        ymin = std::min(ymin, std::max(v, 0.1)), ymax = std::max(ymax, v);
      }
  const double lx0 = std::floor(std::log2(xmin)), lx1 = std::max(std::ceil(std::log2(xmax)), lx0 + 1);
  const double ly0 = std::floor(std::log10(ymin)), ly1 = std::max(std::ceil(std::log10(ymax)), ly0 + 1);
  const double l = 70, w = 560, top = 10, h = 300;
  auto px = [&](double ranks) { return l + w * (std::log2(ranks) - lx0) / (lx1 - lx0); };
  auto py = [&](double ms) { return top + h - h * (std::log10(std::max(ms, 0.1)) - ly0) / (ly1 - ly0); };
  std::string s = fmt::format(
      R"(<svg role="img" aria-label="growth with the ranks" width="{0:.0f}" height="{1:.0f}" viewBox="0 0 {0:.0f} {1:.0f}">)",
      l + w + 330, top + h + 40);
  for (double e = lx0; e <= lx1; ++e)
    s += fmt::format(
        R"(<line class="grid" x1="{0:.1f}" x2="{0:.1f}" y1="{1:.0f}" y2="{2:.0f}"/><text class="muted" x="{0:.1f}" y="{3:.0f}" text-anchor="middle">{4:.0f}</text>)",
        px(std::exp2(e)), top, top + h, top + h + 14, std::exp2(e));
  for (double e = ly0; e <= ly1; ++e)
    s += fmt::format(
        R"(<line class="grid" x1="{0:.0f}" x2="{1:.0f}" y1="{2:.1f}" y2="{2:.1f}"/><text class="muted" x="{3:.0f}" y="{4:.1f}" text-anchor="end">{5}</text>)",
        l, l + w, py(std::pow(10, e)), l - 6, py(std::pow(10, e)) + 4, decade_text(std::pow(10, e)));
  s += fmt::format(R"(<text class="muted" x="{:.0f}" y="{:.0f}" text-anchor="middle">ranks (log scale)</text>)",
                   l + w / 2, top + h + 32);
  for (size_t i = 0; i < shown.size(); ++i) {
    const Growth& g = *shown[i];
    const char* colour = colours[i % std::size(colours)];
    for (const GrowthPoint& p : g.points) {
      const Stats st = summarize(p.values);
      s += fmt::format(
          R"(<line x1="{0:.1f}" x2="{0:.1f}" y1="{1:.1f}" y2="{2:.1f}" stroke="{3}"/><circle cx="{0:.1f}" cy="{4:.1f}" r="3.5" fill="{3}"><title>{5} at {6} ranks: {7} (n={8})</title></circle>)",
          px(p.ranks), py(st.min), py(st.max), colour, py(st.median), html_escape(g.phase), p.ranks,
          html_escape(format_duration_ms(st.median)), st.n);
    }
    std::string path;
    const double a = g.points.front().ranks, b = g.points.back().ranks;
    for (int step = 0; step <= 40; ++step) {
      const double n = a * std::pow(b / a, step / 40.0);
      path += fmt::format("{}{:.1f},{:.1f} ", step ? "L" : "M", px(n), py(g.fits.front().at(n)));
    }
    s += fmt::format(R"(<path d="{}" fill="none" stroke="{}" stroke-width="1.5" stroke-dasharray="5,3"/>)", path,
                     colour);
    const double ly = top + 12 + 16 * static_cast<double>(i);
    s += fmt::format(
        R"(<circle cx="{:.0f}" cy="{:.1f}" r="4" fill="{}"/><text x="{:.0f}" y="{:.1f}">{} · {} · n^{:.2f}</text>)",
        l + w + 20, ly - 4, colour, l + w + 30, ly, html_escape(g.phase), html_escape(law_text(g)),
        g.exponent.estimate);
  }
  return "<div class=\"scroll\">" + s + "</svg></div>";
}

std::string html_table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows) {
  std::string s = "<table><tr>";
  for (const auto& h : header) s += "<th>" + html_escape(h) + "</th>";
  s += "</tr>";
  for (const auto& row : rows) {
    s += "<tr>";
    for (const auto& c : row) s += "<td>" + html_escape(c) + "</td>";
    s += "</tr>";
  }
  return s + "</table>";
}

}  // namespace

std::string format_duration_ms(double ms) {
  const double s = ms / 1e3;
  if (ms < 1e3) return format_ms(ms) + " ms";
  if (s < 60) return fmt::format("{:.1f} s", s);
  if (s < 3600) return fmt::format("{:.1f} min", s / 60);
  if (s < 86400) return fmt::format("{:.1f} h", s / 3600);
  return fmt::format("{:.1f} d", s / 86400);
}

std::vector<const Growth*> shown_growth(const std::vector<Growth>& all, const std::string& config) {
  std::vector<const Growth*> out;
  for (const Growth& g : all) {
    if (g.config != config || g.phase == "init.total") continue;
    if (g.phase == "ready" || median_of(g.points.back()) >= kShownFloorMs) out.push_back(&g);
  }
  return out;
}

std::string render_growth(const std::vector<Growth>& all, bool markdown) {
  std::string out;
  for (const std::string& config : configs_of(all)) {
    const auto [header, rows] = growth_rows(shown_growth(all, config));
    out += (markdown ? "**Growth: " + config + "**\n\n" : "growth: " + config + "\n");
    out += (markdown ? render_markdown_rows(header, rows) : render_rows(header, rows)) + "\n";
  }
  return out + kGrowthNote + (markdown ? ".\n" : "\n");
}

std::string growth_html(const std::vector<Growth>& all) {
  std::string out;
  for (const std::string& config : configs_of(all)) {
    const std::vector<const Growth*> shown = shown_growth(all, config);
    std::vector<const Growth*> drawn;
    std::copy_if(shown.begin(), shown.end(), std::back_inserter(drawn),
                 [](const Growth* g) { return charted(g->phase); });
    const auto [header, rows] = growth_rows(shown);
    out += "<h3>" + html_escape(config) + "</h3>" + log_log_chart(drawn) + html_table(header, rows);
  }
  return out.empty() ? out : out + "<p class=\"muted\">" + html_escape(kGrowthNote) + ".</p>";
}

}  // namespace coldstart::report
