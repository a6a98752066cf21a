// NCCL, loaded at run time. Its few types are declared here so that the binary builds without NCCL and one build can
// compare several NCCL libraries on the same node (--nccl-lib). Every call goes through one table.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

namespace coldstart::nccl {

using Comm = struct ncclComm*;
struct UniqueId {
  char internal[128];
};
enum Result : int { Success = 0 };
enum DataType : int { Int8 = 0, Float32 = 7 };
enum RedOp : int { Sum = 0 };

// ncclConfig_t as of NCCL 2.19 (our minimum). Newer NCCL reads older configs by their size and version fields.
struct Config {
  size_t size;
  unsigned int magic;
  unsigned int version;
  int blocking;
  int cgaClusterSize;
  int minCTAs;
  int maxCTAs;
  const char* netName;
  int splitShare;
};
Config default_config();

constexpr int kMultiRankGpuVersion = 23000;  // NCCL_MULTI_RANK_GPU_ENABLE: several ranks on one GPU
constexpr int kSuspendMem = 0x01;            // NCCL_SUSPEND_MEM, ncclCommSuspend's flag
constexpr int kMinVersion = 21900;           // ncclCommInitRankConfig, ncclCommSplit, ncclConfig_t as above

struct Table {
  Result (*GetVersion)(int*);
  Result (*GetUniqueId)(UniqueId*);
  Result (*CommInitRankConfig)(Comm*, int, UniqueId, int, Config*);
  Result (*CommSplit)(Comm, int, int, Comm*, Config*);
  Result (*CommDestroy)(Comm);
  Result (*CommFinalize)(Comm);      // optional (2.14+ has it): flushes a communicator's work before CommDestroy
  Result (*CommAbort)(Comm);         // optional: frees a communicator without waiting for its work (a hang, an error)
  Result (*CommSuspend)(Comm, int);  // optional (2.30+): releases a communicator's memory until CommResume
  Result (*CommResume)(Comm);        // optional (2.30+)
  Result (*CommGetAsyncError)(Comm, Result*);
  const char* (*GetErrorString)(Result);
  const char* (*GetLastError)(Comm);
  Result (*AllReduce)(const void*, void*, size_t, DataType, RedOp, Comm, cudaStream_t);
  Result (*AllGather)(const void*, void*, size_t, DataType, Comm, cudaStream_t);
  Result (*ReduceScatter)(const void*, void*, size_t, DataType, RedOp, Comm, cudaStream_t);
  Result (*Broadcast)(const void*, void*, size_t, DataType, int, Comm, cudaStream_t);
  Result (*Send)(const void*, size_t, DataType, int, Comm, cudaStream_t);
  Result (*Recv)(void*, size_t, DataType, int, Comm, cudaStream_t);
  Result (*GroupStart)();
  Result (*GroupEnd)();
};

struct Library {
  Table fn{};
  std::string path;                    // the file actually loaded (resolved)
  int version = 0;                     // e.g. 22809
  std::string version_string() const;  // "2.28.9"
  std::vector<std::string> patches;    // coldstart's NCCL patches built into it (nccl/): "peer-regions"
  std::string name() const;            // the version and its patches: "2.30.7", "2.30.7+peer-regions"
  void* handle = nullptr;
};

// Where a NCCL library is looked for, in order: explicit (--nccl-lib), $COLDSTART_NCCL_LIB, the loader's search path
// (libnccl.so.2), well-known places (CUDA toolkit, Debian/Ubuntu, a Python nvidia/nccl/lib beside python3 on PATH).
std::vector<std::string> candidate_paths(const std::string& explicit_path);

// coldstart's patches (nccl/series) found in the library file at `path`, by the parameter each adds: a patched and
// a stock build of one release report the same version, and results must tell them apart.
std::vector<std::string> patches_in(const std::string& path);

// What can be known of an explicit library without loading it, as a dry run must know it: a path (one with '/') must
// name a regular file this process can read, with an ELF shared object's header. Throws InputError starting with
// `what` ("--nccl-lib X"); a bare name (libnccl.so.2) is the loader's to find, and passes.
void check_file(const std::string& what, const std::string& path);

// Loads the first candidate that opens. Throws InputError for an explicit path that is missing, is not NCCL or is older
// than kMinVersion; RuntimeError when nothing is found.
Library load(const std::string& explicit_path);

// A short, stable digest of a unique id, so that ranks can show they hold the same one without printing it.
std::string uid_hash(const UniqueId& id);

}  // namespace coldstart::nccl
