#include "nccllog/failures.h"

#include <initializer_list>

namespace coldstart::nccllog {
namespace {

// Each message by the words NCCL prints (2.28, 2.30: src/ lines as named), every one of which must be present.
struct Known {
  std::initializer_list<std::string_view> words;
  std::string_view cause;
};

constexpr Known kKnown[] = {
    // os/linux.cc: "Error: failed to extend %s to %ld bytes, error: %s (%d)", then shmutils.cc's summary
    {{"/dev/shm/", "No space left on device"},
     "/dev/shm is too small for NCCL's shared memory (a container's 64 MiB): --shm-size or --ipc=host (casebook 34; "
     "coldstart doctor: shm-small)"},
    // init.cc: two ranks of one host hash on one GPU
    {{"Duplicate GPU detected"},
     "two ranks on one GPU of one host: NCCL before 2.30 refuses it, 2.30 and later with NCCL_MULTI_RANK_GPU_ENABLE=1; "
     "or two hosts NCCL takes for one (casebook 12, 14; coldstart doctor: same-gpu, host-id)"},
    // bootstrap.cc: "Bootstrap : no socket interface found"
    {{"no socket interface found"},
     "NCCL found no network interface: NCCL_SOCKET_IFNAME matches none (casebook 22; coldstart doctor net: route)"},
    // graph/xml.h: "Attribute %s of node %s not found", reading NCCL_TOPO_FILE
    {{"Attribute ", " of node ", " not found"},
     "the topology file NCCL_TOPO_FILE names lacks what NCCL needs (casebook 19; coldstart doctor: topo-file)"},
    // CUDA's error for a library without SASS or PTX for the GPU
    {{"no kernel image is available"},
     "the NCCL loaded has no code this GPU can run (casebook 4; coldstart doctor: nccl-no-arch)"},
    {{"Too many open files"},
     "the open-files limit is below what NCCL opens (casebook 35; coldstart doctor: fd-limit)"},
    // include/alloc.h: "Failed to CUDA calloc %ld bytes"
    {{"Failed to CUDA calloc"},
     "the GPU's memory ran out in NCCL's setup: fewer ranks a GPU, or cuMem on (cuMem off allocates every "
     "connection's buffers at init; docs/scale.md)"},
    // proxy.cc: a peer's proxy that cannot be reached
    {{"Proxy Call to rank", "failed"},
     "a peer's proxy could not be reached: ranks of other hosts taken for this one (NCCL_HOSTID, one host name), or "
     "a firewall between the ranks (casebook 14, 28; coldstart doctor: host-id; coldstart doctor net --peers)"},
};

bool has_all(std::string_view error, std::initializer_list<std::string_view> words) {
  for (std::string_view w : words)
    if (error.find(w) == std::string_view::npos) return false;
  return true;
}

}  // namespace

std::string known_failure(std::string_view error) {
  for (const Known& k : kKnown)
    if (has_all(error, k.words)) return std::string(k.cause);
  return "";
}

}  // namespace coldstart::nccllog
