#include "trace/run.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "trace/inject.h"
#include "util/clock.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/json.h"
#include "util/process.h"

namespace coldstart::trace {
namespace {

// Waits for the command, passing the signals a user sends coldstart on to the command's process group (received
// synchronously: no handler, no global). A command that outlives a forwarded signal by the grace period is killed.
int wait_forwarding(pid_t child, const sigset_t& forwarded, double grace_s, bool* killed, std::ostream& notes) {
  int64_t signalled_at = 0;
  while (true) {
    if (auto status = try_reap(child)) return *status;
    timespec tick{0, 50'000'000};
    int sig = sigtimedwait(&forwarded, nullptr, &tick);
    if (sig > 0) {
      kill_group(child, sig);
      if (!signalled_at) signalled_at = mono_ns();
    }
    if (signalled_at && !*killed && mono_ns() - signalled_at > static_cast<int64_t>(grace_s * 1e9)) {
      notes << "coldstart trace: the command did not end within " << grace_s
            << " s of the signal; sent SIGKILL (what it recorded is kept)\n";
      kill_group(child, SIGKILL);
      *killed = true;
    }
  }
}

}  // namespace

TraceOutcome run_traced(const TraceRequest& req, std::ostream& notes) {
  if (req.command.empty()) throw InputError("trace: give the command to run after --");
  if (const char* existing = std::getenv("CUDA_INJECTION64_PATH"); existing && *existing)
    throw InputError(std::string("trace: CUDA_INJECTION64_PATH is already set (") + existing +
                     "): another tool injects into CUDA; unset it to trace");
  auto exe = find_on_path(req.command.front());
  if (!exe || ::access(exe->c_str(), X_OK) != 0)
    throw InputError("trace: cannot start '" + req.command.front() +
                     "': " + (exe ? "not an executable file" : "not found on PATH") + "; give the command's path");
  TraceOutcome o;
  std::string made = req.out_dir;
  if (req.out_is_default)
    made = make_unique_output_dir(req.out_dir);
  else
    make_output_dir(req.out_dir, false);
  o.dir = std::filesystem::canonical(made).string();
  auto env = trace_env(o.dir, o.dir + "/nccl.%h.%p.log", req.nccl_log,
                       [](const std::string& k) { return std::getenv(k.c_str()) != nullptr; });
  SpawnSpec spec;
  spec.argv = req.command;
  spec.argv[0] = *exe;
  spec.env = make_env(env, {});
  // Blocked before the command starts, so that no signal falls between; the child unblocks them (spawn).
  sigset_t forwarded, previous;
  sigemptyset(&forwarded);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&forwarded, sig);
  pthread_sigmask(SIG_BLOCK, &forwarded, &previous);
  pid_t child = 0;
  try {
    child = spawn(spec);
  } catch (const RuntimeError& e) {
    pthread_sigmask(SIG_SETMASK, &previous, nullptr);
    std::error_code ec;
    std::filesystem::remove_all(o.dir, ec);  // nothing ran: leave nothing behind
    throw InputError(std::string("trace: ") + e.what());
  }
  std::string ray_vars;
  for (const auto& [k, v] : env) ray_vars += (ray_vars.empty() ? "" : ", ") + ("\"" + k + "\": \"" + v + "\"");
  notes << "coldstart trace: recording into " << o.dir << "\n"
        << "  (Ray workers of a cluster that is already running do not inherit this environment: start it with "
           "ray.init(runtime_env={\"env_vars\": {"
        << ray_vars << "}}))\n";

  o.wait_status = wait_forwarding(child, forwarded, req.grace_s, &o.killed_after_grace, notes);
  kill_group(child, SIGKILL);  // nothing of the command outlives it
  reap_group(child);
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  o.exit_code = WIFEXITED(o.wait_status) ? WEXITSTATUS(o.wait_status) : 128 + WTERMSIG(o.wait_status);

  auto traces = read_trace_dir(o.dir);
  auto logs = read_nccl_logs(o.dir);
  o.budgets = budgets(traces, logs);
  write_file_atomic(o.dir + "/trace.json", dump_json(perfetto(traces, logs)) + "\n");
  write_file_atomic(o.dir + "/budget.json", dump_json(budgets_json(o.budgets), 1) + "\n");
  return o;
}

}  // namespace coldstart::trace
