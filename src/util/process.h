// Child processes: ranks, and the commands coldstart asks something of. Each child leads its own process group (so a
// trial is stopped by killing whole groups, grandchildren included) and gets SIGKILL when the lab dies
// (PR_SET_PDEATHSIG), so no rank outlives its lab. run_command runs one command to its end and says why it failed.
#pragma once
#include <signal.h>
#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace coldstart {

struct SpawnSpec {
  std::vector<std::string> argv;  // argv[0] is a path
  std::vector<std::string> env;   // the whole environment, KEY=VALUE
  std::string output_path;        // stdout and stderr go here (appended); empty: inherit
  int stdin_fd = -1;              // the child's stdin (else inherited)
  int stdout_fd = -1;             // the child's stdout, when no output_path (else inherited)
  int stderr_fd = -1;             // the child's stderr, when no output_path (else inherited)
  bool default_signals = false;   // every signal's disposition back to the default (one ignored here included)
  int death_signal = SIGKILL;     // what the child gets when the lab dies (SIGTERM lets a helper shut down cleanly)
  std::string netns;              // a network namespace to start in (/run/netns/NAME); empty: this process's
  std::string hostname;           // the child's own UTS namespace with this hostname; empty: this process's
};

// Starts the child; throws RuntimeError naming argv[0] when it cannot be executed (or, with netns or hostname, the
// namespace it could not enter).
pid_t spawn(const SpawnSpec& spec);

// Non-blocking: the wait status if the child has ended, nothing if it runs.
std::optional<int> try_reap(pid_t pid);
// Sends sig to the child's process group (which the child leads).
void kill_group(pid_t pid, int sig);
// Waits for every process of the group that is our child (after kill_group); orphans count when we are a subreaper.
void reap_group(pid_t pid);
// Whether any process is left in the group.
bool group_alive(pid_t pid);

// "exit 0", "exit 3", "signal 9 (Killed)".
std::string describe_wait_status(int status);

// The environment of this process with `set` applied (KEY=VALUE replaces) and the keys in `unset` removed.
std::vector<std::string> make_env(const std::vector<std::pair<std::string, std::string>>& set,
                                  const std::vector<std::string>& unset);

// One command run to its end with its output captured: the one runner behind every command coldstart asks something
// of (doctor net's wslinfo, nccl build's interpreter and download). Without a shell, stdin on /dev/null, in a process
// group of its own (spawn), environment this process's. It has ended when it has exited and its stdout is closed (a
// grandchild holding stdout open keeps it running); then, or when it times out, writes past its cap or is stopped,
// what is left of its process group is killed.
struct RunSpec {
  std::vector<std::string> argv;        // argv[0]: a path, or a name found on PATH
  double timeout_s = 60;                // then it is killed (RunEnd::timed_out)
  size_t max_output = size_t{1} << 20;  // the cap on what is kept of its output
  bool keep_tail = false;               // past the cap: keep its last max_output bytes and let it run (else killed)
  bool with_stderr = false;             // stderr into the output too (else on /dev/null)
  std::function<bool()> stop;           // asked while it runs: true kills it (RunEnd::stopped)
};

// How a run ended, from the one success (exited, status 0) to each way it fails.
enum class RunEnd {
  exited,          // exit_status() says with what
  not_found,       // argv[0] is no file, or no executable of that name is on PATH
  not_executable,  // argv[0] is not a regular file we may execute
  cannot_start,    // it is, but the pipe, fork or exec failed (`error` says why)
  timed_out,       // still running (or its stdout still open) after timeout_s: killed
  signaled,        // killed by a signal it did not get from us
  output_cut,      // wrote more than max_output (without keep_tail): killed
  stopped,         // spec.stop said so: killed
};

struct RunResult {
  RunEnd end = RunEnd::cannot_start;
  int wait_status = 0;     // when it ran (for the ends where we killed it, the kill's)
  std::string output;      // stdout (and stderr), at most max_output bytes: the first, or with keep_tail the last
  uint64_t cut_bytes = 0;  // how much of what it wrote is not in `output`
  std::string error;       // cannot_start: "cannot start PATH: Exec format error"
  double timeout_s = 0;    // the spec's, for why()
  size_t max_output = 0;   // likewise

  bool ok() const { return end == RunEnd::exited && exit_status() == 0; }
  int exit_status() const;  // -1 unless it exited
  // Why it ended, for a message: "exit 3", "signal 9 (Killed)", "not found", "not executable", "cannot start ...",
  // "no answer in 5 s: killed", "more than 1 MiB of output: killed", "stopped: killed".
  std::string why() const;
};

RunResult run_command(const RunSpec& spec);

}  // namespace coldstart
