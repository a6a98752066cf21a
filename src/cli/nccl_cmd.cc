// coldstart nccl: the patched NCCL (nccl/'s series) built for the release a job's PyTorch loads (build), how to load
// a build (env), and the cache of builds (list).
#include <iostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "gpu/cuda.h"
#include "ncclbuild/build.h"
#include "ncclbuild/cache.h"
#include "util/error.h"
#include "util/json.h"
#include "util/strings.h"

namespace coldstart::cli {
namespace {
using namespace coldstart::ncclbuild;

// The JSON of `nccl list --json` (the cache: its folder and every entry) and of `nccl env --json` (one build's loading
// lines); each build's own build.json is kManifestSchema (ncclbuild/cache.h).
constexpr const char* kCacheSchema = "coldstart.nccl-cache/1";
constexpr const char* kEnvSchema = "coldstart.nccl-env/1";

// The cache a command reads: --cache-dir, else the default; refused in one line when it is there and no folder.
std::string cache_or_default(const std::string& given) {
  const std::string dir = given.empty() ? default_cache_dir() : given;
  check_cache_dir(dir, given.empty() ? "the cache" : "--cache-dir");
  return dir;
}

nlohmann::json entry_json(const Entry& e) {
  nlohmann::json j = {
      {"name", e.name}, {"path", e.path}, {"complete", e.complete}, {"state", e.state}, {"size_bytes", e.size_bytes}};
  if (e.manifest) {
    j["which"] = which_name(e.manifest->which);
    j["version"] = e.manifest->version;
    j["arch"] = e.manifest->arch;
    j["library"] = e.manifest->library;
    j["patches"] = e.manifest->patches;
    j["series"] = e.manifest->series;
    j["built_at"] = e.manifest->built_at;
  }
  return j;
}

Run add_build(CLI::App& app) {
  auto req = std::make_shared<BuildRequest>();
  app.add_option("--which", req->which,
                 "patched: coldstart's NCCL; stock: NCCL's own of the same release, to compare against (bench on one "
                 "GPU runs both); both")
      ->capture_default_str();
  app.add_option("--version", req->version,
                 "The NCCL release to build (default: the one PyTorch loads, for --python's interpreter)");
  app.add_option("--src", req->src,
                 "NCCL's source: the release's tarball (GitHub's), a git repository or an unpacked tree (default: "
                 "download the release's tarball from GitHub)");
  app.add_option("--arch", req->arch, "Compute capabilities to build for, e.g. 90 or 90,100 (default: the GPUs here)");
  app.add_option("--cache-dir", req->cache_dir,
                 "The cache of builds (default: $XDG_CACHE_HOME/coldstart/nccl, or ~/.cache/coldstart/nccl)");
  app.add_option("--jobs", req->jobs, "make's parallel jobs (default: every core)")
      ->check(CLI::Range(1, 4096).description("1 to 4096"));
  app.add_option("--python", req->python, "The interpreter whose PyTorch decides the release")->capture_default_str();
  app.add_flag("--dry-run", req->dry_run,
               "Detect, check the source (build_nccl.sh --check-only) and print the plan; build nothing");
  return [req]() {
    const std::vector<BuildPlan> plans = plan_builds(*req, find_share(), node_probes());
    make_writable_dir(plans[0].cache_dir, "--cache-dir");  // before the plan is shown: a refusal is one line
    for (size_t i = 0; i < plans.size(); ++i) {
      if (plans.size() > 1)
        std::cout << fmt::format("nccl build: {} of {}: the {} library\n", i + 1, plans.size(),
                                 which_name(plans[i].which));
      for (const auto& line : describe_plan(plans[i])) std::cout << "nccl build: " << line << "\n";
      std::cout << std::flush;
      const int status = run_build(plans[i], [](const std::string& line) { std::cout << line << "\n" << std::flush; });
      if (status != 0) return status;  // interrupted: the next run continues where this one stopped
    }
    if (plans.size() > 1 && !req->dry_run)
      std::cout << "nccl build: both are in the cache (coldstart nccl list); `coldstart bench` on one GPU compares "
                   "them, each with cuMem on and off\n";
    return 0;
  };
}

// The build `name` names (default: the newest complete patched one), complete; InputError naming the fix.
Manifest build_named(const std::string& cache, const std::string& name) {
  if (name.empty()) {
    auto e = find_complete(cache, "");
    if (!e) throw InputError("no complete build in " + cache + ": make one with `coldstart nccl build`");
    return *e->manifest;
  }
  if (!looks_like_entry_name(name))
    throw InputError("nccl env " + shown(name) +
                     ": not a build's name such as 2.30.7+peer-regions (`coldstart nccl list`)");
  library_for(name, cache, "nccl env");  // refuses an entry that is missing or incomplete, naming the fix
  return *find_complete(cache, name)->manifest;
}

Run add_env(CLI::App& app) {
  struct Flags {
    std::string name, cache_dir;
    int ranks_per_gpu = 0;
    bool json = false;
  };
  auto f = std::make_shared<Flags>();
  app.add_option("name", f->name,
                 "A build's name, e.g. 2.30.7+peer-regions or 2.30.7+stock (default: the newest complete patched "
                 "build)");
  app.add_option("--cache-dir", f->cache_dir, "The cache of builds (default: as nccl build)");
  app.add_option("--ranks-per-gpu", f->ranks_per_gpu,
                 "Ranks the job puts on each GPU: above 1 the lines set NCCL_MULTI_RANK_GPU_ENABLE=1 (default: 2 on a "
                 "node of one GPU, else 1)")
      ->check(CLI::Range(1, 64).description("1 to 64"));
  app.add_flag("--json", f->json, "Print JSON");
  return [f]() {
    const std::string cache = cache_or_default(f->cache_dir);
    const Manifest m = build_named(cache, f->name);
    const JobShape job{static_cast<int>(gpu::probe_cuda().gpus.size()), f->ranks_per_gpu};
    if (f->json) {
      LoadLines l = load_lines(m.library, m.version, job);
      nlohmann::json env = nlohmann::json::object();
      for (const auto& [key, value] : l.env) env[key] = value;
      std::cout << dump_json({{"schema", kEnvSchema},
                              {"name", m.name},
                              {"which", which_name(m.which)},
                              {"library", m.library},
                              {"env", env},
                              {"torchrun", l.torchrun},
                              {"ray", l.ray},
                              {"slurm", l.slurm}},
                             1)
                << "\n";
    } else {
      for (const auto& line : describe_loading(m, job)) std::cout << line << "\n";
    }
    return 0;
  };
}

Run add_list(CLI::App& app) {
  struct Flags {
    std::string cache_dir;
    bool json = false;
  };
  auto f = std::make_shared<Flags>();
  app.add_option("--cache-dir", f->cache_dir, "The cache of builds (default: as nccl build)");
  app.add_flag("--json", f->json, "Print JSON");
  return [f]() {
    const std::string cache = cache_or_default(f->cache_dir);
    auto entries = list_entries(cache);
    if (f->json) {
      nlohmann::json list = nlohmann::json::array();
      for (const auto& e : entries) list.push_back(entry_json(e));
      std::cout << dump_json({{"schema", kCacheSchema}, {"cache_dir", cache}, {"entries", list}}, 1) << "\n";
      return 0;
    }
    if (entries.empty()) {
      std::cout << "no builds in " << shown(cache) << " (coldstart nccl build makes one)\n";
      return 0;
    }
    std::cout << fmt::format("{:<24} {:<8} {:<10} {:<10} {:>9}  {}\n", "name", "version", "arch", "state", "size",
                             "path");
    // Every field is a folder's or a file's word: control characters escaped, so that no name draws a row
    for (const auto& e : entries) {
      const std::string version = e.manifest ? shown(e.manifest->version, 16) : "-";
      const std::string arch = e.manifest ? shown(join(e.manifest->arch, ","), 32) : "-";
      std::cout << fmt::format("{:<24} {:<8} {:<10} {:<10} {:>9}  {}\n", shown(e.name, kMaxEntryName), version, arch,
                               e.complete ? "complete" : "incomplete", format_bytes(static_cast<double>(e.size_bytes)),
                               shown(e.path, 4096));
      if (!e.complete) std::cout << "    " << shown(e.state, 4096) << "\n";
    }
    return 0;
  };
}

}  // namespace

Run add_nccl(CLI::App& app) {
  app.require_subcommand(1);
  auto* build = app.add_subcommand(
      "build", "Build coldstart's patched NCCL for the release PyTorch loads, into the cache; print how to load it");
  auto* env = app.add_subcommand("env", "How to load a build: LD_PRELOAD for torchrun, Ray's runtime_env, Slurm");
  auto* list = app.add_subcommand("list", "The cache's builds: name, version, architectures, complete or not, size");
  Run build_run = add_build(*build), env_run = add_env(*env), list_run = add_list(*list);
  return [=]() {
    if (build->parsed()) return build_run();
    if (env->parsed()) return env_run();
    return list_run();
  };
}

}  // namespace coldstart::cli
