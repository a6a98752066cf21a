#include "report/table.h"

#include <fmt/format.h>

#include <algorithm>

#include "model/phases.h"
#include "util/strings.h"

namespace coldstart {
namespace {

std::string num(double v) { return std::abs(v) >= 100 ? fmt::format("{:.0f}", v) : fmt::format("{:.1f}", v); }

// Width in terminal columns of UTF-8 text (the table uses '·' and '–').
size_t width(const std::string& s) {
  size_t w = 0;
  for (unsigned char c : s) w += (c & 0xC0) != 0x80;
  return w;
}

std::string pad(const std::string& s, size_t w, bool right) {
  size_t n = width(s);
  std::string fill(w > n ? w - n : 0, ' ');
  return right ? fill + s : s + fill;
}

}  // namespace

std::string format_ms_spread(const Stats& s) {
  if (s.n == 0) return "–";
  return fmt::format("{} [{}–{}]", num(s.median), num(s.min), num(s.max));
}

SummaryRows summary_rows(const BenchResults& r) {
  std::vector<std::string> phase_cols{std::string(phase::cuda_context), std::string(phase::comm_init),
                                      std::string(phase::first_enqueue), std::string(phase::first_wait),
                                      std::string(phase::second_enqueue)};
  // Group phases only when the run built groups; NCCL's own split of init only when its log was read.
  for (std::string_view extra :
       {phase::import_torch, phase::init_process_group, phase::barrier_enqueue, phase::barrier_wait, phase::groups_init,
        phase::groups_first, std::string_view("init.kernels"), std::string_view("init.connections")})
    for (const auto& s : r.summaries)
      if (s.phase(std::string(extra))) {
        phase_cols.emplace_back(extra);
        break;
      }
  std::vector<std::string> header{"configuration", "trials"};
  for (const auto& p : phase_cols) header.push_back(p + " ms");
  bool have_log = std::any_of(r.summaries.begin(), r.summaries.end(),
                              [](const ConfigSummary& s) { return s.lazy_connections.n > 0; });
  if (have_log) header.push_back("lazy conns");
  header.insert(header.end(), {"busbw GB/s", "mem init", "mem first"});
  SummaryRows out;
  out.have_log = have_log;
  out.header = header;
  auto& rows = out.rows;
  for (const auto& s : r.summaries) {
    int total = 0;
    for (const auto& [k, v] : s.status_counts) total += v;
    int ok = s.status_counts.count("ok") ? s.status_counts.at("ok") : 0;
    std::vector<std::string> row{s.label, fmt::format("{}/{}", ok, total)};
    for (const auto& p : phase_cols) {
      const Stats* st = s.phase(p);
      row.push_back(st ? format_ms_spread(*st) : "–");
    }
    if (have_log) row.push_back(s.lazy_connections.n ? fmt::format("{:.0f}", s.lazy_connections.median) : "–");
    row.push_back(s.busbw_gbps.n ? num(s.busbw_gbps.median) : "–");
    row.push_back(s.nccl_mem_init.n ? format_bytes(s.nccl_mem_init.median) : "–");
    row.push_back(s.nccl_mem_first.n ? format_bytes(s.nccl_mem_first.median) : "–");
    rows.push_back(std::move(row));
  }
  return out;
}

std::string render_table(const BenchResults& r) {
  SummaryRows sr = summary_rows(r);
  const auto& header = sr.header;
  const bool have_log = sr.have_log;
  std::vector<std::vector<std::string>> rows{header};
  rows.insert(rows.end(), sr.rows.begin(), sr.rows.end());
  std::vector<size_t> w(header.size(), 0);
  for (const auto& row : rows)
    for (size_t i = 0; i < row.size(); ++i) w[i] = std::max(w[i], width(row[i]));
  std::string out;
  for (size_t ri = 0; ri < rows.size(); ++ri) {
    std::string line;
    for (size_t i = 0; i < rows[ri].size(); ++i) {
      if (i) line += "  ";
      line += pad(rows[ri][i], w[i], i > 0);
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  out +=
      "times: median [min–max] over rank-samples of ok trials; mem: GPU memory NCCL added after init / after the "
      "first collective\n";
  if (have_log)
    out += "init.*: NCCL's own Init timings; lazy conns: channel connections NCCL made after init (its log)\n";
  // bench --trace: the first collective in CUDA calls of the rank's own process (medians over rank-samples).
  for (const auto& s : r.summaries) {
    if (s.first_collective_calls.empty()) continue;
    const Stats* first = s.phase(std::string(phase::first_enqueue));
    std::vector<std::pair<std::string, double>> parts;
    for (const auto& [cat, st] : s.first_collective_calls)
      if (st.median >= 0.5) parts.emplace_back(cat, st.median);
    std::sort(parts.begin(), parts.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
    std::string line =
        fmt::format("{}: first collective {} ms; in the rank's process:", s.label, first ? num(first->median) : "?");
    for (size_t i = 0; i < parts.size(); ++i)
      line += fmt::format("{} {} {}", i ? " +" : "", parts[i].first, num(parts[i].second));
    if (parts.empty()) line += " no traced CUDA calls";
    out += line + "\n";
  }
  return out;
}

std::string render_markdown(const BenchResults& r) {
  SummaryRows sr = summary_rows(r);
  // " text |", with the cell's own pipes escaped.
  auto cell = [](std::string& out, const std::string& c) {
    out += ' ';
    for (char ch : c) {
      if (ch == '|') out += '\\';
      out += ch;
    }
    out += " |";
  };
  std::string out = "|";
  for (const auto& h : sr.header) cell(out, h);
  out += "\n|";
  for (size_t i = 0; i < sr.header.size(); ++i) out += i ? "---:|" : "---|";
  out += "\n";
  for (const auto& row : sr.rows) {
    out += "|";
    for (const auto& c : row) cell(out, c);
    out += "\n";
  }
  out +=
      "\nTimes: median [min–max] in ms over rank-samples of ok trials; mem: GPU memory NCCL added after init / after "
      "the first collective.\n";
  return out;
}

}  // namespace coldstart
