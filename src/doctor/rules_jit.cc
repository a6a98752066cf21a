// NCCL's kernels compiled at start-up: a library without machine code (SASS) for a GPU makes the driver compile its
// PTX inside the first init, in init.kernels (NVIDIA/nccl#1646: 52 s of a 55 s init on a B200); without PTX it can
// compile either, NCCL cannot launch at all; and the JIT cache decides whether only the first start pays.
#include <algorithm>
#include <charconv>
#include <map>
#include <optional>

#include <fmt/format.h>

#include "doctor/rule.h"
#include "gpu/fatbin.h"
#include "model/phases.h"
#include "util/strings.h"

namespace coldstart::doctor {
namespace {

constexpr int64_t kDefaultCacheMax = int64_t{1} << 30;  // CUDA_CACHE_MAXSIZE's documented default (servers)
constexpr int64_t kMaxCacheMax = int64_t{4} << 30;      // and its maximum

// The JIT as measured on an H100 node (docs/results/2026-12-06-h100x1-casebook-jit): NCCL 2.30.7's 82.9 MiB of
// compute_80 PTX took 249 s to compile inside init (252 s with the cache off), on one core; the cache then held 141
// MiB, and a warm start loaded the kernels in 0.63 s.
constexpr double kMeasuredPtxMiB = 82.9, kMeasuredJitSeconds = 249.1, kMeasuredCachedMiB = 141.0,
                 kMeasuredWarmSeconds = 0.63;
constexpr double kJitSecondsPerPtxMiB = kMeasuredJitSeconds / kMeasuredPtxMiB;
constexpr double kCompiledPerPtx = kMeasuredCachedMiB / kMeasuredPtxMiB;

// A variable set to something other than 0 (CUDA reads these as numbers).
bool jit_env_on(const Facts& f, const char* k) {
  const std::string v = env_of(f, k);
  return !v.empty() && v != "0";
}

std::string sm_text(int cc) { return fmt::format("sm_{} (compute capability {}.{})", cc, cc / 10, cc % 10); }

// The CUDA devices of one compute capability.
struct GpuGroup {
  int cc = 0;
  std::vector<int> devices;
  std::string name;
  // "0-3,6"
  std::string ranges() const {
    std::vector<std::string> out;
    for (size_t i = 0; i < devices.size();) {
      size_t j = i;
      while (j + 1 < devices.size() && devices[j + 1] == devices[j] + 1) ++j;
      out.push_back(j > i ? fmt::format("{}-{}", devices[i], devices[j]) : std::to_string(devices[i]));
      i = j + 1;
    }
    return join(out, ",");
  }
  // "GPU 0 (NVIDIA B200) is", "GPUs 0,1 (NVIDIA B200) are"
  std::string text() const {
    const bool many = devices.size() > 1;
    return fmt::format("GPU{} {}{} {}", many ? "s" : "", ranges(), name.empty() ? "" : " (" + name + ")",
                       many ? "are" : "is");
  }
};

std::vector<GpuGroup> gpu_groups(const Facts& f) {
  std::map<int, GpuGroup> by_cc;
  for (size_t i = 0; i < f.compute_capabilities.size(); ++i) {
    const int cc = f.compute_capabilities[i];
    if (cc < 0) continue;
    GpuGroup& g = by_cc[cc];
    g.cc = cc;
    g.devices.push_back(i < f.cuda.gpus.size() ? f.cuda.gpus[i].index : static_cast<int>(i));
    if (g.name.empty() && i < f.cuda.gpus.size()) g.name = f.cuda.gpus[i].name;
  }
  std::vector<GpuGroup> out;
  for (auto& kv : by_cc) out.push_back(std::move(kv.second));
  return out;
}

std::vector<gpu::Arch> arch_list(const std::vector<std::string>& names) {
  std::vector<gpu::Arch> out;
  for (const auto& n : names)
    if (auto a = gpu::parse_arch(n)) out.push_back(*a);
  return out;
}

// How the driver loads a library's kernels on a GPU of capability cc, under CUDA_FORCE_PTX_JIT and
// CUDA_DISABLE_PTX_JIT.
enum class Load { sass, jit, none };
struct Verdict {
  Load load = Load::none;
  std::string ptx;        // the PTX it compiles: the newest that compiles for cc
  int64_t ptx_bytes = 0;  // its size uncompressed; 0 unknown
};

Verdict judge_load(const NcclLibFact& lib, int cc, const Facts& f) {
  const bool forced = jit_env_on(f, "CUDA_FORCE_PTX_JIT"), disabled = jit_env_on(f, "CUDA_DISABLE_PTX_JIT");
  if (!forced)
    for (const auto& a : arch_list(lib.sass))
      if (gpu::sass_runs_on(a, cc)) return {Load::sass, "", 0};
  Verdict v;
  std::optional<gpu::Arch> best;
  for (size_t i = 0; i < lib.ptx.size(); ++i) {
    auto a = gpu::parse_arch(lib.ptx[i]);
    if (!a || !gpu::ptx_compiles_for(*a, cc) || (best && best->sm >= a->sm)) continue;
    best = a;
    v.ptx = lib.ptx[i];
    v.ptx_bytes = i < lib.ptx_bytes.size() ? lib.ptx_bytes[i] : 0;
  }
  v.load = best && !disabled ? Load::jit : Load::none;
  return v;
}

// A library whose GPU code was read: one that loaded (others are no job's), with an architecture found.
bool judged_library(const NcclLibFact& lib) {
  return !lib.version.empty() && lib.arch_problem.empty() && !(lib.sass.empty() && lib.ptx.empty());
}

std::string prefixed_list(const std::vector<std::string>& v, const char* prefix) {
  if (v.empty()) return "none";
  std::vector<std::string> out;
  for (const auto& a : v) out.push_back(prefix + a);
  return join(out, ", ");
}

// "/usr/lib/libnccl.so.2 (NCCL 2.21.5, the one a process loads by default) carries SASS for sm_80, sm_90 and PTX for
// compute_90"
std::string carries_text(const NcclLibFact& lib) {
  return fmt::format("{} (NCCL {}{}) carries SASS for {} and PTX for {}",
                     lib.resolved.empty() ? lib.path : lib.resolved, lib.version,
                     lib.would_load ? ", the one a process loads by default" : "", prefixed_list(lib.sass, "sm_"),
                     prefixed_list(lib.ptx, "compute_"));
}

// The measured init.kernels, where bench results are at hand: the configuration where it is largest.
std::string measured_init_kernels(const BenchResults& r) {
  const ConfigSummary* worst = nullptr;
  for (const auto& s : r.summaries) {
    const Stats* k = s.phase("init.kernels");
    if (k && k->n && (!worst || k->median > worst->phase("init.kernels")->median)) worst = &s;
  }
  if (!worst) return "";
  const Stats* init = worst->phase(std::string(phase::comm_init));
  return fmt::format("measured ({}): init.kernels {:.0f} ms{}", worst->label, worst->phase("init.kernels")->median,
                     init && init->n ? fmt::format(" of comm_init {:.0f} ms", init->median) : "");
}

FixAdvice built_for_fix(int cc) {
  return {fmt::format("load a NCCL with SASS for sm_{0}: a release built for it, or build one — `coldstart nccl build "
                      "--arch {0}` (coldstart's series for the release PyTorch loads; by default it builds for the "
                      "GPUs present), or NCCL's own source with make src.build "
                      "NVCC_GENCODE=\"-gencode=arch=compute_{0},code=sm_{0}\"",
                      cc),
          "none at run time: the kernels load as machine code; a library to install, or a build to keep"};
}

std::string ptx_size_text(int64_t bytes) {
  return bytes > 0 ? " (" + format_bytes(static_cast<double>(bytes)) + ")" : "";
}

// What a JIT of `bytes` of PTX costs, from coldstart's measurement (kJitSecondsPerPtxMiB), scaled where the size is
// known.
std::string jit_cost_text(int64_t bytes) {
  std::string out = fmt::format(
      "coldstart measured {:.0f} s for NCCL 2.30.7's {:.1f} MiB of PTX on an H100 node's core, {:.2f} s from a warm "
      "cache",
      kMeasuredJitSeconds, kMeasuredPtxMiB, kMeasuredWarmSeconds);
  if (bytes > 0)
    out += fmt::format(", so of the order of {:.0f} s for this one at that rate",
                       kJitSecondsPerPtxMiB * static_cast<double>(bytes) / (1 << 20));
  return out;
}

// The cache size to suggest for `bytes` of PTX: twice it, in whole GiB, at most CUDA's maximum.
int64_t cache_size_for(int64_t bytes) {
  const int64_t gib = int64_t{1} << 30;
  if (bytes > kMaxCacheMax / 2) return kMaxCacheMax;
  return std::max(kDefaultCacheMax, (2 * bytes + gib - 1) / gib * gib);
}

}  // namespace

Findings nccl_arch(const RuleInput& in) {
  const Facts& f = in.f;
  const std::vector<GpuGroup> groups = gpu_groups(f);
  const bool forced = jit_env_on(f, "CUDA_FORCE_PTX_JIT"), disabled = jit_env_on(f, "CUDA_DISABLE_PTX_JIT");
  Findings out;
  for (const auto& lib : f.nccl) {
    if (!judged_library(lib)) continue;
    std::vector<std::string> jit, none;
    std::optional<int> jit_cc, none_cc;
    int64_t jit_bytes = 0;  // the most PTX one GPU compiles
    for (const auto& g : groups) {
      const Verdict v = judge_load(lib, g.cc, f);
      if (v.load == Load::jit) {
        jit_bytes = std::max(jit_bytes, v.ptx_bytes);
        jit.push_back(fmt::format("{} {}: the driver compiles its compute_{} PTX{} into sm_{} code", g.text(),
                                  sm_text(g.cc), v.ptx, ptx_size_text(v.ptx_bytes), g.cc));
        if (!jit_cc) jit_cc = g.cc;
      } else if (v.load == Load::none) {
        none.push_back(fmt::format("{} {}", g.text(), sm_text(g.cc)));
        if (!none_cc) none_cc = g.cc;
      }
    }
    if (!none.empty()) {
      std::string why = forced && lib.ptx.empty() ? "CUDA_FORCE_PTX_JIT=1 makes the driver ignore the SASS, and there "
                                                    "is no PTX"
                        : disabled ? "no SASS runs there and CUDA_DISABLE_PTX_JIT=1 forbids compiling PTX"
                                   : "no SASS runs there and no PTX compiles for it";
      Finding x{"nccl-no-arch",
                Severity::error,
                "NCCL has no code this GPU can run: it cannot launch its kernels",
                fmt::format("{}; {}: {}, so NCCL's init fails (CUDA: no kernel image is available for execution on "
                            "the device)",
                            carries_text(lib), join(none, "; "), why),
                {}};
      if (forced) x.fixes.push_back({"unset CUDA_FORCE_PTX_JIT", "none"});
      if (disabled)
        x.fixes.push_back({"unset CUDA_DISABLE_PTX_JIT, where the library has PTX for an older architecture",
                           "the driver compiles that PTX at every init the JIT cache does not cover (nccl-no-sass)"});
      x.fixes.push_back(built_for_fix(*none_cc));
      out.push_back(std::move(x));
    }
    if (jit.empty()) continue;
    Finding x{"nccl-no-sass",
              Severity::warn,
              "The driver compiles NCCL's kernels from PTX at init, in init.kernels: no SASS it can use for this GPU",
              fmt::format("{}; {}{}. It happens inside the first ncclCommInitRank of each process, unless the JIT "
                          "cache holds the result of an earlier start: {} (NVIDIA/nccl#1646: init.kernels 52 s of a "
                          "55 s init on a B200)",
                          carries_text(lib), join(jit, "; "),
                          forced ? " (CUDA_FORCE_PTX_JIT=1 makes it ignore the SASS)" : "", jit_cost_text(jit_bytes)),
              {}};
    if (in.c.measured) {
      std::string measured = measured_init_kernels(*in.c.measured);
      if (!measured.empty()) x.evidence += "; " + measured;
    }
    if (forced) x.fixes.push_back({"unset CUDA_FORCE_PTX_JIT", "none"});
    x.fixes.push_back(built_for_fix(*jit_cc));
    x.fixes.push_back(
        {"keep what the driver compiled: the JIT cache on (CUDA_CACHE_DISABLE unset), large enough "
         "(CUDA_CACHE_MAXSIZE, at most 4294967296) and on a writable disk that outlives the process "
         "(CUDA_CACHE_PATH, ~/.nv/ComputeCache by default; in a container, a volume from the host)",
         "the first start on each node, and the first after each driver update, still compiles; disk "
         "space for the cache"});
    out.push_back(std::move(x));
  }
  return out;
}

Findings jit_cache(const RuleInput& in) {
  const Facts& f = in.f;
  // Where a JIT happens: the first library and GPU that compile PTX (nccl-no-sass), or CUDA_FORCE_PTX_JIT.
  std::string because;
  int64_t ptx_bytes = 0;
  std::optional<int> cc;
  for (const auto& lib : f.nccl) {
    if (!judged_library(lib)) continue;
    for (const auto& g : gpu_groups(f)) {
      const Verdict v = judge_load(lib, g.cc, f);
      if (v.load != Load::jit || v.ptx_bytes < ptx_bytes || (cc && v.ptx_bytes == ptx_bytes)) continue;
      ptx_bytes = v.ptx_bytes;
      cc = g.cc;
      because =
          fmt::format("NCCL at {} is compiled from compute_{} PTX{} for {} (nccl-no-sass)",
                      lib.resolved.empty() ? lib.path : lib.resolved, v.ptx, ptx_size_text(v.ptx_bytes), sm_text(g.cc));
    }
  }
  const bool forced = jit_env_on(f, "CUDA_FORCE_PTX_JIT");
  if (!cc && !forced) return {};
  if (!cc) because = "CUDA_FORCE_PTX_JIT=" + env_of(f, "CUDA_FORCE_PTX_JIT") + " makes the driver compile PTX at load";
  std::vector<std::string> why;
  std::vector<FixAdvice> fixes;
  if (jit_env_on(f, "CUDA_CACHE_DISABLE")) {
    why.push_back("CUDA_CACHE_DISABLE=" + env_of(f, "CUDA_CACHE_DISABLE") + " turns the cache off");
    fixes.push_back(
        {"unset CUDA_CACHE_DISABLE (or set it to 0)", "disk space for the cache, up to CUDA_CACHE_MAXSIZE"});
  }
  int64_t max = kDefaultCacheMax;
  bool max_set = false;
  if (env_set(f, "CUDA_CACHE_MAXSIZE")) {
    const std::string v = env_of(f, "CUDA_CACHE_MAXSIZE");
    int64_t n = 0;
    auto r = std::from_chars(v.data(), v.data() + v.size(), n);
    if (r.ec == std::errc() && r.ptr == v.data() + v.size() && n >= 0) {
      max = n;
      max_set = true;
    }
  }
  const auto compiled = static_cast<int64_t>(kCompiledPerPtx * static_cast<double>(ptx_bytes));
  if (ptx_bytes > 0 && max < compiled) {
    why.push_back(
        fmt::format("{} ({}) is smaller than what the PTX to compile ({}) becomes in the cache (about {}: "
                    "{:.1f}× its PTX, measured), so the result is not kept",
                    max_set ? "CUDA_CACHE_MAXSIZE=" + env_of(f, "CUDA_CACHE_MAXSIZE") : "the default size",
                    format_bytes(static_cast<double>(max)), format_bytes(static_cast<double>(ptx_bytes)),
                    format_bytes(static_cast<double>(compiled)), kCompiledPerPtx));
    fixes.push_back({fmt::format("CUDA_CACHE_MAXSIZE={} (bytes; at most 4294967296)", cache_size_for(ptx_bytes)),
                     "disk space, up to that size"});
  }
  if (f.jit_cache.writable == 0) {
    why.push_back(fmt::format("the cache folder {} is not writable{}", f.jit_cache.path,
                              f.jit_cache.exists == 0 ? " (nor can it be created)" : ""));
    fixes.push_back(
        {"CUDA_CACHE_PATH=a writable folder on a disk that outlives the job (in a container, a volume "
         "mounted from the host, so that the next container finds what the last one compiled)",
         "disk space; a folder that goes with its container makes each new container compile once"});
  }
  if (why.empty()) return {};
  if (cc) fixes.push_back(built_for_fix(*cc));
  if (forced) fixes.push_back({"unset CUDA_FORCE_PTX_JIT", "none"});
  return {{"jit-cache", Severity::warn,
           "The JIT cache will not keep what the driver compiles: every start compiles NCCL's kernels again",
           because + "; " + join(why, "; "), fixes}};
}

}  // namespace coldstart::doctor
