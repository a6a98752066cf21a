#include "report/html.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>

#include "analysis/disturbance.h"
#include "analysis/fixes.h"
#include "model/phases.h"
#include "model/summary.h"
#include "report/growth.h"
#include "report/table.h"
#include "util/strings.h"

namespace coldstart::report {
namespace {

std::string esc(std::string_view s) { return html_escape(s); }

const char* phase_colour(std::string_view p) {
  const PhaseInfo* info = phase_info(p);
  return info ? info->colour : "#79706e";
}

const char* kStyle = R"(
:root { color-scheme: light dark; --fg: #1b1f24; --bg: #ffffff; --muted: #5b6570; --grid: #d0d7de; --card: #f6f8fa; }
@media (prefers-color-scheme: dark) {
  :root { --fg: #e6edf3; --bg: #0d1117; --muted: #9aa5b1; --grid: #30363d; --card: #161b22; }
}
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg); background: var(--bg);
       margin: 2em auto; max-width: 1200px; padding: 0 1em; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 2em; border-bottom: 1px solid var(--grid); }
table { border-collapse: collapse; font-variant-numeric: tabular-nums; margin: .5em 0; }
th, td { padding: .25em .6em; border-bottom: 1px solid var(--grid); text-align: right; white-space: nowrap; }
th:first-child, td:first-child { text-align: left; }
.meta { color: var(--muted); } .card { background: var(--card); padding: .8em 1em; border-radius: 6px; margin: .8em 0; }
svg text { fill: var(--fg); font: 12px system-ui, sans-serif; } svg .muted { fill: var(--muted); }
svg line.grid { stroke: var(--grid); } .legend span { display: inline-block; margin-right: 1em; }
.legend i { display: inline-block; width: .9em; height: .9em; margin-right: .3em; vertical-align: -0.1em; }
.warn { color: #e15759; } .scroll { overflow-x: auto; }
td.ok { color: #2e8540; } td.broken { color: #e15759; font-weight: 600; } td.caution { color: #c77c02; }
table.left th, table.left td { text-align: left; } td.summary { white-space: normal; } td.cell-bad { background: #e1575933; }
)";

// Round axis maxima to 1, 2 or 5 times a power of ten.
double nice_max(double v) {
  if (v <= 0) return 1;
  double p = std::pow(10, std::floor(std::log10(v)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (v <= m * p) return m * p;
  return 10 * p;
}

std::string x_axis(double x0, double width, double max_value, double y_top, double y_bottom, const char* unit) {
  std::string s;
  for (int i = 0; i <= 5; ++i) {
    double v = max_value * i / 5, x = x0 + width * i / 5;
    s += fmt::format(R"(<line class="grid" x1="{:.1f}" x2="{:.1f}" y1="{:.1f}" y2="{:.1f}"/>)", x, x, y_top, y_bottom);
    s += fmt::format(R"(<text class="muted" x="{:.1f}" y="{:.1f}" text-anchor="middle">{} {}</text>)", x, y_bottom + 14,
                     format_ms(v), unit);
  }
  return s;
}

// Five horizontal grid lines from 0 to max_value, labelled at the left of the plot.
std::string y_axis(double x0, double width, double max_value, double top, double height, const char* unit) {
  std::string s;
  for (int i = 0; i <= 4; ++i) {
    double y = top + height - height * i / 4;
    s += fmt::format(
        R"(<line class="grid" x1="{:.0f}" x2="{:.0f}" y1="{:.1f}" y2="{:.1f}"/><text class="muted" x="{:.0f}" y="{:.1f}" text-anchor="end">{} {}</text>)",
        x0, x0 + width, y, y, x0 - 6, y + 4, format_ms(max_value * i / 4), unit);
  }
  return s;
}

std::string legend(const std::vector<std::string>& phases) {
  std::string s = R"(<div class="legend">)";
  for (const auto& p : phases)
    s += fmt::format(R"(<span><i style="background:{}"></i>{}</span>)", phase_colour(p), esc(p));
  return s + "</div>";
}

// Lines of text, each a paragraph in the meta style ("" for none).
std::string meta_lines(const std::string& text) {
  std::string out;
  for (const auto& line : split(text, '\n'))
    if (!line.empty()) out += "<p class=\"meta\">" + esc(line) + "</p>";
  return out;
}

std::string summary_table(const BenchResults& r) {
  SummaryRows sr = summary_rows(r);
  std::string s = "<div class=\"scroll\"><table><tr>";
  for (const auto& h : sr.header) s += "<th>" + esc(h) + "</th>";
  s += "</tr>";
  for (const auto& row : sr.rows) {
    s += "<tr>";
    for (const auto& c : row) s += "<td>" + esc(c) + "</td>";
    s += "</tr>";
  }
  // The table's notes as the terminal prints them: a long init.kernels, the rendezvous store's share of its phases.
  return s + "</table></div><p class=\"meta\">" + esc(kTableNote) + "</p>" +
         meta_lines(kernels_note(r) + store_note(r));
}

// The critical path of a trial: its slowest rank's phases up to its first collective done (ready), with the time
// between them (none: phases are back to back on the rank's main thread). Background phases are left out.
std::vector<const PhaseRecord*> critical_path(const TrialResult& t) {
  std::vector<const PhaseRecord*> out;
  int r = t.slowest_rank();
  if (r < 0) return out;
  for (const auto& p : t.ranks[static_cast<size_t>(r)].phases) {
    const PhaseInfo* info = phase_info(p.name);
    if (info && info->kind == PhaseKind::background) continue;
    out.push_back(&p);
    if (info && info->completes_first) break;
  }
  return out;
}

// Per configuration, each phase of the critical path (the slowest rank of each trial, process start to first
// collective done) stacked at its median over trials, with the min–max of ready as a whisker.
std::string stacked_bars(const BenchResults& r) {
  struct Bar {
    std::string label;
    std::vector<std::pair<std::string, double>> parts;
    Stats ready;
  };
  std::vector<Bar> bars;
  std::vector<std::string> present;
  double max_v = 0;
  for (const auto& s : r.summaries) {
    Bar b{s.label, {}, s.ready};
    std::vector<std::string> order;
    std::map<std::string, std::vector<double>> per_phase;
    for (const auto& t : r.trials) {
      if (t.config_id != s.config_id || !t.ok()) continue;
      for (const PhaseRecord* p : critical_path(t)) {
        if (!per_phase.count(p->name)) order.push_back(p->name);
        per_phase[p->name].push_back(p->dur_ms);
      }
    }
    std::sort(order.begin(), order.end(), [](const auto& a, const auto& c) { return phase_order(a) < phase_order(c); });
    double sum = 0;
    for (const auto& name : order) {
      double median = summarize(per_phase[name]).median;
      b.parts.emplace_back(name, median);
      sum += median;
      if (std::find(present.begin(), present.end(), name) == present.end()) present.push_back(name);
    }
    max_v = std::max({max_v, sum, b.ready.n ? b.ready.max : 0.0});
    bars.push_back(std::move(b));
  }
  if (max_v <= 0) return "<p>No configuration has an ok trial that reached its first collective.</p>";
  std::sort(present.begin(), present.end(),
            [](const auto& a, const auto& c) { return phase_order(a) < phase_order(c); });
  size_t longest = 0;
  for (const auto& b : bars) longest = std::max(longest, b.label.size());
  const double label_w = std::min(560.0, 40 + 6.6 * static_cast<double>(longest)), plot_w = 780, row_h = 26, top = 10;
  const double vmax = nice_max(max_v);
  const double height = top + row_h * static_cast<double>(bars.size()) + 30;
  std::string s = fmt::format(
      R"(<svg role="img" aria-label="cold start per configuration" width="{:.0f}" height="{:.0f}" viewBox="0 0 {:.0f} {:.0f}">)",
      label_w + plot_w + 40, height, label_w + plot_w + 40, height);
  s += x_axis(label_w, plot_w, vmax, top, height - 24, "ms");
  for (size_t i = 0; i < bars.size(); ++i) {
    const Bar& b = bars[i];
    double y = top + row_h * static_cast<double>(i);
    s += fmt::format(R"(<text x="{:.0f}" y="{:.1f}" text-anchor="end">{}</text>)", label_w - 8, y + 16, esc(b.label));
    double x = label_w;
    for (const auto& [p, v] : b.parts) {
      double w = plot_w * v / vmax;
      s += fmt::format(
          R"(<rect x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{:.0f}" fill="{}"><title>{}: {} ms (median)</title></rect>)",
          x, y + 4, std::max(w, 0.0), row_h - 8, phase_colour(p), esc(p), format_ms(v));
      x += w;
    }
    if (b.ready.n) {
      double x1 = label_w + plot_w * b.ready.min / vmax, x2 = label_w + plot_w * b.ready.max / vmax;
      s += fmt::format(
          R"(<line x1="{:.1f}" x2="{:.1f}" y1="{:.1f}" y2="{:.1f}" stroke="currentColor" stroke-width="1.5"><title>ready: {} ms median, {}–{} ms over trials</title></line>)",
          x1, x2, y + row_h / 2, y + row_h / 2, format_ms(b.ready.median), format_ms(b.ready.min),
          format_ms(b.ready.max));
    }
  }
  s += "</svg>";
  return legend(present) + "<div class=\"scroll\">" + s +
         "</div><p class=\"meta\">bars: the critical path — the slowest rank of each trial, from its process start to "
         "its first collective done — each phase at its median over trials; line: min–max of ready (that whole "
         "path) over trials. Waits on peers (sync_*) are on the path and drawn grey.</p>";
}

std::string timelines(const BenchResults& r, const TrialResult& t) {
  double end = t.wall_ms;
  std::set<std::string> names;
  for (const auto& rank : t.ranks)
    for (const auto& p : rank.phases) {
      end = std::max(end, p.start_ms + p.dur_ms);
      names.insert(p.name);
    }
  const double label_w = 190, plot_w = 920, row_h = 30, top = 10;
  const double vmax = nice_max(end);
  const double height = top + row_h * static_cast<double>(t.ranks.size()) + 30;
  std::string s = fmt::format(
      R"(<svg role="img" aria-label="per-rank timeline" width="{:.0f}" height="{:.0f}" viewBox="0 0 {:.0f} {:.0f}">)",
      label_w + plot_w + 40, height, label_w + plot_w + 40, height);
  s += x_axis(label_w, plot_w, vmax, top, height - 24, "ms");
  for (size_t i = 0; i < t.ranks.size(); ++i) {
    const RankResult& rank = t.ranks[i];
    double y = top + row_h * static_cast<double>(i);
    s += fmt::format(R"(<text x="{:.0f}" y="{:.1f}" text-anchor="end">rank {}{}</text>)", label_w - 8, y + 19,
                     rank.rank, rank.bus_id.empty() ? "" : " · " + esc(rank.bus_id));
    for (const auto& p : rank.phases) {
      double x = label_w + plot_w * p.start_ms / vmax, w = std::max(plot_w * p.dur_ms / vmax, 0.5);
      s += fmt::format(
          R"(<rect x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{:.0f}" fill="{}"><title>rank {} {}: {} ms, from {} ms</title></rect>)",
          x, y + 5, w, row_h - 10, phase_colour(p.name), rank.rank, esc(p.name), format_ms(p.dur_ms),
          format_ms(p.start_ms));
    }
  }
  s += "</svg>";
  std::vector<std::string> order;
  for (const auto& rank : t.ranks)
    for (const auto& p : rank.phases)
      if (std::find(order.begin(), order.end(), p.name) == order.end()) order.push_back(p.name);
  std::string label =
      static_cast<size_t>(t.config_id) < r.configs.size() ? r.configs[static_cast<size_t>(t.config_id)].label() : "?";
  return fmt::format("<p>trial {} · {} · {} · wall {} ms</p>", t.index, esc(label), esc(name_of(t.status)),
                     format_ms(t.wall_ms)) +
         legend(order) + "<div class=\"scroll\">" + s + "</div>";
}

// Cold start (ready, median over trials) against NCCL's memory after the first collective, labelled with the
// steady-state bus bandwidth.
std::string tradeoff(const BenchResults& r) {
  std::string table =
      "<table><tr><th>#</th><th>configuration</th><th>ready ms</th><th>busbw GB/s</th>"
      "<th>NCCL memory after init</th><th>after first collective</th></tr>";
  struct Point {
    size_t no;
    std::string label;
    double x, y;
  };
  std::vector<Point> pts;
  for (const auto& s : r.summaries) {
    if (!s.ready.n) continue;
    const double cold = s.ready.median;
    table += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>", pts.size() + 1,
                         esc(s.label), format_ms(cold), s.busbw_gbps.n ? format_ms(s.busbw_gbps.median) : "–",
                         s.nccl_mem_init.n ? format_bytes(s.nccl_mem_init.median) : "–",
                         s.nccl_mem_first.n ? format_bytes(s.nccl_mem_first.median) : "–");
    pts.push_back({pts.size() + 1,
                   s.label + (s.busbw_gbps.n ? fmt::format(" ({} GB/s)", format_ms(s.busbw_gbps.median)) : ""), cold,
                   s.nccl_mem_first.n ? s.nccl_mem_first.median / (1024.0 * 1024.0) : -1});
  }
  table += "</table>";
  std::erase_if(pts, [](const Point& p) { return p.y < 0; });  // no memory measured: in the table only
  if (pts.empty()) return table;
  double xmax = 0, ymax = 0;
  for (const auto& p : pts) xmax = std::max(xmax, p.x), ymax = std::max(ymax, p.y);
  xmax = nice_max(xmax);
  ymax = nice_max(ymax);
  const double l = 80, w = 700, top = 10, h = 260;
  std::string s = fmt::format(
      R"(<svg role="img" aria-label="trade-off" width="{:.0f}" height="{:.0f}" viewBox="0 0 {:.0f} {:.0f}">)",
      l + w + 40, top + h + 40, l + w + 40, top + h + 40);
  s += x_axis(l, w, xmax, top, top + h, "ms");
  s += y_axis(l, w, ymax, top, h, "MiB");
  for (size_t i = 0; i < pts.size(); ++i) {
    double x = l + w * pts[i].x / xmax, y = top + h - h * pts[i].y / ymax;
    // Numbered as in the table (labels would overlap where configurations cluster).
    s += fmt::format(
        R"(<circle cx="{:.1f}" cy="{:.1f}" r="5" fill="#4e79a7"><title>{}</title></circle><text x="{:.1f}" y="{:.1f}">{}</text>)",
        x, y, esc(pts[i].label), x + 7, y - 6 - 11.0 * static_cast<double>(i % 3), pts[i].no);
  }
  s += "</svg>";
  return table + "<div class=\"scroll\">" + s +
         "</div><p class=\"meta\">x: cold start (ready: process start to the first collective done, slowest rank, "
         "median over trials); y: GPU memory NCCL holds after the first collective; points are numbered as in the "
         "table, which also gives the "
         "steady-state bus bandwidth.</p>";
}

// A series per configuration label (with the varying axis taken out), x = GPU count or channel count.
struct Series {
  std::map<double, double> first, init;
};

std::optional<double> channels_of(const Config& c) {
  for (const auto& e : c.env)
    if ((e.key == "NCCL_MIN_CTAS" || e.key == "NCCL_MAX_CTAS" || e.key == "NCCL_MIN_NCHANNELS" ||
         e.key == "NCCL_MAX_NCHANNELS") &&
        e.value)
      if (auto v = parse_int(*e.value)) return static_cast<double>(*v);
  return std::nullopt;
}

std::string label_without_channels(const Config& c) {
  Config copy = c;
  std::erase_if(copy.env, [](const EnvSetting& e) {
    return e.key == "NCCL_MIN_CTAS" || e.key == "NCCL_MAX_CTAS" || e.key == "NCCL_MIN_NCHANNELS" ||
           e.key == "NCCL_MAX_NCHANNELS";
  });
  return copy.label();
}

std::string line_chart(const std::map<std::string, Series>& series, const char* x_name) {
  double xmax = 0, ymax = 0;
  for (const auto& [label, s] : series)
    for (const auto* m : {&s.first, &s.init})
      for (const auto& [x, y] : *m) xmax = std::max(xmax, x), ymax = std::max(ymax, y);
  xmax = nice_max(xmax);
  ymax = nice_max(ymax);
  const double l = 80, w = 640, top = 10, h = 260;
  static const char* colours[] = {"#4e79a7", "#e15759", "#59a14f", "#f28e2b",
                                  "#b07aa1", "#76b7b2", "#edc948", "#9c755f"};
  std::string s =
      fmt::format(R"(<svg role="img" aria-label="scaling" width="{:.0f}" height="{:.0f}" viewBox="0 0 {:.0f} {:.0f}">)",
                  l + w + 420, top + h + 40, l + w + 420, top + h + 40);
  for (int i = 0; i <= 5; ++i) {
    double x = l + w * i / 5;
    s += fmt::format(
        R"(<line class="grid" x1="{:.1f}" x2="{:.1f}" y1="{:.0f}" y2="{:.0f}"/><text class="muted" x="{:.1f}" y="{:.0f}" text-anchor="middle">{}</text>)",
        x, x, top, top + h, x, top + h + 14, format_ms(xmax * i / 5));
  }
  s += y_axis(l, w, ymax, top, h, "ms");
  s += fmt::format(R"(<text class="muted" x="{:.0f}" y="{:.0f}" text-anchor="middle">{}</text>)", l + w / 2,
                   top + h + 32, x_name);
  size_t k = 0;
  double legend_y = top + 12;
  for (const auto& [label, ser] : series) {
    const char* colour = colours[k++ % 8];
    for (auto [m, dash, what] :
         {std::tuple{&ser.first, "", "first_enqueue"}, std::tuple{&ser.init, "5,4", "comm_init"}}) {
      if (m->empty()) continue;
      std::string path;
      for (const auto& [x, y] : *m) {
        double px = l + w * x / xmax, py = top + h - h * y / ymax;
        path += fmt::format("{}{:.1f},{:.1f} ", path.empty() ? "M" : "L", px, py);
        s += fmt::format(
            R"(<circle cx="{:.1f}" cy="{:.1f}" r="3.5" fill="{}"><title>{} · {}: {} ms at {}</title></circle>)", px, py,
            colour, esc(label), what, format_ms(y), format_ms(x));
      }
      s += fmt::format(R"(<path d="{}" fill="none" stroke="{}" stroke-width="2" stroke-dasharray="{}"/>)", path, colour,
                       dash);
      s += fmt::format(
          R"(<line x1="{:.0f}" x2="{:.0f}" y1="{:.1f}" y2="{:.1f}" stroke="{}" stroke-width="2" stroke-dasharray="{}"/><text x="{:.0f}" y="{:.1f}">{} · {}</text>)",
          l + w + 20, l + w + 44, legend_y - 4, legend_y - 4, colour, dash, l + w + 50, legend_y, esc(label), what);
      legend_y += 16;
    }
  }
  return "<div class=\"scroll\">" + s + "</svg></div>";
}

// Runs of kMinRankCounts rank counts or more: how each phase grows, log–log, with its law (report/growth.h).
std::string growth_section(const std::vector<const BenchResults*>& runs, const std::vector<std::string>& names) {
  std::set<int> sizes;
  for (const BenchResults* r : runs) sizes.insert(r->spec.nranks());
  if (sizes.size() < analysis::kMinRankCounts || sizes.size() != runs.size()) return "";
  std::vector<std::string> run_names;
  for (size_t i = 0; i < runs.size(); ++i)
    run_names.push_back(i < names.size() ? names[i] : fmt::format("run {}", i + 1));
  const std::string html = growth_html(analysis::growth(runs, run_names));
  return html.empty() ? "" : "<h3>Growth with the ranks (log–log)</h3>" + html;
}

std::string scaling(const std::vector<const BenchResults*>& runs) {
  std::string out;
  // GPU counts: the same configuration label in runs of different sizes.
  std::map<std::string, Series> by_gpus;
  std::set<int> sizes;
  for (const BenchResults* r : runs) sizes.insert(r->spec.nranks());
  if (sizes.size() > 1)
    for (const BenchResults* r : runs)
      for (const auto& s : r->summaries) {
        double x = r->spec.nranks();
        if (const Stats* f = s.phase(std::string(phase::first_enqueue))) by_gpus[s.label].first[x] = f->median;
        if (const Stats* i = s.phase(std::string(phase::comm_init))) by_gpus[s.label].init[x] = i->median;
      }
  if (!by_gpus.empty()) out += "<h3>By GPU count</h3>" + line_chart(by_gpus, "GPUs (ranks)");
  // Channel counts: an NCCL_MIN_CTAS/MAX_CTAS (or NCHANNELS) axis with several values.
  std::map<std::string, Series> by_channels;
  for (const BenchResults* r : runs)
    for (const auto& s : r->summaries) {
      const Config& c = r->configs.at(static_cast<size_t>(s.config_id));
      auto ch = channels_of(c);
      if (!ch) continue;
      std::string key =
          label_without_channels(c) + (runs.size() > 1 ? fmt::format(" · {} GPUs", r->spec.nranks()) : "");
      if (const Stats* f = s.phase(std::string(phase::first_enqueue))) by_channels[key].first[*ch] = f->median;
      if (const Stats* i = s.phase(std::string(phase::comm_init))) by_channels[key].init[*ch] = i->median;
    }
  bool several =
      std::any_of(by_channels.begin(), by_channels.end(), [](const auto& kv) { return kv.second.first.size() > 1; });
  if (several) out += "<h3>By channel count</h3>" + line_chart(by_channels, "channels (NCCL_MIN_CTAS / NCCL_MAX_CTAS)");
  return out;
}

// What the report is about, before any table: this job's cold start, the best fix measured, what it saves and costs.
std::string fix_verdict_html(const BenchResults& r) {
  std::string s;
  auto rankings = analysis::rank_fixes(r);
  for (const auto& k : rankings) {
    s += fmt::format(
        "<div class=\"card\"><p>This job's cold start (<b>ready</b>: process start to the first collective done, "
        "slowest rank, median of {} trials) is <b>{} ms</b> for {}",
        k.baseline_ready.n, format_ms(k.baseline_ready.median), esc(k.scope));
    if (k.startup_ms > 0) s += fmt::format(", with {} ms of its own start-up work", format_ms(k.startup_ms));
    s += ".</p>";
    // Fixes whose trials failed come first: what their other trials saved is not a measurement of the fix.
    for (const auto& f : k.fixes)
      if (f.is_failed())
        s += fmt::format("<p><b class=\"warn\">{}: {} of {} trials did not finish ({})</b>: not ranked.</p>",
                         esc(f.shown()), f.failed, f.trials, esc(f.failures));
    auto saving = [](const analysis::FixOutcome& f) {
      return fmt::format("{}; {:.0f}% of the cold start; {}", esc(analysis::format_saving(f)), std::abs(f.saved_pct),
                         esc(analysis::format_hidden(f)));
    };
    auto notes = [](const analysis::FixOutcome& f, const std::string& lead) {
      std::string out;
      if (!f.limit.empty()) out += "<p" + lead + ">Why " + esc(f.shown()) + " hid no more: " + esc(f.limit) + ".</p>";
      if (!f.beyond.empty()) out += "<p" + lead + ">" + esc(f.shown()) + " hides " + esc(f.beyond) + ".</p>";
      return out;
    };
    if (k.leaders.empty()) {
      s += "<p>No fix measured here shortens it beyond noise.</p>";
    } else if (k.leaders.size() > 1) {
      std::vector<std::string> alike;
      for (size_t i : k.leaders) alike.push_back("<b>" + esc(k.fixes[i].shown()) + "</b> " + saving(k.fixes[i]));
      s += "<p>No single best fix: these save alike (no difference measured between them): " + join(alike, "; ") +
           ".</p>";
    } else {
      const analysis::FixOutcome& best = k.fixes[k.leaders.front()];
      s += fmt::format("<p>Best fix measured: <b>{}</b> — ready {} ms, <b>{}</b>.", esc(best.shown()),
                       format_ms(best.ready.median), saving(best));
      std::vector<std::string> measured;
      if (best.mem_delta_bytes != 0)
        measured.push_back(fmt::format("NCCL memory {}{}", best.mem_delta_bytes > 0 ? "+" : "−",
                                       format_bytes(std::abs(best.mem_delta_bytes))));
      if (best.busbw_gbps > 0)
        measured.push_back(
            fmt::format("bus bandwidth {} GB/s ({:+.0f}%)", format_ms(best.busbw_gbps), best.busbw_delta_pct));
      s += " It costs: " + esc(best.cost) + (measured.empty() ? "" : " (measured: " + esc(join(measured, ", ")) + ")") +
           ".</p>";
    }
    for (size_t i : k.leaders) s += notes(k.fixes[i], "");
    s += "<p class=\"meta\">Each fix on the part of ready it can act on (after init for prewarm, after the ranks met "
         "for fixes that move cost into init, the groups for split-share); the Hodges-Lehmann estimate of what it "
         "saves, its 95% interval and n trials baseline/fix. Others, by what they save: ";
    std::vector<std::string> rest;
    for (size_t i = 0; i < k.fixes.size(); ++i)
      if (!k.fixes[i].is_failed() && std::find(k.leaders.begin(), k.leaders.end(), i) == k.leaders.end())
        rest.push_back(fmt::format("{} ready {} ms, {}", k.fixes[i].shown(), format_ms(k.fixes[i].ready.median),
                                   analysis::format_saving(k.fixes[i])));
    s += esc(rest.empty() ? std::string("none") : join(rest, "; ")) + ".</p>";
    for (size_t i = 0; i < k.fixes.size(); ++i)
      if (std::find(k.leaders.begin(), k.leaders.end(), i) == k.leaders.end())
        s += notes(k.fixes[i], " class=\"meta\"");
    s += "</div>";
  }
  if (!s.empty()) return s;
  // No fixes measured: the cold start per configuration, slowest first.
  std::vector<const ConfigSummary*> by_ready;
  for (const auto& c : r.summaries)
    if (c.ready.n) by_ready.push_back(&c);
  if (by_ready.empty()) return "<p>No trial reached its first collective.</p>";
  std::sort(by_ready.begin(), by_ready.end(), [](auto* a, auto* b) { return a->ready.median > b->ready.median; });
  s = "<div class=\"card\"><p>Cold start (<b>ready</b>: process start to the first collective done, slowest rank, "
      "median over trials), slowest first:</p><ul>";
  for (const auto* c : by_ready)
    s += fmt::format("<li>{}: <b>{} ms</b></li>", esc(c->label), format_ms(c->ready.median));
  return s +
         "</ul><p class=\"meta\">Measure fixes against the job's own start-up with <code>coldstart bench --startup "
         "... --fix none,prewarm,cumem-off</code>.</p></div>";
}

// The verdict on fixes, and what the lab's own NCCL log cost where the run has it off beside on (bench's last lines).
std::string verdict_html(const BenchResults& r) {
  const std::string log = analysis::render_log_disturbance(analysis::log_disturbance(r));
  return fix_verdict_html(r) + (log.empty() ? "" : "<div class=\"card\">" + meta_lines(log) + "</div>");
}

std::string advice_html(const std::vector<doctor::Finding>& findings) {
  if (findings.empty()) return "<p>No masked launch model in this run: nothing to advise.</p>";
  std::string s;
  for (const auto& f : findings) {
    s += fmt::format("<div class=\"card\"><b class=\"{}\">{}</b>: {}<p>{}</p><ul>",
                     f.severity == doctor::Severity::info ? "" : "warn", doctor::severity_name(f.severity),
                     esc(f.title), esc(f.evidence));
    for (const auto& fix : f.fixes) s += "<li>" + esc(fix.text()) + "</li>";
    s += "</ul></div>";
  }
  return s;
}

std::string run_meta(const BenchResults& r) {
  std::vector<std::string> gpus, nccl;
  for (const auto& g : r.context.gpus) gpus.push_back(g.name);
  for (const auto& n : r.context.nccl) nccl.push_back("NCCL " + n.version);
  return fmt::format("<p class=\"meta\">{} · {} · {} rank(s) · {} · {} trials · seed {}<br><code>{}</code></p>",
                     esc(r.context.host), esc(r.context.started_at), r.spec.nranks(),
                     esc(gpus.empty() ? std::string("no GPU (dry run)") : gpus.front()), r.trials.size(),
                     r.context.seed, esc(join(r.context.argv, " ")));
}

}  // namespace

int default_trial(const BenchResults& r) {
  const ConfigSummary* slowest = nullptr;
  for (const auto& s : r.summaries)
    if (const Stats* f = s.phase(std::string(phase::first_enqueue)))
      if (!slowest || f->median > slowest->phase(std::string(phase::first_enqueue))->median) slowest = &s;
  for (const auto& t : r.trials)
    if (t.ok() && (!slowest || t.config_id == slowest->config_id)) return t.index;
  return -1;
}

std::string html_escape(std::string_view s) {
  std::string o;
  o.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      default: o += c;
    }
  }
  return o;
}

std::string page_head(std::string_view title) {
  return "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
         "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>" +
         html_escape(title) + "</title><style>" + kStyle + "</style></head><body><h1>" + html_escape(title) + "</h1>";
}

std::string render_html(const std::vector<const BenchResults*>& runs, const HtmlOptions& o) {
  std::string h = page_head("coldstart report");
  for (size_t i = 0; i < runs.size(); ++i) {
    const BenchResults& r = *runs[i];
    if (runs.size() > 1) h += "<h2>" + esc(i < o.names.size() ? o.names[i] : fmt::format("run {}", i + 1)) + "</h2>";
    h += run_meta(r);
    h += "<h2>Verdict</h2>" + verdict_html(r);
    h += "<h2>Summary</h2>" + summary_table(r);
    h += "<h2>Phases per configuration</h2>" + stacked_bars(r);
    int chosen = i == 0 && o.trial >= 0 ? o.trial : default_trial(r);
    auto t = std::find_if(r.trials.begin(), r.trials.end(), [&](const TrialResult& x) { return x.index == chosen; });
    if (t != r.trials.end()) h += "<h2>Per-rank timeline of one trial</h2>" + timelines(r, *t);
    h += "<h2>Cold start vs bandwidth vs memory</h2>" + tradeoff(r);
    h += "<h2>Advice</h2>" + advice_html(i < o.advice.size() ? o.advice[i] : std::vector<doctor::Finding>{});
  }
  if (std::string s = scaling(runs) + growth_section(runs, o.names); !s.empty()) h += "<h2>Scaling</h2>" + s;
  h += "<p class=\"meta\">Made by coldstart " COLDSTART_VERSION ". Phase names as in results.json.</p></body></html>\n";
  return h;
}

}  // namespace coldstart::report
