// cumem_share_bench: how long sharing cuMem buffers between processes takes when each process sees only its own GPU,
// in NCCL's pattern (one export/import round trip per buffer) against one merged region per peer and against exports
// made when the buffers are allocated. Starts its own ranks (fork + exec of itself, CUDA_VISIBLE_DEVICES per rank),
// on several GPUs or several ranks on one GPU, and interleaves the modes across trials. See docs/bench-micro.md.
//   build/cumem_share_bench --gpus 0,1 --ranks 2 --trials 5 --out cumem.json
//   build/cumem_share_bench --gpus 0 --ranks 2,4,8 --out cumem_1gpu.json
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>

#include "micro/args.h"
#include "micro/cu_driver.h"
#include "micro/cumem_rank.h"
#include "micro/launch.h"
#include "micro/self_test.h"
#include "micro/stats.h"

namespace cm = coldstart::micro;
using nlohmann::json;

namespace {

struct Options {
  std::string gpus = "0", ranks = "2", size = "10MiB", modes = "per-buffer,merged,export-at-alloc", neighbours = "next",
              out;
  int buffers = 48, trials = 5, timeout_s = 120;
  uint64_t seed = 1;
};

std::string program_path() {
  char path[4096];
  ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
  return n > 0 ? std::string(path, n) : "/proc/self/exe";
}

int refuse(const std::string& line, int code) {
  std::fprintf(stderr, "cumem_share_bench: %s\n", line.c_str());
  return code;
}

// The node's own view: a driver, a device, and every --gpus index on it. Empty when it can run.
std::string check_node(const std::vector<int>& gpus, int* driver_version, int* code) {
  cm::CuDriver cu;
  std::string error;
  *code = 2;
  if (!cm::load_cu_driver(&cu, &error)) return error;
  CUresult init = cu.cuInit(0);
  int count = 0;
  if (init == CUDA_ERROR_NO_DEVICE) return "no CUDA device";
  if (init != CUDA_SUCCESS) return cm::cu_error(cu, init, "cuInit");
  if (cu.cuDeviceGetCount(&count) != CUDA_SUCCESS || count == 0) return "no CUDA device";
  cu.cuDriverGetVersion(driver_version);
  for (int g : gpus)
    if (g >= count)
      return "--gpus " + std::to_string(g) + ": this node shows " + std::to_string(count) +
             " CUDA device(s), numbered from 0 (CUDA_VISIBLE_DEVICES applies)";
  return "";
}

json summarise(const std::vector<json>& runs, int ranks, const std::string& mode) {
  std::vector<double> connect, slowest, exports, imports, export_ms, import_ms, access_ms, at_alloc_ms;
  auto calls = [](const json& r, const char* name, const char* field) {
    return r["calls"].contains(name) ? r["calls"][name][field].get<double>() : 0.0;
  };
  for (const auto& run : runs) {
    if (run["ranks"] != ranks || run["mode"] != mode || !run["ok"]) continue;
    double worst = 0;
    for (const auto& r : run["per_rank"]) {
      connect.push_back(r["connect_ms"]);
      worst = std::max(worst, r["connect_ms"].get<double>());
      exports.push_back(calls(r, "cuMemExportToShareableHandle", "count"));
      imports.push_back(calls(r, "cuMemImportFromShareableHandle", "count"));
      export_ms.push_back(calls(r, "cuMemExportToShareableHandle", "total_ms"));
      import_ms.push_back(calls(r, "cuMemImportFromShareableHandle", "total_ms"));
      access_ms.push_back(calls(r, "cuMemSetAccess", "total_ms"));
      at_alloc_ms.push_back(calls(r, "export-at-alloc cuMemExportToShareableHandle", "total_ms"));
    }
    slowest.push_back(worst);
  }
  return {{"ranks", ranks},
          {"mode", mode},
          {"trials", slowest.size()},
          {"connect_ms", cm::describe(connect)},
          {"slowest_rank_connect_ms", cm::describe(slowest)},
          {"exports_per_rank", cm::median(exports)},
          {"imports_per_rank", cm::median(imports)},
          {"export_ms_per_rank", cm::describe(export_ms)},
          {"import_ms_per_rank", cm::describe(import_ms)},
          {"set_access_ms_per_rank", cm::describe(access_ms)},
          {"export_at_alloc_ms_per_rank", cm::describe(at_alloc_ms)}};
}

void print_table(const std::vector<json>& summary) {
  std::printf("\n%-5s %-15s %6s  %-24s %-9s %7s %7s %10s %10s %10s %12s\n", "ranks", "mode", "trials",
              "connect ms med [min-max]", "slowest", "exports", "imports", "export ms", "import ms", "access ms",
              "at-alloc ms");
  for (const auto& s : summary) {
    if (s["trials"] == 0) continue;
    char range[64];
    std::snprintf(range, sizeof range, "%.2f [%.2f-%.2f]", s["connect_ms"]["median"].get<double>(),
                  s["connect_ms"]["min"].get<double>(), s["connect_ms"]["max"].get<double>());
    std::printf("%-5d %-15s %6d  %-24s %-9.2f %7.0f %7.0f %10.2f %10.2f %10.2f %12.2f\n", s["ranks"].get<int>(),
                s["mode"].get<std::string>().c_str(), s["trials"].get<int>(), range,
                s["slowest_rank_connect_ms"]["median"].get<double>(), s["exports_per_rank"].get<double>(),
                s["imports_per_rank"].get<double>(), s["export_ms_per_rank"]["median"].get<double>(),
                s["import_ms_per_rank"]["median"].get<double>(), s["set_access_ms_per_rank"]["median"].get<double>(),
                s["export_at_alloc_ms_per_rank"]["median"].get<double>());
  }
  std::printf("(medians per rank over ranks x trials; slowest: median over trials of the slowest rank's connect)\n");
}

int launch(const Options& o, int argc, char** argv) {
  std::vector<int> gpus, ranks;
  uint64_t size = 0;
  std::string error;
  if (!cm::parse_int_list(o.gpus, &gpus, &error)) return refuse("--gpus " + error, 2);
  if (!cm::parse_int_list(o.ranks, &ranks, &error)) return refuse("--ranks " + error, 2);
  if (!cm::parse_size(o.size, &size, &error)) return refuse("--size " + error, 2);
  auto modes = cm::split_list(o.modes);
  for (const auto& m : modes)
    if (std::find(cm::kCumemModes.begin(), cm::kCumemModes.end(), m) == cm::kCumemModes.end())
      return refuse("--modes '" + m + "': expected per-buffer, merged or export-at-alloc", 2);
  for (int r : ranks)
    if (r < 2 || size < cm::kSlotBytes * r)
      return refuse("--ranks " + std::to_string(r) +
                        ": needs 2 or more ranks, "
                        "and --size at least 64 bytes per rank",
                    2);
  if (o.buffers < 1 || o.trials < 1) return refuse("--buffers and --trials must be at least 1", 2);
  int driver_version = 0, code = 0;
  std::string node = check_node(gpus, &driver_version, &code);
  if (!node.empty()) return refuse(node, code);

  const char* inherited = std::getenv("CUDA_VISIBLE_DEVICES");
  std::string program = program_path();
  std::vector<std::pair<int, std::string>> configs;
  for (int r : ranks)
    for (const auto& m : modes) configs.emplace_back(r, m);
  auto plan = cm::interleaved_plan(static_cast<int>(configs.size()), o.trials, o.seed);
  std::vector<json> runs;
  bool failed = false;
  for (size_t k = 0; k < plan.size() && !failed; ++k) {
    auto [world, mode] = configs[plan[k].config];
    std::string tag = "cumem-" + std::to_string(getpid()) + "-" + std::to_string(k);
    std::vector<cm::RankSpec> specs(world);
    for (int i = 0; i < world; ++i) {
      specs[i].visible_devices = cm::visible_device_for(inherited ? inherited : "", gpus[i % gpus.size()]);
      specs[i].args = {"--rank",       std::to_string(i),
                       "--world",      std::to_string(world),
                       "--mode",       mode,
                       "--trial",      std::to_string(plan[k].trial),
                       "--tag",        tag,
                       "--buffers",    std::to_string(o.buffers),
                       "--size",       std::to_string(size),
                       "--neighbours", o.neighbours};
    }
    cm::RunOutcome outcome = cm::run_ranks(program, specs, o.timeout_s);
    json run = {{"order", k}, {"ranks", world}, {"mode", mode}, {"trial", plan[k].trial}, {"ok", outcome.ok()}};
    if (!outcome.ok()) {
      run["error"] = outcome.failure();
      std::printf("FAIL run %zu/%zu: %d ranks, %s, trial %d: %s\n", k + 1, plan.size(), world, mode.c_str(),
                  plan[k].trial, outcome.failure().c_str());
      failed = true;
    } else {
      std::vector<double> connect;
      for (const auto& r : outcome.ranks) {
        run["per_rank"].push_back(json::parse(r.result));
        connect.push_back(run["per_rank"].back()["connect_ms"]);
      }
      std::printf("run %zu/%zu: %d ranks, %-15s trial %d: connect median %.2f ms, slowest %.2f ms\n", k + 1,
                  plan.size(), world, mode.c_str(), plan[k].trial, cm::median(connect),
                  *std::max_element(connect.begin(), connect.end()));
    }
    std::fflush(stdout);
    runs.push_back(std::move(run));
  }
  std::vector<json> summary;
  for (int r : ranks)
    for (const auto& m : modes) summary.push_back(summarise(runs, r, m));
  print_table(summary);
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  json context = {{"program", "cumem_share_bench"},
                  {"schema", 1},
                  {"argv", std::vector<std::string>(argv, argv + argc)},
                  {"host", host},
                  {"driver_version", driver_version},
                  {"cuda_visible_devices", inherited ? inherited : ""},
                  {"gpus", gpus},
                  {"ranks", ranks},
                  {"modes", modes},
                  {"buffers", o.buffers},
                  {"size", size},
                  {"neighbours", o.neighbours},
                  {"trials", o.trials},
                  {"seed", o.seed}};
  if (!o.out.empty()) {
    std::ofstream file(o.out);
    file << json{{"context", context}, {"summary", summary}, {"runs", runs}}.dump(1) << "\n";
    if (!file) return refuse("cannot write --out " + o.out, 1);
    std::printf("wrote %s\n", o.out.c_str());
  }
  return failed ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"cumem_share_bench: cuMem sharing between processes, per buffer vs merged vs exported at allocation"};
  Options o;
  cm::CumemRankConfig rank;
  bool self_test = false;
  std::string self_test_rank;
  app.add_option("--gpus", o.gpus, "GPU indices; rank i runs on GPU gpus[i % n], alone in its view")
      ->capture_default_str();
  app.add_option("--ranks", o.ranks, "rank counts to run, e.g. 2,4,8")->capture_default_str();
  app.add_option("--buffers", o.buffers, "buffers per rank and peer (NCCL: one per channel)")->capture_default_str();
  app.add_option("--size", o.size, "bytes per buffer (a multiple of the allocation granularity)")
      ->capture_default_str();
  app.add_option("--modes", o.modes, "per-buffer, merged, export-at-alloc")->capture_default_str();
  app.add_option("--neighbours", o.neighbours, "next: import from the next rank; both: from both neighbours")
      ->check(CLI::IsMember({"next", "both"}))
      ->capture_default_str();
  app.add_option("--trials", o.trials, "trials of every rank count and mode, interleaved")->capture_default_str();
  app.add_option("--seed", o.seed, "seed of the interleaved order")->capture_default_str();
  app.add_option("--timeout", o.timeout_s, "seconds one run may take before its ranks are killed")
      ->capture_default_str();
  app.add_option("--out", o.out, "JSON file of every trial's per-rank numbers");
  app.add_flag("--self-test", self_test, "check the parsing, the launcher and fd passing without a GPU");
  auto* hidden = app.add_option_group("");  // how the launcher starts a rank
  hidden->add_option("--rank", rank.rank);
  hidden->add_option("--world", rank.world);
  hidden->add_option("--mode", rank.mode);
  hidden->add_option("--trial", rank.trial);
  hidden->add_option("--tag", rank.tag);
  hidden->add_option("--self-test-rank", self_test_rank);
  CLI11_PARSE(app, argc, argv);
  if (self_test) return cm::micro_self_test(program_path());
  if (!self_test_rank.empty()) return cm::micro_self_test_rank(self_test_rank, rank.rank);
  if (!rank.tag.empty()) {
    std::string error;
    rank.buffers = o.buffers;
    rank.both = o.neighbours == "both";
    if (!cm::parse_size(o.size, &rank.size, &error)) return refuse(error, 2);
    return cm::run_cumem_rank(rank);
  }
  return launch(o, argc, argv);
}
