// An experiment, never shipped: how long handing out one more fd takes when the fd table must grow, in a process
// of one thread and of two. Opens 1,100 sockets one by one and prints every socket() that took over 1 ms, with its fd.
//   cc -O2 -static -pthread -o fd_growth nccl/gpu/fd_growth.c && ./fd_growth 1 && ./fd_growth 2
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec * 1e-6;
}

static void* idle(void* arg) {
  (void)arg;
  pause();
  return NULL;
}

int main(int argc, char** argv) {
  int threads = argc > 1 ? atoi(argv[1]) : 1;
  pthread_t t;
  if (threads > 1 && pthread_create(&t, NULL, idle, NULL) != 0) return 1;
  double slowest = 0, total = 0;
  for (int i = 0; i < 1100; i++) {
    double a = now_ms();
    int fd = socket(AF_UNIX, SOCK_DGRAM, 0);
    double d = now_ms() - a;
    if (fd < 0) {
      perror("socket");
      return 1;
    }
    total += d;
    if (d > slowest) slowest = d;
    if (d > 1) printf("threads %d: fd %d took %.2f ms\n", threads, fd, d);
  }
  printf("threads %d: 1100 sockets in %.2f ms, slowest %.2f ms\n", threads, total, slowest);
  return 0;
}
