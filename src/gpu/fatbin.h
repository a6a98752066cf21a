// The GPU code a shared library carries, read from its file without loading it: the CUDA fat binaries that nvcc and
// nvlink put in its `.nv_fatbin` section (and, for code built with -rdc as NCCL is, `__nv_relfatbin`), and in them
// the architectures it has machine code (SASS) for and the PTX the driver could compile at load time. A GPU without
// SASS of its own but with PTX it can compile pays that compile inside the first load (NCCL: init.kernels).
// Every read is bounded by the file: a truncated or lying file gives a one-line reason, never a read past its end.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace coldstart::gpu {

// An architecture as nvcc names it: "90"; "90a", code for that GPU only; "100f", code for its family (10.x).
struct Arch {
  int sm = 0;        // 10 * major + minor: 80, 90, 100, 120
  char variant = 0;  // 0, 'a' (architecture-specific) or 'f' (family-specific)
  std::string name() const;
  auto operator<=>(const Arch&) const = default;
};
// "90", "90a", "100f"; nullopt for anything else.
std::optional<Arch> parse_arch(std::string_view s);

// Whether SASS built for `code` runs on a GPU of compute capability `cc` (10 * major + minor): the same major and a
// minor no higher ("80" runs on 8.6), exactly that GPU for "a", the same major and a minor no higher for "f".
bool sass_runs_on(const Arch& code, int cc);
// Whether the driver can compile PTX of `code` for `cc`: any GPU of that architecture or a later one; only that GPU
// for "a"; its family (the same major, a minor no lower) for "f".
bool ptx_compiles_for(const Arch& code, int cc);

// How GPUs of capabilities `ccs` get the kernels of code with these architectures: "sass" when SASS runs on every one,
// "ptx" when some has none but PTX compiles for it (the driver's JIT, in each process's first load), "none" when
// some can run neither; "" for no GPU (or one of capability 0, not read).
std::string kernels_for(const std::vector<Arch>& sass, const std::vector<Arch>& ptx, const std::vector<int>& ccs);

// What the library's fat binaries hold: each architecture once, in order.
struct GpuCode {
  std::vector<Arch> sass;
  std::vector<Arch> ptx;
  std::vector<uint64_t> ptx_bytes;  // per ptx: the PTX's size uncompressed, over all the library's fat binaries
  size_t containers = 0;            // fat binaries read
  size_t other_entries = 0;         // entries of another kind (neither PTX nor SASS), skipped
};

// Reads the library at `path`. A file that is not a little-endian 64-bit ELF, is truncated, or whose fat binaries do
// not hold together gives nullopt and *problem, one line naming the file. A library without fat binaries gives an
// empty GpuCode.
std::optional<GpuCode> read_gpu_code(const std::string& path, std::string* problem);
// The same on bytes in memory (the tests' and the fuzzer's way in); `name` stands for the file in the problem.
std::optional<GpuCode> parse_gpu_code(std::string_view bytes, const std::string& name, std::string* problem);

}  // namespace coldstart::gpu
