#include "lab/one_gpu.h"

#include <algorithm>
#include <exception>
#include <optional>
#include <vector>

#include <fmt/format.h>

#include "gpu/nccl.h"
#include "lab/nodes.h"
#include "ncclbuild/cache.h"
#include "util/error.h"
#include "util/strings.h"

namespace coldstart::lab {
namespace {
using ncclbuild::Entry;
using ncclbuild::Which;

const char* kWhy = "one GPU: a one-rank job has no peers, so no connection and no cold start to show";
const char* kHow =
    "give --nccl-lib an NCCL 2.30 or newer (`coldstart nccl build` makes one, which bench then takes by itself; "
    "`--which both` adds NCCL's own beside it to compare) to run 2 ranks on the GPU, or --ranks-per-gpu 1 to time one "
    "rank anyway";

// The builds of `coldstart nccl build`'s cache that one GPU's 2 ranks compare: of the newest release of 2.30+ with a
// complete patched build, that build and the stock one of its release; without a patched build, the newest stock one.
struct Cached {
  std::optional<Entry> stock, patched;
  bool any() const { return stock || patched; }
};

Cached cached_builds() {
  Cached c;
  try {
    const std::string cache = ncclbuild::default_cache_dir();
    c.patched = ncclbuild::newest_complete_from(cache, nccl::kMultiRankGpuVersion, Which::patched);
    if (c.patched)
      c.stock = ncclbuild::find_complete(cache, ncclbuild::entry_name(c.patched->manifest->version, Which::stock));
    else
      c.stock = ncclbuild::newest_complete_from(cache, nccl::kMultiRankGpuVersion, Which::stock);
  } catch (const InputError&) {  // no home folder to find the cache in
  }
  return c;
}

// A build bench took by itself must load: one that does not is the cache's to name, with the command that makes it
// again, never --nccl-lib's.
void check_loads(const std::string& bench, const Entry& e) {
  try {
    nccl::load(e.manifest->library);
  } catch (const std::exception& err) {
    std::string reason = err.what();
    if (const auto colon = reason.find(": "); reason.starts_with("--nccl-lib ") && colon != std::string::npos)
      reason = reason.substr(colon + 2);
    throw InputError(fmt::format(
        "{} on {}: the build bench takes, {} of `coldstart nccl list` ({}), does not load: {}; build it again with "
        "`coldstart nccl build --version {}{}`, or give --nccl-lib",
        bench, kWhy, e.name, e.manifest->library, reason, e.manifest->version,
        e.manifest->which == Which::stock ? " --which stock" : ""));
  }
}

std::string described(const Entry& e) {
  const auto& m = *e.manifest;
  if (m.which == Which::stock) return fmt::format("{} ({}), NCCL's own {}", e.name, m.library, m.version);
  return fmt::format("{} ({}), coldstart's patched NCCL {} ({})", e.name, m.library, m.version,
                     m.patches.empty() ? "none read back" : join(m.patches, ", "));
}

// `coldstart nccl build ...` that adds the build `missing` of the release `have` is of, from the same source.
std::string adding(const Entry& have, Which missing) {
  const auto& m = *have.manifest;
  const bool url = m.source.starts_with("https://") || m.source.starts_with("http://");
  return fmt::format("coldstart nccl build --version {}{}{}", m.version,
                     missing == Which::stock ? " --which stock" : "",
                     url || m.source.empty() ? "" : " --src " + ncclbuild::shell_word(m.source));
}

// The cache's builds become the ranks' libraries, the stock one first (the default of the fix ranking).
OneGpuPlan take_cached(BenchSpec& spec, const Cached& c, const std::string& bench) {
  OneGpuPlan out;
  const bool cumem_axis = spec.env.empty() && spec.fixes == std::vector<Fix>{Fix{}};
  std::vector<std::string> which;
  for (const auto* e : {&c.stock, &c.patched})
    if (*e && !spec.dry_run) check_loads(bench, **e);
  for (const auto* e : {&c.stock, &c.patched})
    if (*e) {
      spec.nccl_libs.push_back((*e)->name);
      which.push_back(described(**e));
    }
  out.said =
      fmt::format(". They run `coldstart nccl build`'s {}{}", join(which, ", and "),
                  cumem_axis ? (which.size() > 1 ? ", each with cuMem on and off" : ", with cuMem on and off") : "");
  if (c.stock && c.patched)
    out.said += ": the first is the cold start a job gets from NCCL, the second what the patch leaves of it";
  else if (c.patched)
    out.said += ": the first collective shows the patched cold start";
  out.said += " (--nccl-lib names other libraries)";
  if (c.patched && !c.stock)
    out.hint = fmt::format("NCCL's own {} is not in the cache to compare with: `{}` adds it, and bench then runs both",
                           c.patched->manifest->version, adding(*c.patched, Which::stock));
  else if (c.stock && !c.patched)
    out.hint = fmt::format(
        "coldstart's patched NCCL {} is not in the cache to compare with: `{}` adds it, and bench then runs both",
        c.stock->manifest->version, adding(*c.stock, Which::patched));
  return out;
}

// Without the cache's builds: the NCCL at hand, which must be 2.30+ (PyTorch's own, for the torch probe, never is).
void check_at_hand(const BenchSpec& spec, const std::string& bench) {
  if (spec.worker == Worker::torch)
    throw InputError(
        fmt::format("{} on {}, and PyTorch's own NCCL (before 2.30) runs one rank a GPU; {}", bench, kWhy, kHow));
  if (spec.dry_run) return;                                    // a dry run loads no library
  nccl::Library lib = nccl::load(ncclbuild::library_for(""));  // none found: its own RuntimeError
  if (lib.version < nccl::kMultiRankGpuVersion)
    throw InputError(fmt::format("{} on {}, and {} is NCCL {}, which runs one rank a GPU; {}", bench, kWhy, lib.path,
                                 lib.version_string(), kHow));
}

// Whether the 2 ranks are each on a node of their own in every configuration (--nodes 2 or more, each count of the
// list): then no node has two ranks on its GPU, and an NCCL before 2.30 runs them as a job of two one-GPU nodes.
bool ranks_on_nodes_of_their_own(const BenchSpec& spec) {
  BenchSpec two = spec;
  two.ranks_per_gpu = 2;
  return std::all_of(spec.nodes.begin(), spec.nodes.end(), [&](int n) { return ranks_sharing_a_gpu(two, n) == 1; });
}

}  // namespace

void OneGpuPlan::tell(BenchObserver* observer) const {
  for (const std::string* line : {&said, &hint})
    if (!line->empty() && observer) observer->note(*line);
}

OneGpuPlan two_ranks_on_one_gpu(BenchSpec& spec, bool modes_given) {
  const std::string bench = spec.worker == Worker::torch ? "bench --worker torch" : "bench";
  OneGpuPlan out;
  const bool own_nodes = ranks_on_nodes_of_their_own(spec);
  if (!spec.nccl_libs.empty()) {
    for (const auto& want : spec.dry_run || own_nodes ? std::vector<std::string>{} : spec.nccl_libs) {
      nccl::Library lib = nccl::load(ncclbuild::library_for(want));
      if (lib.version < nccl::kMultiRankGpuVersion)
        throw InputError(fmt::format("{} on {}, and {} is NCCL {}, which runs one rank a GPU; {}", bench, kWhy,
                                     lib.path, lib.version_string(), kHow));
    }
  } else if (const Cached cached = cached_builds(); cached.any()) {
    out = take_cached(spec, cached, bench);
  } else if (!own_nodes) {
    check_at_hand(spec, bench);
  }
  spec.ranks_per_gpu = 2;
  std::string model;
  if (!modes_given && spec.explicit_lists.empty() && spec.modes.size() > 1) {
    spec.modes = {Mode::isolated};
    model = "; one launch model, isolated: on one GPU every model gives each rank the same view (--modes runs others)";
  }
  out.said =
      std::string(kWhy) +
      (own_nodes ? "; 2 ranks share it, each on a node of its own (--nodes), which any NCCL runs"
                 : "; 2 ranks share it (NCCL_MULTI_RANK_GPU_ENABLE=1, NCCL 2.30+; --ranks-per-gpu 1 for one rank)") +
      model + out.said;
  return out;
}

}  // namespace coldstart::lab
