// nccl_check: is an NCCL library right? Starts its ranks (fork + exec of itself, CUDA_VISIBLE_DEVICES per rank, several
// ranks per GPU allowed), loads the library given with --nccl-lib in each, and runs every collective coldstart runs at
// every size with every element checked on the host; optionally split communicators, communicators made and destroyed
// in turn with the GPU's memory, fds and threads read after each, an abort with a collective in flight, an abort from
// another thread in a new communicator's first collective, and communicators connecting at once from threads. Made to
// compare a stock and a patched NCCL on the same node. See docs/bench-micro.md.
//   build/nccl_check --nccl-lib /opt/nccl/stock/libnccl.so.2 --gpus 0,1 --mode isolated --out stock.json
//   build/nccl_check --nccl-lib ... --gpus 0 --ranks 4 --split 0,1 --repeat 5 --abort
//   build/nccl_check --nccl-lib ... --gpus 0 --ranks 4 --repeat 200 --abort-first --concurrent 4
//   build/nccl_check --nccl-lib STOCK,PATCHED --gpus 0 --ranks 4   (a mixed job: ranks take the libraries in turn)
#include <cuda_runtime_api.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "checks/nccl_rank.h"
#include "gpu/nccl.h"
#include "micro/args.h"
#include "micro/expected.h"
#include "micro/launch.h"
#include "micro/self_test.h"
#include "util/strings.h"

extern char** environ;

namespace cm = coldstart::micro;
using nlohmann::json;

namespace {

struct Options {
  std::string nccl_lib, gpus = "0", mode = "isolated", sizes, max_size = "1GiB", collectives, split = "none",
                        leak_tolerance = "64MiB", out;
  int ranks = 0, repeat = 1, timeout_s = 120, concurrent = 0;
  bool abort = false, abort_first = false, suspend = false;
};

std::string program_path() {
  char path[4096];
  ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
  return n > 0 ? std::string(path, n) : "/proc/self/exe";
}

int refuse(const std::string& line, int code) {
  std::fprintf(stderr, "nccl_check: %s\n", line.c_str());
  return code;
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& i : items) out += (out.empty() ? "" : ",") + i;
  return out;
}

// The rank's own options, parsed in the launcher first so that bad input is refused before any rank starts.
struct Plan {
  std::vector<int> gpus;
  std::vector<uint64_t> sizes;
  std::vector<std::string> collectives;
  std::vector<int> split;
  uint64_t leak_tolerance = 0;
};

std::string make_plan(const Options& o, Plan* p) {
  std::string error;
  if (!cm::parse_int_list(o.gpus, &p->gpus, &error)) return "--gpus " + error;
  if (std::set<int>(p->gpus.begin(), p->gpus.end()).size() != p->gpus.size())
    return "--gpus " + o.gpus + ": a GPU twice; --ranks places several ranks on one GPU";
  if (!o.sizes.empty()) {
    for (const auto& item : cm::split_list(o.sizes)) {
      uint64_t bytes = 0;
      if (!cm::parse_size(item, &bytes, &error)) return "--sizes " + error;
      if (bytes < sizeof(float)) return "--sizes " + item + ": at least 4 bytes (one float)";
      p->sizes.push_back(bytes);
    }
    std::sort(p->sizes.begin(), p->sizes.end());
  } else {
    uint64_t max = 0;
    if (!cm::parse_size(o.max_size, &max, &error)) return "--max-size " + error;
    p->sizes = cm::default_sizes(max);
    if (p->sizes.empty()) return "--max-size " + o.max_size + ": at least 4 bytes (one float)";
  }
  p->collectives = o.collectives.empty() ? cm::kCollectives : cm::split_list(o.collectives);
  for (const auto& c : p->collectives)
    if (std::find(cm::kCollectives.begin(), cm::kCollectives.end(), c) == cm::kCollectives.end())
      return "--collectives '" + c + "': expected some of " + join(cm::kCollectives);
  if (o.split != "none") {
    if (!cm::parse_int_list(o.split, &p->split, &error)) return "--split " + error;
    for (int s : p->split)
      if (s != 0 && s != 1) return "--split " + o.split + ": splitShare is 0 or 1 (e.g. --split 0,1), or none";
  }
  if (!cm::parse_size(o.leak_tolerance, &p->leak_tolerance, &error)) return "--leak-tolerance " + error;
  if (o.repeat < 1) return "--repeat must be at least 1";
  if (o.concurrent < 0 || o.concurrent > 16) return "--concurrent " + std::to_string(o.concurrent) + ": 0 to 16";
  if (o.timeout_s < 1) return "--timeout must be at least 1 second";
  cm::RankView view;
  if (!cm::rank_view(o.mode, {"0"}, 0, &view)) return "--mode " + o.mode + ": expected shared, isolated or remap";
  return "";
}

int launch(const Options& o, int argc, char** argv) {
  Plan p;
  std::string bad = make_plan(o, &p);
  if (!bad.empty()) return refuse(bad, 2);
  int world = o.ranks > 0 ? o.ranks : std::max(2, static_cast<int>(p.gpus.size()));
  if (world < 2) return refuse("--ranks " + std::to_string(world) + ": needs 2 or more ranks", 2);
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) return refuse("no CUDA device", 2);
  for (int g : p.gpus)
    if (g >= count)
      return refuse("--gpus " + std::to_string(g) + ": this node shows " + std::to_string(count) +
                        " CUDA device(s), numbered from 0 (CUDA_VISIBLE_DEVICES applies)",
                    2);
  // One library, or several that the ranks take in turn (rank i the (i mod n)th): a job that mixes builds.
  std::vector<coldstart::nccl::Library> libs;
  for (const auto& path : o.nccl_lib.empty() ? std::vector<std::string>{""} : coldstart::split(o.nccl_lib, ',')) {
    try {
      libs.push_back(coldstart::nccl::load(path));
    } catch (const std::exception& e) {
      return refuse(e.what(), 2);
    }
    if (libs.back().version != libs.front().version)
      return refuse("--nccl-lib: " + libs.front().path + " is NCCL " + libs.front().version_string() + " and " +
                        libs.back().path + " is " + libs.back().version_string() +
                        "; NCCL's ranks refuse each other at init unless their versions match",
                    2);
  }
  const coldstart::nccl::Library& lib = libs.front();
  bool several_per_gpu = world > static_cast<int>(p.gpus.size());
  if (several_per_gpu && lib.version < 23000)
    return refuse("--ranks " + std::to_string(world) + " on " + std::to_string(p.gpus.size()) +
                      " GPU(s) needs NCCL 2.30 or later (NCCL_MULTI_RANK_GPU_ENABLE); " + lib.path + " is " +
                      lib.version_string(),
                  2);
  for (const auto& l : libs) {
    if ((o.abort || o.abort_first) && !l.fn.CommAbort)
      return refuse(l.path + " has no ncclCommAbort: --abort and --abort-first need it", 2);
    if (o.suspend && !l.fn.CommSuspend)
      return refuse(l.path + " has no ncclCommSuspend (NCCL 2.30+): --suspend needs it", 2);
  }
  if (!std::getenv("NCCL_NVLS_ENABLE")) setenv("NCCL_NVLS_ENABLE", "0", 1);  // NVLink multicast stays out
  if (several_per_gpu && !std::getenv("NCCL_MULTI_RANK_GPU_ENABLE")) setenv("NCCL_MULTI_RANK_GPU_ENABLE", "1", 1);

  const char* inherited = std::getenv("CUDA_VISIBLE_DEVICES");
  std::vector<std::string> gpu_names;
  for (int g : p.gpus) gpu_names.push_back(cm::visible_device_for(inherited ? inherited : "", g));
  std::vector<std::string> sizes, split;
  for (auto b : p.sizes) sizes.push_back(std::to_string(b));
  for (int s : p.split) split.push_back(std::to_string(s));
  std::vector<cm::RankSpec> specs(world);
  std::vector<json> views;
  for (int i = 0; i < world; ++i) {
    cm::RankView view;
    cm::rank_view(o.mode, gpu_names, i, &view);
    specs[i].visible_devices = view.visible;
    specs[i].args = {"--rank",           std::to_string(i),
                     "--world",          std::to_string(world),
                     "--device",         std::to_string(view.device),
                     "--nccl-lib",       libs[i % libs.size()].path,
                     "--sizes",          join(sizes),
                     "--collectives",    join(p.collectives),
                     "--split",          split.empty() ? "none" : join(split),
                     "--repeat",         std::to_string(o.repeat),
                     "--leak-tolerance", std::to_string(p.leak_tolerance),
                     "--timeout",        std::to_string(o.timeout_s)};
    if (o.abort) specs[i].args.push_back("--abort");
    if (o.abort_first) specs[i].args.push_back("--abort-first");
    if (o.concurrent > 0) specs[i].args.insert(specs[i].args.end(), {"--concurrent", std::to_string(o.concurrent)});
    if (o.suspend) specs[i].args.push_back("--suspend");
    views.push_back({{"rank", i},
                     {"cuda_visible_devices", view.visible},
                     {"device", view.device},
                     {"nccl_lib", libs[i % libs.size()].path}});
  }
  size_t steps = p.sizes.size() * p.collectives.size() * (1 + p.split.size()) + 4 * o.repeat + 8 +
                 (o.abort_first ? 2 : 0) + (o.concurrent > 0 ? o.concurrent + 2 : 0) +
                 (o.suspend ? 2 * p.collectives.size() + 4 : 0);
  std::vector<std::string> paths;
  for (const auto& l : libs) paths.push_back(l.path);
  std::printf("nccl_check: NCCL %s (%s%s), %d ranks on GPUs %s, %s, %zu sizes of %zu collectives\n",
              lib.version_string().c_str(), libs.size() > 1 ? "ranks in turn: " : "", join(paths).c_str(), world,
              o.gpus.c_str(), o.mode.c_str(), p.sizes.size(), p.collectives.size());
  std::fflush(stdout);
  cm::RunOutcome outcome = cm::run_ranks(program_path(), specs, static_cast<int>(o.timeout_s * steps));

  json checks = json::array();
  int passed = 0, failed = 0;
  for (const auto& note : outcome.ranks[0].notes) {
    checks.push_back(json::parse(note));
    checks.back()["ok"] ? ++passed : ++failed;
  }
  json run = {{"ok", outcome.ok()}};
  if (!outcome.ok()) {
    run["failure"] = outcome.failure();
    std::printf("FAIL run: %s\n", outcome.failure().c_str());
    ++failed;
  }
  std::printf("%d passed, %d failed\n", passed, failed);
  json per_rank = json::array();
  for (const auto& r : outcome.ranks)
    per_rank.push_back(r.reported ? json::parse(r.result) : json{{"reported", false}});
  json env = json::object();
  for (char** e = environ; *e; ++e)
    if (std::string item = *e; item.rfind("NCCL_", 0) == 0 || item.rfind("CUDA_", 0) == 0)
      env[item.substr(0, item.find('='))] = item.substr(item.find('=') + 1);
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  json context = {{"program", "nccl_check"},
                  {"schema", 1},
                  {"argv", std::vector<std::string>(argv, argv + argc)},
                  {"host", host},
                  {"nccl", {{"version", lib.version_string()}, {"path", lib.path}}},
                  {"nccl_libs", paths},
                  {"mode", o.mode},
                  {"gpus", p.gpus},
                  {"ranks", world},
                  {"views", views},
                  {"sizes", p.sizes},
                  {"collectives", p.collectives},
                  {"split_share", p.split},
                  {"repeat", o.repeat},
                  {"abort", o.abort},
                  {"abort_first", o.abort_first},
                  {"concurrent", o.concurrent},
                  {"suspend", o.suspend},
                  {"timeout_s", o.timeout_s},
                  {"env", env}};
  if (!o.out.empty()) {
    std::ofstream file(o.out);
    file << json{{"context", context}, {"passed", passed}, {"failed", failed},
                 {"run", run},         {"checks", checks}, {"per_rank", per_rank}}
                .dump(1)
         << "\n";
    if (!file) return refuse("cannot write --out " + o.out, 1);
    std::printf("wrote %s\n", o.out.c_str());
  }
  return failed ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"nccl_check: every collective at every size, every element checked, for one NCCL library"};
  Options o;
  cm::NcclRankConfig rank;
  bool self_test = false;
  std::string self_test_rank;
  app.add_option("--nccl-lib", o.nccl_lib,
                 "the NCCL library to check (default: found as coldstart finds it); A,B: a mixed job, rank i loads the "
                 "(i mod n)th (one NCCL version)");
  app.add_option("--gpus", o.gpus, "GPU indices; rank i runs on GPU gpus[i % n]")->capture_default_str();
  app.add_option("--ranks", o.ranks, "ranks (default: one per GPU, at least 2); more than GPUs needs NCCL 2.30+");
  app.add_option("--mode", o.mode, "what each rank sees: shared, isolated, remap")->capture_default_str();
  app.add_option("--sizes", o.sizes, "sizes to check (bytes of the larger buffer), e.g. 4,64KiB,1GiB");
  app.add_option("--max-size", o.max_size, "without --sizes: 4 bytes, then powers of 4 up to this")
      ->capture_default_str();
  app.add_option("--collectives", o.collectives, "some of " + join(cm::kCollectives) + " (default: all)");
  app.add_option("--split", o.split, "splitShare values to check split communicators with (0, 1, 0,1) or none")
      ->capture_default_str();
  app.add_option("--repeat", o.repeat, "communicators made and destroyed in turn, the GPU's memory read after each")
      ->capture_default_str();
  app.add_option("--leak-tolerance", o.leak_tolerance, "how far free memory may fall over --repeat")
      ->capture_default_str();
  app.add_flag("--abort", o.abort, "end with ncclCommAbort while an all_reduce is in flight");
  app.add_flag("--abort-first", o.abort_first,
               "ncclCommAbort from another thread while a new communicator's first all_reduce connects (the last "
               "rank never joins); memory, fds and threads must come back");
  app.add_option("--concurrent", o.concurrent,
                 "children of the world (ncclCommSplit) whose first all_reduce runs at once, a thread each")
      ->capture_default_str();
  app.add_flag("--suspend", o.suspend,
               "ncclCommSuspend (memory) and ncclCommResume on the connected world, then check again (NCCL 2.30+)");
  app.add_option("--timeout", o.timeout_s, "seconds a rank may spend in one step before it counts as hung")
      ->capture_default_str();
  app.add_option("--out", o.out, "JSON file of every check");
  app.add_flag("--self-test", self_test, "check parsing, expected values, fd passing and the launcher without a GPU");
  auto* hidden = app.add_option_group("");  // how the launcher starts a rank
  auto* as_rank = hidden->add_option("--rank", rank.rank);
  hidden->add_option("--world", rank.world);
  hidden->add_option("--device", rank.device);
  hidden->add_option("--self-test-rank", self_test_rank);
  CLI11_PARSE(app, argc, argv);
  if (self_test) return cm::micro_self_test(program_path());
  if (!self_test_rank.empty()) return cm::micro_self_test_rank(self_test_rank, rank.rank);
  if (as_rank->count()) {
    Plan p;
    std::string bad = make_plan(o, &p);
    if (!bad.empty()) return refuse(bad, 2);
    rank.nccl_lib = o.nccl_lib;
    rank.sizes = p.sizes;
    rank.collectives = p.collectives;
    rank.split_share = p.split;
    rank.repeat = o.repeat;
    rank.leak_tolerance = p.leak_tolerance;
    rank.abort = o.abort;
    rank.abort_first = o.abort_first;
    rank.concurrent = o.concurrent;
    rank.suspend = o.suspend;
    rank.timeout_s = o.timeout_s;
    return cm::run_nccl_rank(rank);
  }
  return launch(o, argc, argv);
}
