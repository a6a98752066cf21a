// A minimal NCCL start-up, to hold bench's comm_init against: one process per rank, started by a shell, each doing
// only context creation, ncclGetUniqueId (rank 0), a file-based meeting, ncclCommInitRank and one 1-element
// all-reduce. Variants switch on one difference from coldstart's worker at a time:
//   --dlopen      load NCCL with dlopen (coldstart's loader) instead of the link
//   --pre-calls   the worker's CUDA calls before init (device properties, a stream, memory info)
// Prints one JSON line per rank: {"rank", "variant", "context_ms", "init_ms", "first_ms"}.
//   init_probe --rank R --nranks N --device D --dir SHARED_DIR [--dlopen [--nccl-lib PATH]] [--pre-calls]
#include <cuda_runtime_api.h>
#include <nccl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "gpu/nccl.h"

namespace {

double now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "init_probe: %s failed\n", what);
    std::exit(1);
  }
}

// Waits until `path` exists (another rank wrote it atomically), up to 60 s.
void wait_for(const std::string& path) {
  for (int i = 0; i < 60000 && !std::filesystem::exists(path); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  check(std::filesystem::exists(path), path.c_str());
}

void write_atomic(const std::string& path, const void* data, size_t n) {
  std::string tmp = path + ".tmp" + std::to_string(::getpid());
  std::ofstream(tmp, std::ios::binary).write(static_cast<const char*>(data), static_cast<std::streamsize>(n));
  std::filesystem::rename(tmp, path);
}

}  // namespace

int main(int argc, char** argv) {
  int rank = 0, nranks = 2, device = 0;
  bool use_dlopen = false, pre_calls = false;
  std::string dir, lib_path;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&] { return i + 1 < argc ? std::string(argv[++i]) : std::string(); };
    if (a == "--rank")
      rank = std::atoi(next().c_str());
    else if (a == "--nranks")
      nranks = std::atoi(next().c_str());
    else if (a == "--device")
      device = std::atoi(next().c_str());
    else if (a == "--dir")
      dir = next();
    else if (a == "--nccl-lib")
      lib_path = next();
    else if (a == "--dlopen")
      use_dlopen = true;
    else if (a == "--pre-calls")
      pre_calls = true;
  }
  check(!dir.empty(), "--dir");
  const double t0 = now_ms();
  check(cudaSetDevice(device) == cudaSuccess && cudaFree(nullptr) == cudaSuccess, "context");
  const double t1 = now_ms();
  if (pre_calls) {
    cudaDeviceProp prop{};
    cudaStream_t s = nullptr;
    size_t free_b = 0, total_b = 0;
    check(cudaGetDeviceProperties(&prop, device) == cudaSuccess, "cudaGetDeviceProperties");
    check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) == cudaSuccess, "cudaStreamCreate");
    check(cudaMemGetInfo(&free_b, &total_b) == cudaSuccess, "cudaMemGetInfo");
  }
  // The two ways of reaching NCCL: the link, or coldstart's dlopen table.
  coldstart::nccl::Library lib;
  if (use_dlopen) lib = coldstart::nccl::load(lib_path);
  ncclUniqueId id{};
  const std::string id_file = dir + "/uid";
  if (rank == 0) {
    check((use_dlopen ? static_cast<int>(lib.fn.GetUniqueId(reinterpret_cast<coldstart::nccl::UniqueId*>(&id)))
                      : static_cast<int>(ncclGetUniqueId(&id))) == 0,
          "ncclGetUniqueId");
    write_atomic(id_file, &id, sizeof id);
  } else {
    wait_for(id_file);
    std::ifstream(id_file, std::ios::binary).read(reinterpret_cast<char*>(&id), sizeof id);
  }
  // Meet: every rank starts init at about the same moment, as bench's barrier makes them.
  const std::string here = dir + "/ready." + std::to_string(rank);
  write_atomic(here, "1", 1);
  for (int r = 0; r < nranks; ++r) wait_for(dir + "/ready." + std::to_string(r));
  const double t2 = now_ms();
  ncclComm_t comm = nullptr;
  if (use_dlopen) {
    coldstart::nccl::Config cfg = coldstart::nccl::default_config();
    coldstart::nccl::Comm c = nullptr;
    check(lib.fn.CommInitRankConfig(&c, nranks, *reinterpret_cast<coldstart::nccl::UniqueId*>(&id), rank, &cfg) == 0,
          "ncclCommInitRankConfig");
    comm = reinterpret_cast<ncclComm_t>(c);
  } else {
    check(ncclCommInitRank(&comm, nranks, id, rank) == ncclSuccess, "ncclCommInitRank");
  }
  const double t3 = now_ms();
  float* x = nullptr;
  cudaStream_t stream = nullptr;
  check(cudaMalloc(&x, sizeof(float)) == cudaSuccess, "cudaMalloc");
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) == cudaSuccess, "cudaStreamCreate");
  const double t4 = now_ms();
  int rc = use_dlopen ? static_cast<int>(lib.fn.AllReduce(x, x, 1, coldstart::nccl::Float32, coldstart::nccl::Sum,
                                                          reinterpret_cast<coldstart::nccl::Comm>(comm), stream))
                      : static_cast<int>(ncclAllReduce(x, x, 1, ncclFloat, ncclSum, comm, stream));
  check(rc == 0 && cudaStreamSynchronize(stream) == cudaSuccess, "all-reduce");
  const double t5 = now_ms();
  std::printf("{\"rank\": %d, \"variant\": \"%s%s\", \"context_ms\": %.3f, \"init_ms\": %.3f, \"first_ms\": %.3f}\n",
              rank, use_dlopen ? "dlopen" : "linked", pre_calls ? "+pre-calls" : "", t1 - t0, t3 - t2, t5 - t4);
  if (use_dlopen)
    lib.fn.CommDestroy(reinterpret_cast<coldstart::nccl::Comm>(comm));
  else
    ncclCommDestroy(comm);
  return 0;
}
