// An experiment, never shipped: grows the process's file-descriptor table before main, while the process has one
// thread. Linux grows the table by doubling when an fd past its end is handed out (64 -> 128 -> 256 -> ...); in a
// process of several threads every growth first waits out an RCU grace period (fs/file.c, expand_fdtable), and every
// other fd handed out in that process waits with it. Growing it here, single-threaded, costs no such wait.
//   cc -O2 -shared -fPIC -o fd_table_preload.so nccl/gpu/fd_table_preload.c
//   LD_PRELOAD=$PWD/fd_table_preload.so [COLDSTART_FD_TABLE=1024] program ...
// coldstart bench interleaves it as a configuration: --env LD_PRELOAD=,/abs/path/fd_table_preload.so
#define _GNU_SOURCE  // dup3
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

__attribute__((constructor)) static void grow_fd_table(void) {
  const char* want = getenv("COLDSTART_FD_TABLE");
  long n = want && *want ? strtol(want, NULL, 10) : 1024;
  if (n < 2 || n > 1 << 20) return;
  int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  // The table is never shrunk while the process lives: one fd at the end is enough to keep it n long.
  if (dup3(fd, (int)n - 1, O_CLOEXEC) >= 0) close((int)n - 1);
  close(fd);
}
