#include "util/process.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <map>
#include <thread>

#include "util/clock.h"
#include "util/env.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/strings.h"

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
  // The network namespace it starts in, opened here so that a missing one is named before anything forks.
  int ns_fd = -1;
  if (!spec.netns.empty()) {
    ns_fd = ::open(spec.netns.c_str(), O_RDONLY | O_CLOEXEC);
    if (ns_fd < 0) {
      int e = errno;
      if (out_fd >= 0) ::close(out_fd);
      throw RuntimeError("cannot open network namespace " + spec.netns + ": " + std::strerror(e));
    }
  }
  // The child reports a failed exec through this pipe; a successful exec closes it.
  int err_pipe[2];
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
    int e = errno;
    if (ns_fd >= 0) ::close(ns_fd);
    if (out_fd >= 0) ::close(out_fd);
    throw RuntimeError(std::string("pipe: ") + std::strerror(e));
  }
  pid_t parent = ::getpid();
  spawned += std::to_string(mono_ns());
  envp[envp.size() - 2] = spawned.data();
  pid_t pid = ::fork();
  if (pid < 0) {
    int e = errno;
    ::close(err_pipe[0]);
    ::close(err_pipe[1]);
    if (out_fd >= 0) ::close(out_fd);
    if (ns_fd >= 0) ::close(ns_fd);
    throw RuntimeError(std::string("fork: ") + std::strerror(e));
  }
  if (pid == 0) {
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, spec.death_signal);
    if (::getppid() != parent) ::_exit(127);  // the lab died before prctl took effect
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    if (spec.default_signals) {
      struct sigaction dfl {};
      dfl.sa_handler = SIG_DFL;
      for (int sig = 1; sig < NSIG; ++sig) ::sigaction(sig, &dfl, nullptr);  // SIGKILL's and SIGSTOP's fail: fine
    }
    if (spec.stdin_fd >= 0) ::dup2(spec.stdin_fd, 0);
    if (out_fd >= 0) {
      ::dup2(out_fd, 1);
      ::dup2(out_fd, 2);
    } else {
      if (spec.stdout_fd >= 0) ::dup2(spec.stdout_fd, 1);
      if (spec.stderr_fd >= 0) ::dup2(spec.stderr_fd, 2);
    }
    // Into its node (bench --nodes): the network namespace, then a UTS namespace of its own with the node's name.
    int step = 0;  // what failed, for the parent's message: 0 exec, 1 setns, 2 unshare, 3 sethostname
    if (ns_fd >= 0 && ::setns(ns_fd, CLONE_NEWNET) != 0) step = 1;
    if (!step && !spec.hostname.empty() && ::unshare(CLONE_NEWUTS) != 0) step = 2;
    if (!step && !spec.hostname.empty() && ::sethostname(spec.hostname.data(), spec.hostname.size()) != 0) step = 3;
    if (!step) ::execve(argv[0], argv.data(), envp.data());
    int e[2] = {errno, step};
    ssize_t ignored = ::write(err_pipe[1], e, sizeof e);
    (void)ignored;
    ::_exit(127);
  }
  ::setpgid(pid, pid);  // also here, so that the group exists before we might signal it
  ::close(err_pipe[1]);
  if (out_fd >= 0) ::close(out_fd);
  if (ns_fd >= 0) ::close(ns_fd);
  int child_error[2] = {0, 0};  // errno, step
  ssize_t n;
  do n = ::read(err_pipe[0], child_error, sizeof child_error);
  while (n < 0 && errno == EINTR);
  ::close(err_pipe[0]);
  if (n == sizeof child_error) {
    int status;
    ::waitpid(pid, &status, 0);
    const std::string why = std::strerror(child_error[0]);
    switch (child_error[1]) {
      case 1: throw RuntimeError("cannot start " + spec.argv[0] + " in network namespace " + spec.netns + ": " + why);
      case 2: throw RuntimeError("cannot start " + spec.argv[0] + " in a UTS namespace of its own: " + why);
      case 3: throw RuntimeError("cannot start " + spec.argv[0] + " as host " + spec.hostname + ": " + why);
      default: throw RuntimeError("cannot start " + spec.argv[0] + ": " + why);
    }
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

// ---- run_command ----

int RunResult::exit_status() const {
  return end == RunEnd::exited && WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : -1;
}

std::string RunResult::why() const {
  switch (end) {
    case RunEnd::exited:
    case RunEnd::signaled: return describe_wait_status(wait_status);
    case RunEnd::not_found: return "not found";
    case RunEnd::not_executable: return "not executable";
    case RunEnd::cannot_start: return error;
    case RunEnd::timed_out: return "no answer in " + format_seconds(timeout_s) + ": killed";
    case RunEnd::output_cut: return "more than " + format_bytes(static_cast<double>(max_output)) + " of output: killed";
    case RunEnd::stopped: return "stopped: killed";
  }
  return error;
}

namespace {

// argv[0] as exec will take it (a path), or why there is none.
std::optional<RunEnd> locate(const std::string& name, std::string* path) {
  auto found = name.empty() ? std::nullopt : find_on_path(name);
  struct stat st {};
  if (!found || ::stat(found->c_str(), &st) != 0) return RunEnd::not_found;
  if (!S_ISREG(st.st_mode) || ::access(found->c_str(), X_OK) != 0) return RunEnd::not_executable;
  *path = *found;
  return std::nullopt;
}

// What a run keeps of the output: the first max bytes (past them it is over), or with keep_tail the last.
class Capture {
 public:
  Capture(size_t max, bool keep_tail) : max_(max), keep_tail_(keep_tail) {}
  void add(const char* data, size_t n) {
    total_ += n;
    text_.append(data, n);
    if (keep_tail_ && text_.size() > 2 * max_) text_.erase(0, text_.size() - max_);  // now and then, not each time
  }
  bool over() const { return !keep_tail_ && text_.size() > max_; }
  // The text kept, and how much is not in it.
  std::string take(uint64_t* cut) {
    if (text_.size() > max_ && keep_tail_)
      text_.erase(0, text_.size() - max_);
    else if (text_.size() > max_)
      text_.erase(max_);
    *cut = total_ - text_.size();
    return std::move(text_);
  }

 private:
  size_t max_;
  bool keep_tail_;
  uint64_t total_ = 0;
  std::string text_;
};

// Reads what the pipe has, waiting up to wait_ms for it; false at its end (every writer closed it).
bool read_some(int fd, int wait_ms, Capture& out) {
  pollfd p{fd, POLLIN, 0};
  if (::poll(&p, 1, wait_ms) <= 0) return true;
  char buf[65536];
  ssize_t got = ::read(fd, buf, sizeof buf);
  if (got < 0) return errno == EINTR || errno == EAGAIN;
  if (got == 0) return false;
  out.add(buf, static_cast<size_t>(got));
  return true;
}

// Whether the child has exited, leaving it unreaped: its process group's id cannot be reused until it is reaped.
bool has_exited(pid_t pid) {
  siginfo_t info{};
  int r;
  do r = ::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT);
  while (r < 0 && errno == EINTR);
  return r < 0 || info.si_pid == pid;  // an error: reaped by someone else (ECHILD), which also is an end
}

// Runs the started child until it has ended, or until a reason to kill it; the reason, or nothing.
std::optional<RunEnd> watch(pid_t pid, int out_fd, const RunSpec& spec, Capture& out) {
  const int64_t deadline = mono_ns() + static_cast<int64_t>(spec.timeout_s * 1e9);
  bool open = true, exited = false;
  for (;;) {
    if (open)
      open = read_some(out_fd, 10, out);
    else
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    exited = exited || has_exited(pid);
    if (!open && exited) return std::nullopt;
    if (out.over()) return RunEnd::output_cut;
    if (spec.stop && spec.stop()) return RunEnd::stopped;
    if (mono_ns() > deadline) return RunEnd::timed_out;
  }
}

}  // namespace

RunResult run_command(const RunSpec& spec) {
  RunResult r;
  r.timeout_s = spec.timeout_s;
  r.max_output = spec.max_output;
  SpawnSpec child;
  child.argv = spec.argv;
  if (auto missing = child.argv.empty() ? RunEnd::not_found : locate(spec.argv[0], &child.argv[0])) {
    r.end = *missing;
    return r;
  }
  int fds[2];
  const int null_fd = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  if (null_fd < 0 || ::pipe2(fds, O_CLOEXEC) != 0) {
    r.error = std::string("cannot start ") + spec.argv[0] + ": " + std::strerror(errno);
    if (null_fd >= 0) ::close(null_fd);
    return r;
  }
  child.env = make_env({}, {});
  child.stdin_fd = null_fd;
  child.stdout_fd = fds[1];
  child.stderr_fd = spec.with_stderr ? fds[1] : null_fd;
  child.default_signals = true;
  pid_t pid = -1;
  try {
    pid = spawn(child);
  } catch (const RuntimeError& e) {
    r.error = e.what();
  }
  ::close(fds[1]);
  ::close(null_fd);
  Capture out(spec.max_output, spec.keep_tail);
  std::optional<RunEnd> killed;
  if (pid > 0) killed = watch(pid, fds[0], spec, out);
  ::close(fds[0]);
  if (pid <= 0) return r;
  kill_group(pid, SIGKILL);  // what it started goes with it
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  r.wait_status = status;
  r.end = killed ? *killed : WIFSIGNALED(status) ? RunEnd::signaled : RunEnd::exited;
  r.output = out.take(&r.cut_bytes);
  return r;
}

}  // namespace coldstart
