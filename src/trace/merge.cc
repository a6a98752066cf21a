#include "trace/merge.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "model/phases.h"
#include "nccllog/parser.h"
#include "util/error.h"
#include "util/strings.h"

namespace coldstart::trace {
namespace fs = std::filesystem;
using nlohmann::json;

int64_t ProcessTrace::mono_of_log_time(double local_seconds) const {
  double utc_ns = (local_seconds - static_cast<double>(gmtoff_s)) * 1e9;
  return mono_anchor_ns + static_cast<int64_t>(std::llround(utc_ns - static_cast<double>(real_anchor_ns)));
}

ProcessTrace read_process_trace(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError(path + ": cannot read; give a cupti.<host>.<pid>.tsv written by coldstart's tracer");
  ProcessTrace t;
  t.file = path;
  std::string line;
  if (!std::getline(in, line) || line != "# coldstart.cupti/1")
    throw InputError(path + ": not a coldstart CUPTI file (first line is not '# coldstart.cupti/1')");
  while (std::getline(in, line)) {
    auto f = split(line, '\t');
    const std::string& k = f[0];
    if (k == "call" && f.size() == 5) {
      auto tid = parse_int(f[2]), start = parse_int(f[3]), dur = parse_int(f[4]);
      if (tid && start && dur) t.calls.push_back({f[1], static_cast<uint32_t>(*tid), *start, *dur});
    } else if (k == "thread" && f.size() >= 2) {
      if (auto tid = parse_int(f[1])) t.threads[static_cast<uint32_t>(*tid)] = f.size() > 2 ? f[2] : "";
    } else if (f.size() == 2) {
      auto v = parse_int(f[1]);
      if (k == "pid" && v)
        t.pid = static_cast<int>(*v);
      else if (k == "host")
        t.host = f[1];
      else if (k == "mono_anchor_ns" && v)
        t.mono_anchor_ns = *v;
      else if (k == "real_anchor_ns" && v)
        t.real_anchor_ns = *v;
      else if (k == "gmtoff_s" && v)
        t.gmtoff_s = static_cast<long>(*v);
      else if (k == "error")
        t.error = f[1];
      else if (k == "dropped" && v)
        t.dropped = static_cast<uint64_t>(*v);
    }
  }
  return t;
}

namespace {
std::vector<std::string> files_like(const std::string& dir, const std::string& prefix, const std::string& suffix) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    std::string name = e.path().filename().string();
    if (starts_with(name, prefix) && name.size() > suffix.size() &&
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
      out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

const nccllog::Process* log_of(const nccllog::LogSummary& logs, const ProcessTrace& t) {
  for (const auto& p : logs.processes)
    if (p.pid == t.pid && (p.host == t.host || t.host.empty())) return &p;
  return nullptr;
}
}  // namespace

std::vector<ProcessTrace> read_trace_dir(const std::string& dir) {
  std::vector<ProcessTrace> out;
  for (const auto& f : files_like(dir, "cupti.", ".tsv")) out.push_back(read_process_trace(f));
  return out;
}

nccllog::LogSummary read_nccl_logs(const std::string& dir) {
  return nccllog::parse_files(files_like(dir, "nccl.", ".log"));
}

namespace {
template <class Pred>
Attribution attribute_if(const std::vector<ProcessTrace>& traces, int64_t start_ns, int64_t end_ns, Pred use) {
  Attribution a;
  for (const auto& t : traces) {
    if (!use(t.pid)) continue;
    for (const auto& c : t.calls) {
      int64_t s = std::max(c.start_ns, start_ns), e = std::min(c.start_ns + c.dur_ns, end_ns);
      if (e <= s && !(c.dur_ns == 0 && c.start_ns >= start_ns && c.start_ns < end_ns)) continue;
      CallTally& tally = a[category_name(category_of(c.name))];
      tally.count++;
      tally.ms += static_cast<double>(std::max<int64_t>(e - s, 0)) / 1e6;
    }
  }
  return a;
}
}  // namespace

Attribution attribute(const std::vector<ProcessTrace>& traces, int64_t start_ns, int64_t end_ns, int pid) {
  return attribute_if(traces, start_ns, end_ns, [&](int p) { return p == pid; });
}

Attribution attribute_others(const std::vector<ProcessTrace>& traces, int64_t start_ns, int64_t end_ns, int pid) {
  return attribute_if(traces, start_ns, end_ns, [&](int p) { return p != pid; });
}

void attribute_phases(const std::vector<ProcessTrace>& traces, int64_t t0_ns, std::vector<RankResult>& ranks) {
  for (auto& r : ranks)
    for (const auto& p : r.phases) {
      const int64_t start = t0_ns + static_cast<int64_t>(p.start_ms * 1e6),
                    end = start + static_cast<int64_t>(p.dur_ms * 1e6);
      if (p.name == phase::first_enqueue) {
        r.first_collective_calls = attribute(traces, start, end, r.pid);
        r.first_collective_peer_calls = attribute_others(traces, start, end, r.pid);
      } else if (p.name == phase::cuda_context || p.name == phase::comm_init) {
        if (Attribution a = attribute(traces, start, end, r.pid); !a.empty()) r.phase_calls[p.name] = std::move(a);
      }
    }
}

std::vector<Budget> budgets(const std::vector<ProcessTrace>& traces, const nccllog::LogSummary& logs) {
  std::vector<Budget> out;
  for (const auto& t : traces) {
    Budget b;
    b.host = t.host;
    b.pid = t.pid;
    b.error = t.error;
    b.dropped = t.dropped;
    int64_t split_ns = INT64_MIN;
    if (const nccllog::Process* p = log_of(logs, t); p && !p->comms.empty()) {
      const nccllog::Comm& world = p->comms.front();
      b.rank = world.rank;
      for (const auto& [k, v] : world.init_timings.parts) b.nccl_init_ms[k] = v * 1e3;
      if (world.t_init_complete) {
        split_ns = t.mono_of_log_time(*world.t_init_complete);
        b.connection_after_init = true;
      }
    }
    int64_t first_launch = -1;
    for (const auto& c : t.calls) {
      Category cat = category_of(c.name);
      double ms = static_cast<double>(c.dur_ns) / 1e6;
      if (cat == Category::context) {
        b.context.count++;
        b.context.ms += ms;
      } else if (cat == Category::kernel_loading) {
        b.kernel_loading.count++;
        b.kernel_loading.ms += ms;
      } else if (cat == Category::launch) {
        if (first_launch < 0 || c.start_ns < first_launch) first_launch = c.start_ns;
      }
      bool connection = cat == Category::mem_create || cat == Category::mem_reserve || cat == Category::mem_map ||
                        cat == Category::mem_set_access || cat == Category::mem_export || cat == Category::mem_import ||
                        cat == Category::ipc_get || cat == Category::ipc_open;
      if (connection && c.start_ns >= split_ns) {
        CallTally& tally = b.connection[category_name(cat)];
        tally.count++;
        tally.ms += ms;
      }
    }
    if (first_launch >= 0) b.first_launch_ms = static_cast<double>(first_launch - t.mono_anchor_ns) / 1e6;
    out.push_back(std::move(b));
  }
  std::sort(out.begin(), out.end(), [](const Budget& x, const Budget& y) {
    return std::tie(x.rank, x.host, x.pid) < std::tie(y.rank, y.host, y.pid);
  });
  return out;
}

std::string render_budgets(const std::vector<Budget>& bs) {
  std::string out;
  for (const auto& b : bs) {
    out += fmt::format("{}:{}{}\n", b.host, b.pid, b.rank >= 0 ? fmt::format("  rank {}", b.rank) : "");
    if (!b.error.empty()) {
      out += "  not traced: " + b.error + "\n";
      continue;
    }
    out += fmt::format("  context              {:8.1f} ms  ({} calls)\n", b.context.ms, b.context.count);
    out += fmt::format("  kernel loading       {:8.1f} ms  ({} calls)\n", b.kernel_loading.ms, b.kernel_loading.count);
    if (b.nccl_init_ms.count("total")) {
      std::string parts;
      for (const char* k : {"kernels", "alloc", "bootstrap", "topo", "connections"})
        if (b.nccl_init_ms.count(k)) parts += fmt::format(" {} {:.0f}", k, b.nccl_init_ms.at(k));
      out += fmt::format("  NCCL init            {:8.1f} ms  ({} )\n", b.nccl_init_ms.at("total"), parts);
    }
    out +=
        fmt::format("  connection calls{}\n", b.connection_after_init ? " after NCCL init (lazy):" : " (whole run):");
    if (b.connection.empty()) out += "                         none\n";
    for (const auto& [name, t] : b.connection)
      out += fmt::format("    {:<16}   {:8.1f} ms  ({} calls)\n", name, t.ms, t.count);
    if (b.first_launch_ms >= 0)
      out += fmt::format("  first kernel launch  {:8.1f} ms after CUDA start\n", b.first_launch_ms);
    if (b.dropped) out += fmt::format("  ({} calls not recorded: buffer full; raise COLDSTART_TRACE_MAX)\n", b.dropped);
  }
  if (bs.empty()) out += "no traced process wrote a file (did the command use CUDA?)\n";
  return out;
}

json budgets_json(const std::vector<Budget>& bs) {
  json arr = json::array();
  auto tally = [](const CallTally& t) { return json{{"count", t.count}, {"ms", t.ms}}; };
  for (const auto& b : bs) {
    json conn = json::object();
    for (const auto& [k, t] : b.connection) conn[k] = tally(t);
    arr.push_back({{"host", b.host},
                   {"pid", b.pid},
                   {"rank", b.rank},
                   {"context", tally(b.context)},
                   {"kernel_loading", tally(b.kernel_loading)},
                   {"nccl_init_ms", b.nccl_init_ms},
                   {"connection", conn},
                   {"connection_after_init", b.connection_after_init},
                   {"first_launch_ms", b.first_launch_ms},
                   {"error", b.error},
                   {"dropped", b.dropped}});
  }
  return {{"schema", "coldstart.budget/1"}, {"processes", arr}};
}

json perfetto(const std::vector<ProcessTrace>& traces, const nccllog::LogSummary& logs) {
  int64_t t0 = INT64_MAX;
  for (const auto& t : traces) {
    t0 = std::min(t0, t.mono_anchor_ns);
    for (const auto& c : t.calls) t0 = std::min(t0, c.start_ns);
  }
  auto us = [&](int64_t ns) { return static_cast<double>(ns - t0) / 1e3; };
  json ev = json::array();
  for (const auto& t : traces) {
    const nccllog::Process* p = log_of(logs, t);
    std::string pname = fmt::format("{}:{}", t.host, t.pid);
    if (p && !p->comms.empty() && p->comms.front().rank >= 0) pname += fmt::format(" · rank {}", p->comms.front().rank);
    ev.push_back({{"ph", "M"}, {"name", "process_name"}, {"pid", t.pid}, {"tid", 0}, {"args", {{"name", pname}}}});
    for (const auto& [tid, name] : t.threads)
      ev.push_back({{"ph", "M"},
                    {"name", "thread_name"},
                    {"pid", t.pid},
                    {"tid", tid},
                    {"args", {{"name", name.empty() ? std::to_string(tid) : name}}}});
    for (const auto& c : t.calls)
      ev.push_back({{"ph", "X"},
                    {"name", c.name},
                    {"cat", category_name(category_of(c.name))},
                    {"pid", t.pid},
                    {"tid", c.tid},
                    {"ts", us(c.start_ns)},
                    {"dur", static_cast<double>(c.dur_ns) / 1e3}});
    if (!p) continue;
    for (const auto& comm : p->comms) {
      if (comm.t_init_complete && comm.init_timings.present()) {
        int64_t end = t.mono_of_log_time(*comm.t_init_complete);
        double total_ns = comm.init_timings.parts.at("total") * 1e9;
        ev.push_back({{"ph", "X"},
                      {"name", "NCCL init " + comm.id},
                      {"cat", "nccl"},
                      {"pid", t.pid},
                      {"tid", comm.init_tid},
                      {"ts", us(end - static_cast<int64_t>(total_ns))},
                      {"dur", total_ns / 1e3},
                      {"args", comm.init_timings.parts}});
      }
      if (comm.t_first_lazy)
        ev.push_back({{"ph", "i"},
                      {"s", "p"},
                      {"name", fmt::format("NCCL lazy connections ({})", comm.lazy_connection_count())},
                      {"cat", "nccl"},
                      {"pid", t.pid},
                      {"tid", comm.init_tid},
                      {"ts", us(t.mono_of_log_time(*comm.t_first_lazy))}});
    }
  }
  return {{"traceEvents", ev}, {"displayTimeUnit", "ms"}};
}

}  // namespace coldstart::trace
