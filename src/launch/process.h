// Child processes for ranks. Each child leads its own process group (so a trial is stopped by killing whole groups,
// grandchildren included) and gets SIGKILL when the lab dies (PR_SET_PDEATHSIG), so no rank outlives its lab.
#pragma once
#include <signal.h>
#include <sys/types.h>

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
  int death_signal = SIGKILL;     // what the child gets when the lab dies (SIGTERM lets a helper shut down cleanly)
};

// Starts the child; throws RuntimeError naming argv[0] when it cannot be executed.
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

}  // namespace coldstart
