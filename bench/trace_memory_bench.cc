// The tracer's memory: makes N recorded CUDA calls (cudaDeviceGetPCIBusId, a peer query the tracer records) in one
// process and prints the process's peak resident memory before and after, and the calls the tracer wrote. Run it
// under the tracer on a GPU node:
//   COLDSTART_TRACE_DIR=/tmp/t CUDA_INJECTION64_PATH=$PWD/build/libcoldstart_cupti.so build/trace_memory_bench 1000000
// Target: <= 64 MiB per process for 1 M recorded calls.
#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

namespace {
long peak_rss_kib() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::atol(line.c_str() + 6);
  return -1;
}
}  // namespace

int main(int argc, char** argv) {
  long n = argc > 1 ? std::atol(argv[1]) : 1000000;
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    std::fprintf(stderr, "trace_memory_bench: no GPU\n");
    return 1;
  }
  char bus[32];
  cudaDeviceGetPCIBusId(bus, sizeof bus, 0);  // the tracer is loaded and CUDA initialised
  long before = peak_rss_kib();
  for (long i = 0; i < n; ++i) cudaDeviceGetPCIBusId(bus, sizeof bus, 0);
  long after = peak_rss_kib();
  std::printf("calls %ld  peak RSS before %.1f MiB  after %.1f MiB  growth %.1f MiB\n", n, before / 1024.0,
              after / 1024.0, (after - before) / 1024.0);
  return 0;
}
