#include "launch/process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>

#include "util/clock.h"
#include "util/env.h"
#include "util/error.h"

namespace coldstart {

pid_t spawn(const SpawnSpec& spec) {
  if (spec.argv.empty()) throw RuntimeError("spawn: empty command");
  std::vector<char*> argv, envp;
  for (const auto& a : spec.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const std::string spawn_key = std::string(kSpawnEnv) + "=";
  for (const auto& e : spec.env)
    if (e.rfind(spawn_key, 0) != 0) envp.push_back(const_cast<char*>(e.c_str()));  // an ancestor's, not ours
  // When the process starts, on the lab's clock at nanoseconds (process_start_mono_ns): /proc says it in 10 ms ticks.
  std::string spawned = spawn_key;
  envp.push_back(spawned.data());
  envp.push_back(nullptr);

  int out_fd = -1;
  if (!spec.output_path.empty()) {
    out_fd = ::open(spec.output_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (out_fd < 0) throw RuntimeError("cannot open " + spec.output_path + ": " + std::strerror(errno));
  }
  // The child reports a failed exec through this pipe; a successful exec closes it.
  int err_pipe[2];
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) throw RuntimeError(std::string("pipe: ") + std::strerror(errno));
  pid_t parent = ::getpid();
  spawned += std::to_string(mono_ns());
  envp[envp.size() - 2] = spawned.data();
  pid_t pid = ::fork();
  if (pid < 0) {
    int e = errno;
    ::close(err_pipe[0]);
    ::close(err_pipe[1]);
    if (out_fd >= 0) ::close(out_fd);
    throw RuntimeError(std::string("fork: ") + std::strerror(e));
  }
  if (pid == 0) {
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, spec.death_signal);
    if (::getppid() != parent) ::_exit(127);  // the lab died before prctl took effect
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    if (spec.stdin_fd >= 0) ::dup2(spec.stdin_fd, 0);
    if (out_fd >= 0) {
      ::dup2(out_fd, 1);
      ::dup2(out_fd, 2);
    } else if (spec.stdout_fd >= 0) {
      ::dup2(spec.stdout_fd, 1);
    }
    ::execve(argv[0], argv.data(), envp.data());
    int e = errno;
    ssize_t ignored = ::write(err_pipe[1], &e, sizeof e);
    (void)ignored;
    ::_exit(127);
  }
  ::setpgid(pid, pid);  // also here, so that the group exists before we might signal it
  ::close(err_pipe[1]);
  if (out_fd >= 0) ::close(out_fd);
  int child_errno = 0;
  ssize_t n;
  do n = ::read(err_pipe[0], &child_errno, sizeof child_errno);
  while (n < 0 && errno == EINTR);
  ::close(err_pipe[0]);
  if (n == sizeof child_errno) {
    int status;
    ::waitpid(pid, &status, 0);
    throw RuntimeError("cannot start " + spec.argv[0] + ": " + std::strerror(child_errno));
  }
  return pid;
}

std::optional<int> try_reap(pid_t pid) {
  int status = 0;
  pid_t r;
  do r = ::waitpid(pid, &status, WNOHANG);
  while (r < 0 && errno == EINTR);
  if (r == pid) return status;
  if (r < 0 && errno == ECHILD) return status;  // already reaped
  return std::nullopt;
}

void kill_group(pid_t pid, int sig) {
  if (pid > 0) ::kill(-pid, sig);
}

void reap_group(pid_t pid) {
  if (pid <= 0) return;
  int status;
  while (::waitpid(-pid, &status, 0) > 0 || errno == EINTR) {
  }
}

bool group_alive(pid_t pid) { return pid > 0 && ::kill(-pid, 0) == 0; }

std::string describe_wait_status(int status) {
  if (WIFEXITED(status)) return "exit " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status))
    return "signal " + std::to_string(WTERMSIG(status)) + " (" + ::strsignal(WTERMSIG(status)) + ")";
  return "status " + std::to_string(status);
}

std::vector<std::string> make_env(const std::vector<std::pair<std::string, std::string>>& set,
                                  const std::vector<std::string>& unset) {
  std::map<std::string, std::string> env = environment([](std::string_view) { return true; });
  for (const auto& k : unset) env.erase(k);
  for (const auto& [k, v] : set) env[k] = v;
  std::vector<std::string> out;
  out.reserve(env.size());
  for (const auto& [k, v] : env) out.push_back(k + "=" + v);
  return out;
}

}  // namespace coldstart
