#include "report/table.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <string_view>
#include <utility>
#include <vector>

#include "model/phases.h"
#include "model/summary.h"
#include "util/strings.h"

namespace coldstart::report {
namespace {

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

// "LABEL: comm_init 3499 ms; in the rank's process: kernel_loading 2180 + ...": a phase's median beside the medians
// of the traced CUDA calls made in it, largest first (calls under 0.5 ms left out).
std::string calls_line(const ConfigSummary& s, std::string_view phase_name, std::string_view shown,
                       const std::map<std::string, Stats>& calls) {
  const Stats* ph = s.phase(std::string(phase_name));
  std::vector<std::pair<std::string, double>> parts;
  for (const auto& [cat, st] : calls)
    if (st.median >= 0.5) parts.emplace_back(cat, st.median);
  std::sort(parts.begin(), parts.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  std::string line =
      fmt::format("{}: {} {} ms; in the rank's process:", s.label, shown, ph ? format_ms(ph->median) : "?");
  for (size_t i = 0; i < parts.size(); ++i)
    line += fmt::format("{} {} {}", i ? " +" : "", parts[i].first, format_ms(parts[i].second));
  if (parts.empty()) line += " no traced CUDA calls";
  return line + "\n";
}

// What the run knows of how a configuration's ranks got NCCL's kernels: the library's GPU code beside the run's GPUs
// (NcclLibInfo::kernels, "" unknown), a JIT forced by CUDA_FORCE_PTX_JIT=1 (its --env or the lab's environment), and
// how many ranks shared a GPU.
struct KernelSource {
  std::string kernels;
  std::vector<std::string> sass;
  bool forced = false;
  int sharing = 1;
};

KernelSource kernel_source(const BenchResults& r, const ConfigSummary& s) {
  KernelSource k;
  k.sharing = r.spec.ranks_per_gpu;
  const Config* c = nullptr;
  for (const auto& cfg : r.configs)
    if (cfg.id == s.config_id) c = &cfg;
  auto inherited = r.context.inherited_env.find("CUDA_FORCE_PTX_JIT");
  k.forced = inherited != r.context.inherited_env.end() && inherited->second == "1";
  if (!c) return k;
  for (const auto& e : c->env)
    if (e.key == "CUDA_FORCE_PTX_JIT") k.forced = e.value == "1";
  if (const NcclLibInfo* lib = nccl_lib_of(r.context.nccl, c->nccl_lib)) {
    k.kernels = lib->kernels;
    k.sass = lib->sass;
  }
  return k;
}

// The clause saying where init.kernels went, and the spread over rank-samples read in its light.
std::string kernels_cause(const KernelSource& k, const Stats& st) {
  const bool spread = st.min > 0 && st.min < kSlowKernelsMs;
  const std::string range =
      spread ? fmt::format("; {} to {} ms over its rank-samples", format_ms(st.min), format_ms(st.max)) : "";
  // read as a JIT's: a cold start compiles, the next finds what it compiled
  const std::string jit_range =
      spread ? range + ": the slow ones compiled, the fast ones found the JIT cache a slow one filled" : "";
  if (k.forced || k.kernels == "ptx")
    return fmt::format("a JIT: the driver compiles the library's PTX in each process's first load ({}){}",
                       k.forced ? "CUDA_FORCE_PTX_JIT=1" : "it has no SASS for this GPU", jit_range);
  if (k.kernels == "sass") {
    std::string sass;
    for (const auto& a : k.sass) sass += (sass.empty() ? "sm_" : ", sm_") + a;
    std::string out = fmt::format("from its SASS ({}), no JIT", sass);
    if (k.sharing > 1)
      out += fmt::format(
          "; {} ranks share each GPU and load theirs at once, each waiting on the others: the GPU's "
          "sharing, not NCCL's (docs/scale.md){}",
          k.sharing, range);
    return out;
  }
  if (k.sharing > 1)
    return fmt::format(
        "a JIT of its PTX when the library has no SASS for the GPU, or {} ranks sharing each GPU "
        "loading theirs at once{}",
        k.sharing, range);
  return "a JIT of its PTX when the library has no SASS for the GPU" + jit_range;
}

}  // namespace

std::string kernels_note(const BenchResults& r) {
  // A phase's slowest sample where the spread is known (a JIT cache makes one start slow and the next fast)
  const auto slowest = [](const Stats& st) { return std::max(st.median, st.max); };
  std::string out;
  for (const auto& s : r.summaries) {
    const Stats* k = s.phase("init.kernels");
    if (!k || !k->n || slowest(*k) < kSlowKernelsMs) continue;
    const bool largest = std::none_of(s.phases.begin(), s.phases.end(), [&](const PhaseStats& p) {
      return p.name.starts_with("init.") && p.name != "init.kernels" && p.stats.n && slowest(p.stats) > slowest(*k);
    });
    if (!largest) continue;
    const KernelSource source = kernel_source(r, s);
    out += fmt::format("{}: init.kernels {} ms, the largest part of comm_init: NCCL's kernels loaded — {}{}\n", s.label,
                       format_ms(k->median), kernels_cause(source, *k),
                       source.kernels == "sass" && !source.forced ? "" : "; `coldstart doctor` checks");
  }
  return out;
}

// Medians over rank-samples, where a configuration's ranks made any calls: "init_process_group 2.4 ms of 340 ms".
std::string store_note(const BenchResults& r) {
  std::string out;
  for (const auto& s : r.summaries) {
    std::vector<std::string> parts;
    for (const auto& p : s.phases) {
      auto it = s.store_ms.find(p.name);
      if (it != s.store_ms.end() && it->second.n)
        parts.push_back(
            fmt::format("{} {} ms of {} ms", p.name, format_ms(it->second.median), format_ms(p.stats.median)));
    }
    if (!parts.empty())
      out += s.label + ": the rendezvous store (torch's TCPStore, each rank's own calls): " + join(parts, ", ") + "\n";
  }
  return out;
}

std::string format_ms_spread(const Stats& s) {
  if (s.n == 0) return "–";
  return fmt::format("{} [{}–{}]", format_ms(s.median), format_ms(s.min), format_ms(s.max));
}

SummaryRows summary_rows(const BenchResults& r) {
  auto present = [&](std::string_view name) {
    return std::any_of(r.summaries.begin(), r.summaries.end(),
                       [&](const ConfigSummary& s) { return s.phase(std::string(name)) != nullptr; });
  };
  // The phase table's columns that some configuration has, in its order; NCCL's own split of init where its log was
  // read.
  std::vector<std::string> phase_cols;
  for (const auto& p : kPhaseTable)
    if (p.column && present(p.name)) phase_cols.emplace_back(p.name);
  for (std::string_view nccl_part : {"init.kernels", "init.connections"})
    if (present(nccl_part)) phase_cols.emplace_back(nccl_part);
  std::vector<std::string> header{"configuration", "trials", "ready ms"};
  for (const auto& p : phase_cols) header.push_back(p + " ms");
  bool have_log = std::any_of(r.summaries.begin(), r.summaries.end(),
                              [](const ConfigSummary& s) { return s.lazy_connections.n > 0; });
  if (have_log) header.push_back("lazy connections");
  header.insert(header.end(), {"busbw GB/s", "NCCL mem init", "NCCL mem first"});
  SummaryRows out;
  out.have_log = have_log;
  out.header = header;
  for (const auto& s : r.summaries) {
    std::vector<std::string> row{s.label, fmt::format("{}/{}", s.ok(), s.total()), format_ms_spread(s.ready)};
    for (const auto& p : phase_cols) {
      const Stats* st = s.phase(p);
      row.push_back(st ? format_ms_spread(*st) : "–");
    }
    if (have_log) row.push_back(s.lazy_connections.n ? fmt::format("{:.0f}", s.lazy_connections.median) : "–");
    row.push_back(s.busbw_gbps.n ? format_ms(s.busbw_gbps.median) : "–");
    row.push_back(s.nccl_mem_init.n ? format_bytes(s.nccl_mem_init.median) : "–");
    row.push_back(s.nccl_mem_first.n ? format_bytes(s.nccl_mem_first.median) : "–");
    out.rows.push_back(std::move(row));
  }
  return out;
}

std::string render_rows(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& body) {
  std::vector<std::vector<std::string>> rows{header};
  rows.insert(rows.end(), body.begin(), body.end());
  std::vector<size_t> w(header.size(), 0);
  for (const auto& row : rows)
    for (size_t i = 0; i < row.size() && i < w.size(); ++i) w[i] = std::max(w[i], width(row[i]));
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (size_t i = 0; i < row.size() && i < w.size(); ++i) {
      if (i) line += "  ";
      line += pad(row[i], w[i], i > 0);
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

std::string render_markdown_rows(const std::vector<std::string>& header,
                                 const std::vector<std::vector<std::string>>& body) {
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
  for (const auto& h : header) cell(out, h);
  out += "\n|";
  for (size_t i = 0; i < header.size(); ++i) out += i ? "---:|" : "---|";
  out += "\n";
  for (const auto& row : body) {
    out += "|";
    for (const auto& c : row) cell(out, c);
    out += "\n";
  }
  return out;
}

std::string render_table(const BenchResults& r) {
  SummaryRows sr = summary_rows(r);
  const bool have_log = sr.have_log;
  std::string out = render_rows(sr.header, sr.rows);
  out += kTableNote;
  out += "\n";
  if (have_log)
    out += "init.*: NCCL's own Init timings; lazy connections: channel connections NCCL made after init (its log)\n";
  out += kernels_note(r);
  out += store_note(r);
  // bench --coverage: the first call of other collectives and sizes, after the first collective (and any warm-up).
  for (const auto& s : r.summaries) {
    std::vector<std::string> parts;
    for (const auto& p : s.phases)
      if (p.name.starts_with("cover.")) parts.push_back(p.name.substr(6) + " " + format_ms(p.stats.median) + " ms");
    if (!parts.empty()) out += s.label + ": first call after the first collective: " + join(parts, ", ") + "\n";
  }
  // bench --trace: the phases before the first collective and the first collective itself, in CUDA calls of the
  // rank's own process (medians over rank-samples).
  for (const auto& s : r.summaries) {
    for (std::string_view name : {phase::cuda_context, phase::comm_init})
      if (auto it = s.phase_calls.find(std::string(name)); it != s.phase_calls.end())
        out += calls_line(s, name, name, it->second);
    if (!s.first_collective_calls.empty())
      out += calls_line(s, phase::first_enqueue, "first collective", s.first_collective_calls);
  }
  return out;
}

std::string render_markdown(const BenchResults& r) {
  SummaryRows sr = summary_rows(r);
  return render_markdown_rows(sr.header, sr.rows) + "\n" + kTableNote + ".\n";
}

}  // namespace coldstart::report
