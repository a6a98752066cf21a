// Which NCCL release the user's PyTorch loads, found without importing torch or touching a GPU: the interpreter
// locates torch (importlib's find_spec), the library beside it is the one its wheel loads (site-packages/nvidia/nccl/
// lib/libnccl.so.2, or torch/lib/libnccl.so.2 in older wheels, or another sys.path entry's nvidia/nccl/lib, where
// torch looks next), and the library itself says its version (ncclGetVersion needs no GPU).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "util/process.h"

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

// A command nccl build runs (the interpreter, the download) through run_command (util/process.h): its stdout and
// stderr together, their last kMaxCommandOutput bytes (what it said last explains how it ended), killed after
// timeout_s. Throws RuntimeError ("cannot start ARGV0: not found") when it cannot start, and Interrupted when this
// process is (interrupted(), launch/trial.h), the command killed with its process group.
constexpr size_t kMaxCommandOutput = 1 << 20;
RunResult run_tool(const std::vector<std::string>& argv, double timeout_s);

}  // namespace coldstart::ncclbuild
