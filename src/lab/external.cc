#include "lab/external.h"

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "coord/server.h"
#include "lab/bench.h"
#include "model/summary.h"
#include "report/table.h"
#include "util/clock.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/json.h"
#include "util/strings.h"

namespace coldstart::lab {
namespace {
using nlohmann::json;

// The configuration of this launch: the launcher (masked or not) and NCCL_CUMEM_ENABLE as rank 0 ran.
Config external_config(const ExternalRun& run) {
  Config c;
  c.launcher = run.who.launcher + (run.masked ? " (masked)" : "");
  const char* cumem = std::getenv("NCCL_CUMEM_ENABLE");
  c.env.push_back({"NCCL_CUMEM_ENABLE", cumem ? std::optional<std::string>(cumem) : std::nullopt});
  if (const char* init = std::getenv("COLDSTART_TORCH_INIT"); init && *init)
    c.env.push_back({"COLDSTART_TORCH_INIT", init});
  return c;
}

std::vector<std::string> read_lines(const std::string& path) {
  std::vector<std::string> out;
  if (!std::filesystem::exists(path)) return out;
  for (auto& l : split(read_file(path), '\n'))
    if (!trim(l).empty()) out.push_back(std::string(l));
  return out;
}

}  // namespace

json external_trial_line(const ExternalRun& run, const coord::Server& server, int64_t server_real_minus_mono_ns) {
  const std::string here = hostname();
  TrialResult t;
  t.status = TrialStatus::ok;
  // Only the ranks that joined have slots and results: a trial of a huge declared world with few ranks stays small.
  struct Joined {
    int rank;
    const coord::RankSlot* slot;
    std::optional<RankReport> report;
    std::string malformed;
    int64_t shift = 0;
  };
  std::vector<Joined> joined;
  int64_t t0 = INT64_MAX;
  for (const auto& [r, s] : server.joined()) {
    Joined j{r, &s, std::nullopt, "", 0};
    if (s.done && (j.report = parse_report(s.result, &j.malformed))) {
      if (!s.host.empty() && s.host != here)
        j.shift = clock_shift_ns(*j.report, s.clock_offset_ns, server_real_minus_mono_ns);
      for (const auto& p : j.report->phases) t0 = std::min(t0, p.start_ns + j.shift);
    }
    joined.push_back(std::move(j));
  }
  if (t0 == INT64_MAX) t0 = mono_ns();
  std::vector<std::string> missing;
  std::vector<int> never;
  for (int r = 0, k = 0; r < server.nranks(); ++r)
    if (k >= static_cast<int>(joined.size()) || joined[static_cast<size_t>(k)].rank != r)
      never.push_back(r);
    else
      ++k;
  for (const auto& j : joined) {
    const coord::RankSlot& s = *j.slot;
    RankResult rr;
    if (j.report) {
      rr = rank_result_from_report(*j.report, t0, j.shift);
    } else {
      rr.rank = j.rank;
      rr.host = s.host;
      rr.pid = s.pid;
      rr.error = j.malformed;
      if (!s.done)
        missing.push_back(fmt::format("rank {} {}", j.rank, s.in_phase ? "in " + s.phase : "after " + s.phase));
    }
    rr.last_phase = s.phase;
    rr.in_phase = s.in_phase;
    if (rr.error.empty()) rr.error = s.error;
    if (!rr.error.empty() && t.ok()) {
      t.status = TrialStatus::error;
      t.message = fmt::format("rank {}: {}", j.rank, rr.error);
    }
    t.ranks.push_back(std::move(rr));
  }
  if (!never.empty())
    missing.push_back((never.size() == 1 ? "rank " : "ranks ") + format_ranks(never) + " never connected");
  // A rank that never reported explains the others' errors (they time out waiting for it).
  if (!missing.empty()) {
    t.status = TrialStatus::hang;
    t.message = "timeout after " + format_seconds(run.timeout_s) + "; " + join(missing, "; ");
  }
  t.refusals = server.refusals();
  t.refused = server.refusal_count();
  for (const auto& r : t.ranks)
    if (!r.phases.empty()) t.wall_ms = std::max(t.wall_ms, r.phases.back().start_ms + r.phases.back().dur_ms);
  json line = t;
  line["config"] = external_config(run);
  return line;
}

BenchResults rebuild_external_results(const std::string& out_dir) {
  BenchResults r;
  std::map<std::string, int> ids;
  int index = 0;
  for (const auto& text : read_lines(out_dir + "/results.jsonl")) {
    json line = json::parse(text, nullptr, false);
    if (line.is_discarded() || !line.contains("config")) continue;  // a torn last line of an interrupted write
    Config c = line["config"].get<Config>();
    auto [it, added] = ids.try_emplace(c.key(), static_cast<int>(r.configs.size()));
    if (added) {
      c.id = it->second;
      r.configs.push_back(c);
    }
    TrialResult t = trial_from_json(line);
    t.index = index++;
    const int id = it->second;
    t.config_id = id;
    t.repeat = static_cast<int>(
        std::count_if(r.trials.begin(), r.trials.end(), [&](const TrialResult& x) { return x.config_id == id; }));
    r.trials.push_back(std::move(t));
  }
  return r;
}

int run_external(const ExternalRun& run, int64_t main_entry_ns) {
  const worker::WorkerOptions& wo = run.worker;
  if (wo.rank != 0) return worker::run_worker(wo, main_entry_ns);

  std::unique_ptr<coord::Server> owned;
  try {
    owned = std::make_unique<coord::Server>(coord::ServerOptions{run.bind, wo.coord_port, wo.token});
  } catch (const RuntimeError& e) {
    throw RuntimeError(std::string(e.what()) +
                       "; give every rank a free port with COLDSTART_COORD_PORT=PORT or "
                       "--coord HOST:PORT");
  }
  coord::Server& server = *owned;
  server.begin_trial(wo.trial, wo.nranks);
  std::atomic<bool> worker_done{false};
  const int64_t deadline = mono_ns() + static_cast<int64_t>(run.timeout_s * 1e9);
  std::thread serve([&] {
    // Until every rank has reported, or every rank that joined has ended one way or another after rank 0's own
    // worker finished, or the timeout.
    while (!server.all_done() && mono_ns() < deadline) {
      server.poll(20);
      if (worker_done.load()) {
        const auto& joined = server.joined();
        bool settled = joined.size() == static_cast<size_t>(server.nranks()) &&
                       std::all_of(joined.begin(), joined.end(), [](const auto& kv) {
                         const coord::RankSlot& s = kv.second;
                         return s.done || (s.seen && !s.connected) || !s.error.empty();
                       });
        if (settled) break;
      }
    }
  });
  int status = worker::run_worker(wo, main_entry_ns);
  worker_done.store(true);
  serve.join();

  json line = external_trial_line(run, server, real_ns() - mono_ns());
  std::filesystem::create_directories(run.out_dir);
  append_line_durable(run.out_dir + "/results.jsonl", dump_json(line));
  BenchResults all = rebuild_external_results(run.out_dir);
  all.context = new_run_context(run.argv);
  all.spec.world = wo.nranks;
  all.spec.trials = static_cast<int>(all.trials.size());
  all.summaries = summarize(all.configs, all.trials, {}, wo.nranks);
  write_file_atomic(run.out_dir + "/results.json", dump_json(json(all), 1) + "\n");
  const TrialResult& last = all.trials.back();
  std::cout << fmt::format("coldstart: {} trial {} {}{}; {} trial(s) in {}/results.json\n", run.who.launcher,
                           last.index, last.status, last.message.empty() ? "" : " — " + last.message, all.trials.size(),
                           run.out_dir)
            << report::render_table(all);
  return status != 0 ? status : (last.ok() ? 0 : 1);
}

}  // namespace coldstart::lab
