// `coldstart nccl build`: the patched NCCL for the release a job's PyTorch loads, built into the cache by the shipped
// scripts/build_nccl.sh (which checks the source and applies the series), with progress, resumable, one build of an
// entry at a time; the entry's manifest is written last, once the library loads and carries the series.
#pragma once
#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "ncclbuild/cache.h"
#include "ncclbuild/detect.h"
#include "ncclbuild/series.h"

namespace coldstart::ncclbuild {

struct BuildRequest {
  std::string which = "patched";  // patched, stock (NCCL's own, to compare against) or both
  std::string version;            // empty: the release PyTorch loads
  std::string src;                // empty: download the release's tarball
  std::string arch;               // "90,100"; empty: the GPUs present
  std::string cache_dir;          // empty: default_cache_dir()
  int jobs = 0;                   // 0: every core
  std::string python = "python3";
  bool dry_run = false;
  double progress_every_s = 5;
};

// Compute capabilities "90", "100a", "120f" NCCL can be built for; InputError naming the one that is not.
std::vector<std::string> parse_arch(const std::string& list);
// {9, 0} -> "90", one per architecture, in order.
std::vector<std::string> arch_of(const std::vector<std::pair<int, int>>& capabilities);

// Everything decided before anything is written.
struct BuildPlan {
  Share share;
  Port port;
  Which which = Which::patched;  // the library it builds, into its own entry
  std::string version_from;      // "--version", or PyTorch's library and version
  std::vector<std::string> arch;
  std::string arch_from;  // "--arch", or the GPUs it was read from
  std::string src;        // the source build_nccl.sh gets (the download's destination when downloading)
  std::string download;   // the URL to fetch first; empty with --src
  std::string cache_dir, entry, library;
  // The build folder of the release's other entry (stock for patched, patched for stock): build_nccl.sh starts from
  // its objects where it holds a finished build of the same source and architectures (--seed-from), and compiles only
  // the files that differ
  std::string seed;
  int gpus = 0;  // the GPUs here, for the loading lines (0: not known)
  int jobs = 0;
  bool dry_run = false;
  double progress_every_s = 5;
  // build_nccl.sh's command line, building into out_dir (the entry's build/; a scratch folder for a dry run)
  std::vector<std::string> script_argv(const std::string& out_dir, bool check_only) const;
};

// What the node offers the plan: the GPUs' compute capabilities (a problem when none) and PyTorch's NCCL. Tests give
// their own.
struct Probes {
  std::function<std::vector<std::pair<int, int>>(std::string* problem)> capabilities;
  std::function<TorchNccl(const std::string& python)> torch_nccl;
  std::function<int()> gpu_count;  // the GPUs here; none given: not known
};
Probes node_probes();

// Throws InputError (exit status 2, one line) for a release without a port, a malformed --version, an unknown
// architecture, no GPU and no --arch, or a cache that cannot be written. The plan of req.which (both: the patched).
BuildPlan plan_build(const BuildRequest& req, const Share& share, const Probes& probes);
// The plans of req.which, in the order they are built: the patched library first, then the stock one, which takes
// its source from the same place (a download: the patched entry's tarball). InputError for another --which.
std::vector<BuildPlan> plan_builds(const BuildRequest& req, const Share& share, const Probes& probes);
std::vector<std::string> describe_plan(const BuildPlan& plan);

// The build: the source (downloaded when no --src, saying so first), build_nccl.sh under the entry's lock with its
// progress condensed to a line every progress_every_s, the library checked and the manifest written. A dry run checks
// the source with build_nccl.sh --check-only when --src is given and builds nothing. Lines go to `say`. Returns the
// exit status: 0, or 130 when interrupted (the build continues on the next run). Throws InputError for what
// build_nccl.sh refused (its own line), RuntimeError when the build fails.
int run_build(const BuildPlan& plan, const std::function<void(const std::string&)>& say);

// The lines that say how to load a built library (nccl build's end, nccl env), for a job of that shape: with
// NCCL_MULTI_RANK_GPU_ENABLE=1 where its ranks share a GPU, and a line saying when a job needs it where they may.
std::vector<std::string> describe_loading(const Manifest& m, JobShape job);

// Compiling progress read from NCCL's make log (build_nccl.sh's <out>/patched.log or stock.log, appended across runs):
// the files compiled so far, each counted once (with the objects a build started from, which build_nccl.sh's
// "Seeded H host and D device objects from DIR" line counts), against an estimate of how many there are (the sources in
// the tree and the device files NCCL generates, once generated; 0 before).
struct MakeProgress {
  size_t compiled = 0;
  size_t total = 0;            // 0 until NCCL has generated its device sources
  size_t compiled_device = 0;  // of compiled: src/device's and the generated ones (nvcc's kernels)
  size_t total_device = 0;     // of total
};
// A device file's compile against a host file's, for the estimate: on the H200 node at make -j16, NCCL 2.30.7's 110
// host files took ~45 s and its 199 device files ~240 s (docs/results/2026-12-03-h200x1-wheel); counting files alike
// said "about 1m05s left" 10 s into a build that took 4m44s.
inline constexpr double kDeviceFileCost = 3.0;
class MakeLogReader {
 public:
  MakeLogReader(std::string log, std::string src_dir, std::string obj_dir);
  MakeProgress read();

 private:
  std::string log_, src_dir_, obj_dir_, partial_;
  uint64_t offset_ = 0;
  std::set<std::string> seen_;
  size_t host_sources_ = 0;                     // counted once: the tree does not change while make runs
  size_t seeded_host_ = 0, seeded_device_ = 0;  // objects build_nccl.sh copied from another build ("Seeded ...")
};
// "42s", "3m05s", "1h02m"
std::string format_elapsed(double seconds);
// "compiled 57 of ~301 files, 1m12s, about 4m left": the time left from this run's pace, a device file counting
// kDeviceFileCost host files
std::string progress_line(const MakeProgress& now, const MakeProgress& at_start, double elapsed_s);

}  // namespace coldstart::ncclbuild
