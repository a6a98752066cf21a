// Which NCCL release the user's PyTorch loads, found without importing torch or touching a GPU: the interpreter
// locates torch (importlib's find_spec), the library beside it is the one its wheel loads (site-packages/nvidia/nccl/
// lib/libnccl.so.2, or torch/lib/libnccl.so.2 in older wheels, or another sys.path entry's nvidia/nccl/lib, where
// torch looks next), and the library itself says its version (ncclGetVersion needs no GPU).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace coldstart::ncclbuild {

struct TorchNccl {
  std::string python;         // the interpreter asked
  std::string torch_dir;      // .../site-packages/torch
  std::string torch_version;  // from its distribution's metadata; empty when it has none
  std::string library;        // the libnccl.so.2 it loads, as torch finds it
  std::string version;        // "2.28.9"
};

// Throws InputError (one line, naming --version as the way around) when the interpreter does not run, has no torch,
// or its torch carries no NCCL library that loads.
TorchNccl detect_torch_nccl(const std::string& python);

// A command's output (stdout and stderr, its last kMaxCommandOutput bytes) and its wait status; throws RuntimeError
// when it cannot start, Interrupted when this process is (interrupted(), launch/trial.h), and kills it (its process
// group) after timeout_s.
constexpr size_t kMaxCommandOutput = 1 << 20;
struct CommandOutput {
  int wait_status = 0;
  bool timed_out = false;
  std::string text;
  uint64_t cut_bytes = 0;  // how much it wrote before the text kept
};
CommandOutput run_command(const std::vector<std::string>& argv, double timeout_s);

}  // namespace coldstart::ncclbuild
