#include "launch/trial.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#include <atomic>

#include "util/clock.h"
#include "util/error.h"
#include "util/strings.h"

namespace coldstart::launch {
namespace {
std::atomic<bool> g_interrupted{false};
void on_signal(int) { g_interrupted.store(true); }

}  // namespace

void install_interrupt_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  // Ctrl-C, a kill, a closed terminal, and a reader that went away (`bench ... 2>&1 | head`): each ends the run the
  // same way, finished trials kept. (Handlers, not SIG_IGN, so that ranks start with the default dispositions.)
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGPIPE}) sigaction(sig, &sa, nullptr);
}

bool interrupted() { return g_interrupted.load(); }

namespace {

// Stops every rank still running (its whole process group) and reaps what is left.
void stop_all(TrialRun& run) {
  for (auto& e : run.exits)
    if (e.pid > 0) kill_group(e.pid, SIGKILL);
  for (auto& e : run.exits) {
    if (e.pid <= 0) continue;
    if (!e.ended) {
      int status = 0;
      ::waitpid(e.pid, &status, 0);
      e.reaped_ns = mono_ns();
      e.how = "stopped by the lab";
      e.stopped = true;
    }
    reap_group(e.pid);
  }
}

// Starts every rank; false when one cannot be, the trial then an error naming it and nothing left running.
bool spawn_ranks(const TrialLaunch& launch, TrialRun& run) {
  for (size_t r = 0; r < launch.ranks.size(); ++r) {
    try {
      run.exits[r].pid = spawn(launch.ranks[r]);
      run.exits[r].spawned_ns = mono_ns();
    } catch (const RuntimeError& e) {
      stop_all(run);
      for (auto& x : run.exits)
        if (x.pid <= 0) x.how = "not started";
      run.status = TrialStatus::error;
      run.message = "rank " + std::to_string(r) + ": " + e.what();
      run.t_end_ns = mono_ns();
      return false;
    }
  }
  return true;
}

// How the wait for the ranks ended: the ranks that failed (in the order they ended), and whether it timed out.
struct Waited {
  std::vector<int> failed;
  bool timed_out = false;
};

// Serves the coordinator and reaps ranks until every rank has ended, the watchdog fires, this process is interrupted
// (run.status), or a failure is failure_grace_s old.
Waited wait_for_ranks(coord::Server& server, const TrialLaunch& launch, TrialRun& run) {
  const int n = static_cast<int>(run.exits.size());
  const int64_t deadline = run.t0_ns + static_cast<int64_t>(launch.timeout_s * 1e9);
  int64_t first_failure = 0;
  Waited w;
  int ended = 0;
  while (true) {
    server.poll(5);
    int64_t now = mono_ns();
    for (int r = 0; r < n; ++r) {
      RankExit& e = run.exits[static_cast<size_t>(r)];
      if (e.ended) continue;
      auto st = try_reap(e.pid);
      if (!st) continue;
      e.ended = true;
      e.reaped_ns = now;
      e.wait_status = *st;
      e.how = describe_wait_status(*st);
      ++ended;
      if (!(WIFEXITED(*st) && WEXITSTATUS(*st) == 0)) {
        w.failed.push_back(r);
        if (!first_failure) first_failure = now;
      }
    }
    for (int r = 0; r < n && !first_failure; ++r)
      if (!server.rank(r).error.empty()) first_failure = now;
    if (ended == n) break;
    if (interrupted()) {
      run.status = TrialStatus::interrupted;
      break;
    }
    if (now > deadline) {
      w.timed_out = true;
      break;
    }
    if (first_failure && now - first_failure > static_cast<int64_t>(launch.failure_grace_s * 1e9)) break;
  }
  return w;
}

// The trial's status and message, once every rank is stopped: a hang names the ranks it waited for, an error the
// first rank that failed (or ended without a result) and why.
void judge(const coord::Server& server, const TrialLaunch& launch, const Waited& w, TrialRun& run) {
  const int n = static_cast<int>(run.exits.size());
  if (run.status == TrialStatus::interrupted) {
    run.message = "interrupted";
    return;
  }
  std::vector<int> silent;  // ended without a result
  for (int r = 0; r < n; ++r)
    if (!server.rank(r).done) silent.push_back(r);
  if (w.timed_out) {
    run.status = TrialStatus::hang;
    // The ranks it waited for: those without a result, or, where every rank had reported, those still running.
    std::vector<int> running;
    for (int r = 0; r < n; ++r)
      if (!run.exits[static_cast<size_t>(r)].ended) running.push_back(r);
    run.message = "timeout after " + format_seconds(launch.timeout_s) + "; " +
                  (!silent.empty() ? "ranks " + format_ranks(silent) + " had not finished"
                                   : "every rank had reported, but ranks " + format_ranks(running) + " had not exited");
  } else if (!w.failed.empty()) {
    run.status = TrialStatus::error;
    int r = w.failed.front();
    const auto& slot = server.rank(r);
    run.message = "rank " + std::to_string(r) + " " + run.exits[static_cast<size_t>(r)].how +
                  (slot.error.empty() ? "" : ": " + slot.error);
    // A rank the coordinator turned away (token, protocol version, a stale trial) never joined: say why.
    if (!slot.seen && !server.refusals().empty())
      run.message += "; the coordinator refused a connection: " + server.refusals().front();
  } else if (!silent.empty()) {
    run.status = TrialStatus::error;
    int r = silent.front();
    const auto& slot = server.rank(r);
    run.message =
        "rank " + std::to_string(r) + " ended without a result" + (slot.error.empty() ? "" : ": " + slot.error);
  }
}

}  // namespace

TrialRun run_trial(coord::Server& server, const TrialLaunch& launch) {
  const int n = static_cast<int>(launch.ranks.size());
  TrialRun run;
  run.exits.assign(static_cast<size_t>(n), RankExit{});
  server.begin_trial(launch.trial_id, n);
  run.t0_ns = mono_ns();
  // Orphaned grandchildren of a rank become our children, so that they can be reaped rather than left as zombies.
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  if (!spawn_ranks(launch, run)) return run;
  const Waited w = wait_for_ranks(server, launch, run);
  if (w.timed_out)  // what every thread of a rank still running was doing, before it is stopped
    for (auto& e : run.exits)
      if (!e.ended && e.pid > 0) e.threads = process_group_threads(e.pid);
  // Results are written just before a rank exits: read what is still in the sockets.
  for (int i = 0; i < 20 && !server.all_done(); ++i) server.poll(i == 0 ? 0 : 1);
  stop_all(run);
  run.t_end_ns = mono_ns();
  judge(server, launch, w, run);
  return run;
}

}  // namespace coldstart::launch
