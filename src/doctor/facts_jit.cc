// The facts about compiling GPU code at start-up: which architectures each NCCL library carries, which the GPUs are,
// and where the driver keeps what it compiled.
#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <limits>

#include <fmt/format.h>

#include "doctor/facts.h"
#include "gpu/fatbin.h"

namespace coldstart::doctor {
namespace fs = std::filesystem;

namespace {
constexpr size_t kMaxCacheEntries = 20000;  // beyond: its size is left unknown rather than walked for long

std::string home() {
  if (const char* h = std::getenv("HOME"); h && *h) return h;
  if (const passwd* pw = getpwuid(getuid()); pw && pw->pw_dir) return pw->pw_dir;
  return "";
}

void read_library(NcclLibFact& lib) {
  lib.sass.clear();
  lib.ptx.clear();
  lib.ptx_bytes.clear();
  lib.arch_problem.clear();
  const std::string& file = lib.resolved.empty() ? lib.path : lib.resolved;
  if (file.find('/') == std::string::npos) return;  // a bare name the loader did not find: nothing to read
  std::string problem;
  std::optional<gpu::GpuCode> code = gpu::read_gpu_code(file, &problem);
  if (!code) {
    lib.arch_problem = problem;
    return;
  }
  for (const auto& a : code->sass) lib.sass.push_back(a.name());
  for (size_t i = 0; i < code->ptx.size(); ++i) {
    lib.ptx.push_back(code->ptx[i].name());
    const uint64_t max = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
    lib.ptx_bytes.push_back(static_cast<int64_t>(std::min(code->ptx_bytes[i], max)));
  }
}

// The folder, whether the driver could write there (or create it: the nearest folder above that exists), its size.
JitCacheFact probe_jit_cache(const Facts& f) {
  JitCacheFact c;
  auto it = f.env.find("CUDA_CACHE_PATH");
  if (it != f.env.end() && !it->second.empty()) {
    c.path = it->second;
  } else if (std::string h = home(); !h.empty()) {
    c.path = h + "/.nv/ComputeCache";
  } else {
    return c;
  }
  std::error_code ec;
  const fs::file_status st = fs::status(c.path, ec);
  if (ec && ec != std::errc::no_such_file_or_directory) return c;
  c.exists = fs::is_directory(st) ? 1 : 0;
  fs::path probe = c.path;
  if (!c.exists) {
    while (probe.has_parent_path() && probe != probe.parent_path() && !fs::exists(probe, ec))
      probe = probe.parent_path();
    if (!fs::is_directory(probe, ec)) return c;
  }
  c.writable = access(probe.c_str(), W_OK | X_OK) == 0 ? 1 : 0;
  if (c.exists) {
    int64_t bytes = 0;
    size_t n = 0;
    fs::recursive_directory_iterator walk(c.path, fs::directory_options::skip_permission_denied, ec), end;
    for (; !ec && walk != end; walk.increment(ec)) {
      if (++n > kMaxCacheEntries) return c;
      std::error_code e;
      if (walk->is_regular_file(e)) bytes += static_cast<int64_t>(walk->file_size(e));
    }
    if (!ec) c.bytes = bytes;
  }
  return c;
}

std::optional<Invalid> tri_state(const std::string& path, int v) {
  if (v >= -1 && v <= 1) return std::nullopt;
  return Invalid{path, fmt::format("{} (1 yes, 0 no, -1 unknown)", v)};
}

std::optional<Invalid> check_arches(const std::string& path, const std::vector<std::string>& list) {
  for (size_t i = 0; i < list.size(); ++i)
    if (!gpu::parse_arch(list[i]))
      return Invalid{fmt::format("{}[{}]", path, i),
                     fmt::format("\"{}\" (give an architecture as nvcc names it: 90, 90a, 100f)", list[i])};
  return std::nullopt;
}
}  // namespace

void collect_jit_facts(Facts& f) {
  if (f.cuda.available) f.compute_capabilities = gpu::compute_capabilities(f.cuda);
  for (auto& lib : f.nccl) read_library(lib);
  f.jit_cache = probe_jit_cache(f);
}

std::optional<Invalid> check_jit_facts(const Facts& f) {
  for (size_t i = 0; i < f.nccl.size(); ++i) {
    const NcclLibFact& lib = f.nccl[i];
    const std::string at = fmt::format("nccl[{}]", i);
    if (auto bad = check_arches(at + ".sass", lib.sass)) return bad;
    if (auto bad = check_arches(at + ".ptx", lib.ptx)) return bad;
    if (!lib.ptx_bytes.empty() && lib.ptx_bytes.size() != lib.ptx.size())
      return Invalid{at + ".ptx_bytes", fmt::format("{} sizes for {} PTX architectures (give one each, or none)",
                                                    lib.ptx_bytes.size(), lib.ptx.size())};
    for (size_t j = 0; j < lib.ptx_bytes.size(); ++j)
      if (lib.ptx_bytes[j] < 0)
        return Invalid{fmt::format("{}.ptx_bytes[{}]", at, j), fmt::format("{} (bytes)", lib.ptx_bytes[j])};
  }
  if (f.compute_capabilities.size() > f.cuda.gpus.size())
    return Invalid{"compute_capabilities",
                   fmt::format("{} entries for {} CUDA devices", f.compute_capabilities.size(), f.cuda.gpus.size())};
  for (size_t i = 0; i < f.compute_capabilities.size(); ++i) {
    const int cc = f.compute_capabilities[i];
    if (cc != -1 && (cc < 10 || cc > 999))
      return Invalid{fmt::format("compute_capabilities[{}]", i),
                     fmt::format("{} (give 10 * major + minor, e.g. 90 for 9.0; -1 unknown)", cc)};
  }
  if (auto bad = tri_state("jit_cache.exists", f.jit_cache.exists)) return bad;
  if (auto bad = tri_state("jit_cache.writable", f.jit_cache.writable)) return bad;
  if (f.jit_cache.bytes < -1)
    return Invalid{"jit_cache.bytes", fmt::format("{} (bytes, or -1 unknown)", f.jit_cache.bytes)};
  return std::nullopt;
}

}  // namespace coldstart::doctor
