#include "util/proc.h"

#include <sys/syscall.h>

#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "util/fs.h"

namespace coldstart {
namespace {

// A /proc file of a process that may exit meanwhile: a read then fails (ESRCH), and what was read is as good as
// nothing. (Plain reads: libstdc++'s stream buffer throws that error from places a stream cannot catch.)
std::string read_small(const std::string& path) {
  std::string s;
  try {
    s = read_file_limited(path, size_t{1} << 20);
  } catch (const std::runtime_error&) {
    return "";
  }
  while (!s.empty() && (s.back() == '\n' || s.back() == '\0')) s.pop_back();
  return s;
}

// The fields of /proc/<pid>/stat after "(comm)": the name may hold spaces and parentheses, so split at the last ')'.
std::vector<std::string> stat_fields(const std::string& stat) {
  std::vector<std::string> out;
  size_t close = stat.rfind(')');
  if (close == std::string::npos) return out;
  std::istringstream in(stat.substr(close + 1));
  for (std::string f; in >> f;) out.push_back(f);
  return out;
}

std::string state_name(const std::string& s) {
  if (s.empty()) return "";
  switch (s[0]) {
    case 'R': return "R (running)";
    case 'S': return "S (sleeping)";
    case 'D': return "D (disk sleep)";
    case 'T': return "T (stopped)";
    case 't': return "t (tracing stop)";
    case 'Z': return "Z (zombie)";
    default: return s;
  }
}

}  // namespace

std::string syscall_name(long nr) {
  switch (nr) {
    // clang-format off
#define NAME(n) \
  case SYS_##n: return #n;
#ifdef SYS_poll
    NAME(poll)
#endif
#ifdef SYS_select
    NAME(select)
#endif
#ifdef SYS_epoll_wait
    NAME(epoll_wait)
#endif
#ifdef SYS_pause
    NAME(pause)
#endif
#ifdef SYS_nanosleep
    NAME(nanosleep)
#endif
#ifdef SYS_accept
    NAME(accept)
#endif
#ifdef SYS_wait4
    NAME(wait4)
#endif
    NAME(read)
    NAME(write)
    NAME(ioctl)
    NAME(sched_yield)
    NAME(connect)
    NAME(accept4)
    NAME(recvfrom)
    NAME(recvmsg)
    NAME(sendmsg)
    NAME(sendto)
    NAME(futex)
    NAME(ppoll)
    NAME(pselect6)
    NAME(epoll_pwait)
    NAME(clock_nanosleep)
    NAME(rt_sigtimedwait)
    NAME(waitid)
    NAME(mmap)
    NAME(munmap)
    NAME(openat)
    NAME(close)
#undef NAME
      // clang-format on
    default: return "syscall " + std::to_string(nr);
  }
}

std::vector<ThreadState> process_group_threads(pid_t pgid) {
  std::vector<ThreadState> out;
  std::error_code ec;
  for (const auto& proc : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string pid_s = proc.path().filename().string();
    if (pid_s.empty() || pid_s.find_first_not_of("0123456789") != std::string::npos) continue;
    auto f = stat_fields(read_small(proc.path().string() + "/stat"));
    // After the name: state, ppid, pgrp.
    if (f.size() < 3 || std::atoi(f[2].c_str()) != pgid) continue;
    std::error_code ec2;
    for (const auto& task : std::filesystem::directory_iterator(proc.path() / "task", ec2)) {
      ThreadState t;
      t.pid = std::atoi(pid_s.c_str());
      t.tid = std::atoi(task.path().filename().c_str());
      const std::string dir = task.path().string();
      t.name = read_small(dir + "/comm");
      auto tf = stat_fields(read_small(dir + "/stat"));
      if (!tf.empty()) t.state = state_name(tf[0]);
      t.wchan = read_small(dir + "/wchan");
      if (t.wchan == "0") t.wchan.clear();
      std::string sc = read_small(dir + "/syscall");
      if (sc == "running")
        t.syscall = "running";
      else if (!sc.empty()) {
        long nr = std::strtol(sc.c_str(), nullptr, 10);
        t.syscall = nr < 0 ? "not in a system call" : syscall_name(nr);
      }
      out.push_back(std::move(t));
    }
  }
  return out;
}

std::string describe(const ThreadState& t) {
  std::string s =
      (t.name.empty() ? std::to_string(t.tid) : t.name) + ": " + (t.state.empty() ? "?" : t.state.substr(0, 1));
  if (!t.syscall.empty() && t.syscall != "running")
    s += " " + t.syscall;
  else if (!t.wchan.empty())
    s += " " + t.wchan;
  return s;
}

}  // namespace coldstart
