// One rank of cumem_share_bench: owns cuMem buffers, serves them to its ring neighbours over a Unix socket (a service
// thread exports on request, as NCCL's proxy does) and imports its neighbours' buffers in one of three modes, timing
// every driver call. See docs/bench-micro.md.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace coldstart::micro {

// The three ways of sharing, by the names the JSON, the table and the docs use.
inline const std::vector<std::string> kCumemModes = {"per-buffer", "merged", "export-at-alloc"};

struct CumemRankConfig {
  int rank = 0;
  int world = 2;
  int trial = 0;
  std::string mode = "per-buffer";
  int buffers = 48;
  uint64_t size = 10ull << 20;
  bool both = false;  // import from both ring neighbours, not only the next rank
  std::string tag;    // names this run's sockets
};

// The ranks this rank imports from: the next one, and the previous one when both.
std::vector<int> ring_sources(int rank, int world, bool both);
// The byte an importer writes into buffer `index` of its source so the owner can check the mapping (never 0).
uint8_t verify_byte(int importer, int index);
constexpr uint64_t kSlotBytes = 64;  // each importer writes its own 64 bytes at importer * kSlotBytes

// Runs the rank to the end and returns the exit code (0, 1 on a CUDA or verification failure, 2 without a device).
int run_cumem_rank(const CumemRankConfig& config);

}  // namespace coldstart::micro
