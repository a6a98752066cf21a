// What a process's threads are doing, from /proc: for a hung trial, "rank 1 in comm_init; NCCL's service thread in
// poll" without a debugger.
#pragma once
#include <sys/types.h>

#include <string>
#include <vector>

namespace coldstart {

struct ThreadState {
  int pid = 0;  // the process (a rank's worker, or a child in its process group)
  int tid = 0;
  std::string name;     // /proc/<pid>/task/<tid>/comm
  std::string state;    // "S (sleeping)", "R (running)", "D (disk sleep)", "T (stopped)", ...
  std::string wchan;    // kernel function it waits in, "" when running or unreadable
  std::string syscall;  // "poll", "futex", "syscall 435"; "running" when not in a system call; "" if unreadable
};

// Every thread of every live process in process group `pgid` (a rank's group: its worker and what the worker
// started). Unreadable entries are left empty, never an error: the process may exit while we read.
std::vector<ThreadState> process_group_threads(pid_t pgid);

// "name: S futex" — one thread, short.
std::string describe(const ThreadState& t);

// A system call's name from its number on this architecture ("syscall N" for ones not in the table).
std::string syscall_name(long nr);

}  // namespace coldstart
