#include "report/perfetto.h"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>

#include "model/phases.h"
#include "util/strings.h"

namespace coldstart::report {
namespace {

constexpr double kGapUs = 50'000;  // between trials on the time axis

// NCCL prints its init timings in this order; they run one after another inside ncclCommInitRankConfig.
constexpr const char* kInitOrder[] = {"kernels", "alloc",  "bootstrap",   "allgathers",
                                      "topo",    "graphs", "connections", "rest"};

// A JSON string literal.
std::string quote(std::string_view s) {
  std::string o = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\')
      o += '\\', o += static_cast<char>(c);
    else if (c < 0x20)
      o += fmt::format("\\u{:04x}", c);
    else
      o += static_cast<char>(c);
  }
  return o + "\"";
}

// Events are written straight to text: a 1,000-trial x 8-rank run has ~200,000 of them.
class Events {
 public:
  void span(std::string_view name, const char* cat, int pid, int tid, double ts, double dur,
            std::string_view args = "") {
    sep();
    fmt::format_to(std::back_inserter(out_),
                   R"({{"name":{},"cat":"{}","ph":"X","pid":{},"tid":{},"ts":{:.3f},"dur":{:.3f})", quote(name), cat,
                   pid, tid, ts, dur);
    if (!args.empty()) fmt::format_to(std::back_inserter(out_), R"(,"args":{{{}}})", args);
    out_ += '}';
  }
  void meta(const char* what, int pid, int tid, std::string_view args) {
    sep();
    fmt::format_to(std::back_inserter(out_), R"({{"name":"{}","ph":"M","pid":{})", what, pid);
    if (tid) fmt::format_to(std::back_inserter(out_), R"(,"tid":{})", tid);
    fmt::format_to(std::back_inserter(out_), R"(,"args":{{{}}}}})", args);
  }
  void instant(std::string_view name, int pid, double ts) {
    sep();
    fmt::format_to(std::back_inserter(out_), R"({{"name":{},"ph":"i","s":"p","pid":{},"tid":1,"ts":{:.3f}}})",
                   quote(name), pid, ts);
  }
  std::string finish() { return "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[" + out_ + "]}\n"; }

 private:
  void sep() {
    if (!out_.empty()) out_ += ",\n";
  }
  std::string out_;
};

struct Part {
  std::string name;
  double dur_us;
  std::string args;
};

// Children laid end to end from `start`, each clamped to end by `end` (so that they nest in their parent).
void end_to_end(Events& ev, const std::vector<Part>& parts, const char* cat, int pid, int tid, double start,
                double end) {
  double t = start;
  for (const auto& p : parts) {
    if (t >= end) break;
    double d = std::min(p.dur_us, end - t);
    if (d <= 0) continue;
    ev.span(p.name, cat, pid, tid, t, d, p.args);
    t += d;
  }
}

}  // namespace

std::string track_name(const BenchResults& r, const TrialResult& t, const RankResult& rank) {
  std::string label = static_cast<size_t>(t.config_id) < r.configs.size()
                          ? r.configs[static_cast<size_t>(t.config_id)].label()
                          : fmt::format("config {}", t.config_id);
  std::string gpu = fmt::format("GPU {}", rank.device_index);
  if (!rank.bus_id.empty()) gpu += ", bus " + rank.bus_id;
  return fmt::format("trial {} · {} · rank {} ({})", t.index, label, rank.rank, gpu);
}

std::string perfetto_trace(const std::vector<const BenchResults*>& runs) {
  Events ev;
  int pid = 0;
  double offset_us = 0;
  for (const BenchResults* r : runs) {
    std::vector<const TrialResult*> trials;
    for (const auto& t : r->trials) trials.push_back(&t);
    std::sort(trials.begin(), trials.end(), [](auto* a, auto* b) { return a->index < b->index; });
    for (const TrialResult* t : trials) {
      double trial_end_us = offset_us + t->wall_ms * 1e3;
      for (const RankResult& rank : t->ranks) {
        ++pid;
        ev.meta("process_name", pid, 0, "\"name\":" + quote(track_name(*r, *t, rank)));
        ev.meta("process_sort_index", pid, 0, fmt::format("\"sort_index\":{}", pid));
        ev.meta("thread_name", pid, 1, R"("name":"phases")");
        for (const PhaseRecord& p : rank.phases) {
          const double ts = offset_us + p.start_ms * 1e3, dur = std::max(0.0, p.dur_ms * 1e3);
          trial_end_us = std::max(trial_end_us, ts + dur);
          std::string args = "\"trial_status\":" + quote(name_of(t->status));
          if (p.name == phase::comm_init && rank.nccl) args += ",\"nccl_version\":" + quote(rank.nccl->version);
          // A background phase (prewarm) runs beside the main thread's phases: its own track.
          const PhaseInfo* info = phase_info(p.name);
          const int tid = info && info->kind == PhaseKind::background ? 3 : 1;
          if (tid == 3) ev.meta("thread_name", pid, 3, R"("name":"background thread")");
          ev.span(p.name, "phase", pid, tid, ts, dur, args);
          // NCCL's own split of init (its log), nested in comm_init.
          if (p.name == phase::comm_init && rank.nccl && !rank.nccl->init_timings_ms.empty()) {
            std::vector<Part> parts;
            for (const char* k : kInitOrder)
              if (auto it = rank.nccl->init_timings_ms.find(k); it != rank.nccl->init_timings_ms.end())
                parts.push_back({std::string("init.") + k, it->second * 1e3, ""});
            end_to_end(ev, parts, "nccl", pid, 1, ts, ts + dur);
          }
          // bench --trace: the CUDA calls inside the phase (the first collective, and cuda_context and comm_init
          // before it), as totals per kind, on their own track.
          const auto phase_calls = rank.phase_calls.find(p.name);
          const auto* calls = p.name == phase::first_enqueue          ? &rank.first_collective_calls
                              : phase_calls != rank.phase_calls.end() ? &phase_calls->second
                                                                      : nullptr;
          if (calls && !calls->empty()) {
            ev.meta("thread_name", pid, 2, R"x("name":"CUDA calls in the phase (totals per kind)")x");
            std::vector<Part> parts;
            for (const auto& [cat, tally] : *calls)
              parts.push_back({fmt::format("{} ×{}", cat, tally.count), tally.ms * 1e3,
                               fmt::format(R"("calls":{},"total_ms":{:.3f},"note":"the calls' total time, laid end to )"
                                           R"(end; coldstart trace shows each call")",
                                           tally.count, tally.ms)});
            end_to_end(ev, parts, "cupti", pid, 2, ts, ts + dur);
          }
        }
        // Cold start done: the rank's first collective completed.
        if (auto ready = rank.ready_ms(); ready && !rank.phases.empty())
          ev.instant(fmt::format("ready ({} ms)", format_ms(*ready)), pid,
                     offset_us + (rank.phases.front().start_ms + *ready) * 1e3);
        // How a rank that did not finish cleanly ended, at the end of its trial.
        std::string note = !rank.error.empty() ? rank.error : rank.exited_cleanly ? "" : rank.exit;
        if (!note.empty()) ev.instant(note, pid, trial_end_us);
      }
      offset_us = trial_end_us + kGapUs;
    }
  }
  return ev.finish();
}

}  // namespace coldstart::report
