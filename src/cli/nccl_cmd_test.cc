// coldstart nccl end to end: build (against a stand-in build_nccl.sh, fake_share_test.h), two builds of one entry at
// once, an interrupted build, list and env with and without --json, bench --nccl-lib by a build's name, and each
// refusal as one line with exit status 2.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <thread>

#include <nlohmann/json.hpp>

#include "model/result.h"
#include "ncclbuild/fake_share_test.h"
#include "util/fs.h"
#include "util/process.h"
#include "util/run_for_test.h"
#include "util/strings.h"

namespace coldstart {
namespace {
namespace fs = std::filesystem;
using test_cli::Output;

// `coldstart ARGS` with the stand-in share and library, in a cache of the test's.
struct NcclCli {
  ncclbuild::testing::FakeShare share;
  TempDir cache{"coldstart-nccl-cache-"};
  std::string env(const std::string& more = "") const {
    return "env COLDSTART_SHARE_DIR=" + share.path() + " FAKE_LIB=" + COLDSTART_FAKE_PATCHED_NCCL +
           " XDG_CACHE_HOME=" + cache.path() + "/xdg " + more;
  }
  std::string cache_dir() const { return cache.path() + "/xdg/coldstart/nccl"; }
  Output run(const std::string& args, const std::string& more = "") const { return test_cli::run(args, env(more)); }
  std::string build_args(const std::string& version = "2.30.7") const {
    return "nccl build --version " + version + " --arch 90 --jobs 1 --src " + cache.path() + "/nccl.tar.gz";
  }
};

int line_count(const std::string& s) { return static_cast<int>(std::count(s.begin(), s.end(), '\n')); }
}  // namespace

TEST(NcclCli, BuildListAndEnv) {
  NcclCli c;
  Output o = c.run("nccl list");
  ASSERT_EQ(o.status, 0) << o.text;
  EXPECT_EQ(o.text, "no builds in " + c.cache_dir() + " (coldstart nccl build makes one)\n");
  o = c.run("nccl list --json");
  ASSERT_EQ(o.status, 0) << o.text;
  EXPECT_EQ(nlohmann::json::parse(o.text), nlohmann::json({{"schema", "coldstart.nccl-cache/1"},
                                                           {"cache_dir", c.cache_dir()},
                                                           {"entries", nlohmann::json::array()}}));
  o = c.run("nccl env");
  EXPECT_EQ(o.status, 2);
  EXPECT_EQ(o.text, "coldstart: no complete build in " + c.cache_dir() + ": make one with `coldstart nccl build`\n");

  o = c.run(c.build_args());
  ASSERT_EQ(o.status, 0) << o.text;
  EXPECT_NE(o.text.find("nccl build: NCCL 2.30.7 (--version)\n"), std::string::npos) << o.text;
  EXPECT_NE(o.text.find("$COLDSTART_SHARE_DIR: " + c.share.path()), std::string::npos) << o.text;
  EXPECT_NE(o.text.find("nccl build: built 2.30.7+peer-regions"), std::string::npos) << o.text;
  const std::string lib = c.cache_dir() + "/2.30.7+peer-regions/build/patched/lib/libnccl.so.2";
  EXPECT_NE(o.text.find("LD_PRELOAD=" + lib + " torchrun"), std::string::npos) << o.text;
  // An incomplete entry beside it: listed, never used
  fs::create_directories(c.cache_dir() + "/2.28.9+peer-regions/build");

  o = c.run("nccl list");
  ASSERT_EQ(o.status, 0) << o.text;
  EXPECT_NE(o.text.find("2.30.7+peer-regions      2.30.7   90         complete"), std::string::npos) << o.text;
  EXPECT_NE(o.text.find("2.28.9+peer-regions      -        -          incomplete"), std::string::npos) << o.text;
  EXPECT_NE(o.text.find("no build.json: building, failed or interrupted"), std::string::npos) << o.text;
  o = c.run("nccl list --json");
  ASSERT_EQ(o.status, 0) << o.text;
  auto j = nlohmann::json::parse(o.text);
  EXPECT_EQ(j["schema"], "coldstart.nccl-cache/1");
  EXPECT_EQ(j["cache_dir"], c.cache_dir());
  ASSERT_EQ(j["entries"].size(), 2u);
  EXPECT_EQ(j["entries"][0]["name"], "2.28.9+peer-regions");
  EXPECT_EQ(j["entries"][0]["complete"], false);
  EXPECT_EQ(j["entries"][1]["complete"], true);
  EXPECT_EQ(j["entries"][1]["library"], lib);
  EXPECT_EQ(j["entries"][1]["patches"], nlohmann::json({"peer-regions", "fd-reserve"}));
  EXPECT_GT(j["entries"][1]["size_bytes"].get<uint64_t>(), 1000u);

  // env: the newest complete build (the incomplete one is never it), or one by name; --cache-dir elsewhere
  o = c.run("nccl env");
  ASSERT_EQ(o.status, 0) << o.text;
  EXPECT_EQ(line_count(o.text), 7) << o.text;
  EXPECT_NE(o.text.find("2.30.7+peer-regions: " + lib + "\n"), std::string::npos) << o.text;
  // No GPU here, so the node's count is not known: the lines say when a job needs ranks to share a GPU
  EXPECT_NE(o.text.find("  a job with more ranks than GPUs (ranks sharing one) also needs "
                        "NCCL_MULTI_RANK_GPU_ENABLE=1\n"),
            std::string::npos)
      << o.text;
  EXPECT_NE(o.text.find("  Ray:       ray.init(runtime_env={\"env_vars\": {\"LD_PRELOAD\": \"" + lib + "\"}})"),
            std::string::npos)
      << o.text;
  EXPECT_NE(o.text.find("  Slurm:     srun --export=ALL,LD_PRELOAD=" + lib), std::string::npos) << o.text;
  o = c.run("nccl env 2.30.7+peer-regions --json --cache-dir " + c.cache_dir());
  ASSERT_EQ(o.status, 0) << o.text;
  j = nlohmann::json::parse(o.text);
  EXPECT_EQ(j["schema"], "coldstart.nccl-env/1");
  EXPECT_EQ(j["name"], "2.30.7+peer-regions");
  EXPECT_EQ(j["library"], lib);
  EXPECT_EQ(j["env"]["LD_PRELOAD"], lib);
  EXPECT_EQ(j["torchrun"], "LD_PRELOAD=" + lib + " torchrun --nproc-per-node N train.py");
  o = c.run("nccl env 2.28.9+peer-regions");
  EXPECT_EQ(o.status, 2);
  EXPECT_NE(o.text.find("is not complete (no build.json)"), std::string::npos) << o.text;
  EXPECT_EQ(line_count(o.text), 1) << o.text;
  o = c.run("nccl env 2.30.7+peer-regions --cache-dir " + c.cache.path() + "/elsewhere");
  EXPECT_EQ(o.status, 2);
  EXPECT_NE(o.text.find("no build of that name in " + c.cache.path() + "/elsewhere"), std::string::npos) << o.text;
}

// --which both: the patched library and NCCL's own of the same release, each in its entry, from one source; list shows
// both, env's default stays the patched one, and a job of two ranks on one GPU gets NCCL_MULTI_RANK_GPU_ENABLE=1.
TEST(NcclCli, BuildsTheStockLibraryBesideThePatchedOne) {
  NcclCli c;
  const std::string more = std::string("FAKE_STOCK_LIB=") + COLDSTART_FAKE_UNPATCHED_NCCL;
  Output o = c.run(c.build_args() + " --which both", more);
  ASSERT_EQ(o.status, 0) << o.text;
  EXPECT_NE(o.text.find("nccl build: 1 of 2: the patched library\n"), std::string::npos) << o.text;
  EXPECT_NE(o.text.find("nccl build: 2 of 2: the stock library\n"), std::string::npos) << o.text;
  EXPECT_NE(o.text.find("nccl build: patches: none: NCCL's own 2.30.7"), std::string::npos) << o.text;
  EXPECT_NE(o.text.find("nccl build: built 2.30.7+stock"), std::string::npos) << o.text;
  EXPECT_NE(o.text.find("the library carries none of the series: NCCL's own (read back from it)"), std::string::npos)
      << o.text;
  EXPECT_NE(o.text.find("`coldstart bench` on one GPU compares them"), std::string::npos) << o.text;
  const std::string stock = c.cache_dir() + "/2.30.7+stock/build/stock/lib/libnccl.so.2";
  const std::string patched = c.cache_dir() + "/2.30.7+peer-regions/build/patched/lib/libnccl.so.2";
  EXPECT_TRUE(fs::is_regular_file(stock));
  o = c.run("nccl list");
  ASSERT_EQ(o.status, 0) << o.text;
  EXPECT_NE(o.text.find("2.30.7+peer-regions      2.30.7   90         complete"), std::string::npos) << o.text;
  EXPECT_NE(o.text.find("2.30.7+stock             2.30.7   90         complete"), std::string::npos) << o.text;
  auto j = nlohmann::json::parse(c.run("nccl list --json").text);
  ASSERT_EQ(j["entries"].size(), 2u);
  EXPECT_EQ(j["entries"][1]["name"], "2.30.7+stock");
  EXPECT_EQ(j["entries"][1]["which"], "stock");
  EXPECT_EQ(j["entries"][1]["patches"], nlohmann::json::array());
  EXPECT_EQ(j["entries"][0]["which"], "patched");
  // Again: both are there; nothing is built
  o = c.run(c.build_args() + " --which both", more);
  ASSERT_EQ(o.status, 0) << o.text;
  EXPECT_NE(o.text.find("2.30.7+stock is built already (NCCL's own, for 90"), std::string::npos) << o.text;
  // env: the patched one unless the stock one is named; two ranks a GPU set NCCL_MULTI_RANK_GPU_ENABLE=1
  o = c.run("nccl env");
  EXPECT_NE(o.text.find("2.30.7+peer-regions: " + patched), std::string::npos) << o.text;
  o = c.run("nccl env 2.30.7+stock --ranks-per-gpu 2");
  ASSERT_EQ(o.status, 0) << o.text;
  EXPECT_NE(o.text.find("NCCL's own 2.30.7, to compare against"), std::string::npos) << o.text;
  EXPECT_NE(o.text.find("  torchrun:  LD_PRELOAD=" + stock + " NCCL_MULTI_RANK_GPU_ENABLE=1 torchrun"),
            std::string::npos)
      << o.text;
  EXPECT_NE(o.text.find("  Slurm:     srun --export=ALL,LD_PRELOAD=" + stock + ",NCCL_MULTI_RANK_GPU_ENABLE=1 "),
            std::string::npos)
      << o.text;
  j = nlohmann::json::parse(c.run("nccl env --ranks-per-gpu 2 --json").text);
  EXPECT_EQ(j["which"], "patched");
  EXPECT_EQ(j["env"], nlohmann::json({{"LD_PRELOAD", patched}, {"NCCL_MULTI_RANK_GPU_ENABLE", "1"}}));
  EXPECT_EQ(j["ray"], "ray.init(runtime_env={\"env_vars\": {\"LD_PRELOAD\": \"" + patched +
                          "\", \"NCCL_MULTI_RANK_GPU_ENABLE\": \"1\"}})");
  o = c.run("nccl build --which neither --version 2.30.7 --arch 90");
  EXPECT_EQ(o.status, 2);
  EXPECT_EQ(line_count(o.text), 1) << o.text;
  EXPECT_NE(o.text.find("--which neither: give patched"), std::string::npos) << o.text;
}

// What a new user does on a node of one GPU: nccl build --which both, then bench with no flags. The dry run plans the
// stock and the patched library, each with cuMem on and off, 2 ranks on the GPU; with one of them removed, bench runs
// the other and names the command that adds it back.
TEST(NcclCli, BenchWithNoFlagsOnOneGpuComparesTheStockAndThePatchedBuild) {
  NcclCli c;
  const std::string more = std::string("FAKE_STOCK_LIB=") + COLDSTART_FAKE_UNPATCHED_NCCL + " CUDA_VISIBLE_DEVICES=0";
  ASSERT_EQ(c.run(c.build_args() + " --which both", more).status, 0);
  const std::string out = c.cache.path() + "/run";
  Output o = c.run("bench --dry-run --out " + out, more);
  ASSERT_EQ(o.status, 0) << o.text;
  EXPECT_NE(o.text.find("They run `coldstart nccl build`'s 2.30.7+stock"), std::string::npos) << o.text;
  EXPECT_EQ(o.text.find("is not in the cache to compare with"), std::string::npos) << o.text;
  BenchResults r = load_bench_results(out + "/results.json");
  EXPECT_EQ(r.spec.ranks_per_gpu, 2);
  EXPECT_EQ(r.spec.devices, std::vector<std::string>{"0"});
  EXPECT_EQ(r.spec.modes, std::vector<Mode>{Mode::isolated});
  std::vector<std::string> labels;
  for (const auto& cfg : r.configs) labels.push_back(cfg.label());
  EXPECT_EQ(labels, (std::vector<std::string>{"isolated · NCCL_CUMEM_ENABLE=(unset) · 2.30.7+stock",
                                              "isolated · NCCL_CUMEM_ENABLE=0 · 2.30.7+stock",
                                              "isolated · NCCL_CUMEM_ENABLE=(unset) · 2.30.7+peer-regions",
                                              "isolated · NCCL_CUMEM_ENABLE=0 · 2.30.7+peer-regions"}));
  fs::remove_all(c.cache_dir() + "/2.30.7+stock");
  o = c.run("bench --dry-run --out " + out + "2", more);
  ASSERT_EQ(o.status, 0) << o.text;
  EXPECT_NE(o.text.find("NCCL's own 2.30.7 is not in the cache to compare with: `coldstart nccl build --version 2.30.7 "
                        "--which stock --src " +
                        c.cache.path() + "/nccl.tar.gz` adds it, and bench then runs both\n"),
            std::string::npos)
      << o.text;
  EXPECT_EQ(load_bench_results(out + "2/results.json").configs.size(), 2u);
}

TEST(NcclCli, BenchTakesABuildByItsName) {
  NcclCli c;
  ASSERT_EQ(c.run(c.build_args()).status, 0);
  Output o = c.run("bench --dry-run --gpus 2 --trials 1 --modes isolated --nccl-lib 2.30.7+peer-regions --out " +
                   c.cache.path() + "/run");
  ASSERT_EQ(o.status, 0) << o.text;
  fs::create_directories(c.cache_dir() + "/2.28.9+peer-regions");
  o = c.run("bench --dry-run --gpus 2 --trials 1 --nccl-lib 2.28.9+peer-regions --out " + c.cache.path() + "/run2");
  EXPECT_EQ(o.status, 2);
  EXPECT_EQ(o.text, "coldstart: --nccl-lib 2.28.9+peer-regions: its build in " + c.cache_dir() +
                        " is not complete (no build.json); finish it with `coldstart nccl build --version 2.28.9`\n");
  o = c.run("bench --dry-run --gpus 2 --trials 1 --nccl-lib 2.99.0+peer-regions --out " + c.cache.path() + "/run3");
  EXPECT_EQ(o.status, 2);
  EXPECT_NE(o.text.find("no build of that name in " + c.cache_dir()), std::string::npos) << o.text;
  // A path works as it did
  o = c.run("bench --dry-run --gpus 2 --trials 1 --modes isolated --nccl-lib " + c.cache_dir() +
            "/2.30.7+peer-regions/build/patched/lib/libnccl.so.2 --out " + c.cache.path() + "/run4");
  EXPECT_EQ(o.status, 0) << o.text;
}

// Two builds of one entry at once: the second waits, saying who holds the lock, then finds the build done; the
// stand-in script ran once.
TEST(NcclCli, TwoBuildsAtOnceTakeTurns) {
  NcclCli c;
  const std::string runs = c.cache.path() + "/runs";
  const std::string first = c.cache.path() + "/first.out";
  std::string cmd = c.env("FAKE_SLEEP=0.5 FAKE_RUNS=" + runs) + " " + COLDSTART_BIN + " " + c.build_args();
  // The second starts once the first is building (it holds the lock while make runs)
  Output o = test_cli::run_shell("(" + cmd + " >" + first + " 2>&1; echo $? >>" + first +
                                 ") & for i in $(seq 300); do grep -q 'make -j1' " + first +
                                 " 2>/dev/null && break; sleep 0.1; done; " + cmd + "; wait");
  ASSERT_EQ(o.status, 0) << o.text;
  EXPECT_NE(o.text.find("is being built by pid "), std::string::npos) << o.text;
  EXPECT_NE(o.text.find("2.30.7+peer-regions is built already"), std::string::npos) << o.text;
  const std::string first_out = read_file(first);
  EXPECT_NE(first_out.find("nccl build: built 2.30.7+peer-regions"), std::string::npos) << first_out;
  EXPECT_TRUE(first_out.ends_with("\n0\n")) << first_out;
  auto ran = split(read_file(runs), '\n');
  ASSERT_EQ(ran.size(), 3u) << read_file(runs);  // start, end, and the empty rest
  EXPECT_TRUE(ran[0].starts_with("start ")) << ran[0];
  EXPECT_TRUE(ran[1].starts_with("end ")) << ran[1];
}

// Ctrl-C: make is stopped, the command says the build continues on the next run and exits 130; nothing looks built.
TEST(NcclCli, AnInterruptedBuildLeavesNothingBuiltAndContinuesNextTime) {
  NcclCli c;
  const std::string out = c.cache.path() + "/out";
  SpawnSpec spec;
  spec.argv = {COLDSTART_BIN};
  for (const auto& w : split(c.build_args(), ' ')) spec.argv.emplace_back(w);
  spec.env = make_env({{"COLDSTART_SHARE_DIR", c.share.path()},
                       {"FAKE_LIB", COLDSTART_FAKE_PATCHED_NCCL},
                       {"XDG_CACHE_HOME", c.cache.path() + "/xdg"},
                       {"FAKE_SLEEP", "2"}},
                      {});
  spec.output_path = out;
  pid_t pid = spawn(spec);
  for (int i = 0; i < 100 && read_file(out).find("make -j1") == std::string::npos; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  kill_group(pid, SIGINT);  // as a terminal does: the whole foreground group
  int status = 0;
  ::waitpid(pid, &status, 0);
  const std::string text = read_file(out);
  ASSERT_TRUE(WIFEXITED(status)) << text;
  EXPECT_EQ(WEXITSTATUS(status), 130) << text;
  EXPECT_NE(text.find("interrupted: nothing in "), std::string::npos) << text;
  EXPECT_NE(text.find("run the same command again to continue"), std::string::npos) << text;
  EXPECT_FALSE(fs::exists(c.cache_dir() + "/2.30.7+peer-regions/build.json"));
  Output o = c.run(c.build_args());
  EXPECT_EQ(o.status, 0) << o.text;
  EXPECT_TRUE(fs::exists(c.cache_dir() + "/2.30.7+peer-regions/build.json"));
}

// Without --src: the download is announced, then made with curl (a stand-in on PATH here); offline, one line naming
// --src, nothing left behind.
TEST(NcclCli, WithoutSrcItSaysItDownloadsAndOfflineItNamesSrc) {
  NcclCli c;
  const std::string bin = c.cache.path() + "/bin";
  fs::create_directories(bin);
  write_file_atomic(bin + "/curl",
                    "#!/bin/sh\n"
                    "if [ \"${FAKE_CURL_OFFLINE:-}\" = 1 ]; then\n"
                    "  echo 'curl: (6) Could not resolve host: github.com' >&2; exit 6\n"
                    "fi\n"
                    "while [ $# -gt 0 ]; do case \"$1\" in -o) out=\"$2\"; shift 2 ;; *) shift ;; esac; done\n"
                    "echo tarball >\"$out\"\n");
  fs::permissions(bin + "/curl", fs::perms::owner_all);
  const std::string args = "nccl build --version 2.30.7 --arch 90 --jobs 1";
  const std::string entry = c.cache_dir() + "/2.30.7+peer-regions";
  const std::string url = "https://github.com/NVIDIA/nccl/archive/refs/tags/v2.30.7-1.tar.gz";
  Output o = c.run(args, "PATH=" + bin + ":$PATH FAKE_CURL_OFFLINE=1");
  EXPECT_EQ(o.status, 2) << o.text;
  EXPECT_NE(o.text.find("nccl build: no --src: downloading NCCL v2.30.7-1's source from " + url + " to " + entry +
                        "/v2.30.7-1.tar.gz\n"),
            std::string::npos)
      << o.text;
  EXPECT_NE(o.text.find("coldstart: no --src, and " + url +
                        " could not be downloaded (curl: (6) Could not resolve host: github.com): offline? fetch it "
                        "elsewhere and give --src FILE\n"),
            std::string::npos)
      << o.text;
  EXPECT_FALSE(fs::exists(entry + "/v2.30.7-1.tar.gz.part"));
  EXPECT_FALSE(fs::exists(entry + "/v2.30.7-1.tar.gz"));
  EXPECT_FALSE(fs::exists(entry + "/build.json"));
  // Online: the tarball lands in the entry and build_nccl.sh gets it
  const std::string runs = c.cache.path() + "/runs";
  o = c.run(args, "PATH=" + bin + ":$PATH FAKE_RUNS=" + runs);
  ASSERT_EQ(o.status, 0) << o.text;
  EXPECT_EQ(read_file(entry + "/v2.30.7-1.tar.gz"), "tarball\n");
  EXPECT_NE(read_file(runs).find("--src " + entry + "/v2.30.7-1.tar.gz --out " + entry + "/build"), std::string::npos)
      << read_file(runs);
  auto j = nlohmann::json::parse(read_file(entry + "/build.json"));
  EXPECT_EQ(j["source"], url);
}

TEST(NcclCli, EachRefusalIsOneLineWithExitStatus2) {
  NcclCli c;
  const std::string src = " --src " + c.cache.path() + "/nccl.tar.gz";
  for (const auto& [args, want] : std::vector<std::pair<std::string, std::string>>{
           {"nccl build --version 2.29.1 --arch 90" + src, "the series has no port for NCCL 2.29.1"},
           {"nccl build --version 2.30 --arch 90" + src, "--version 2.30: not an NCCL release number"},
           {"nccl build --version 2.30.7 --arch 95" + src, "--arch 95: '95' is not a GPU architecture"},
           {"nccl build --version 2.30.7 --arch 90 --cache-dir /proc/x" + src, "--cache-dir /proc/x cannot be made"},
           {"nccl build --version 2.30.7 --arch 90 --jobs 0" + src, "--jobs"},
           {"nccl env nonsense", "not a build's name"},
           {"nccl", "A subcommand is required"},
       }) {
    Output o = c.run(args);
    EXPECT_EQ(o.status, 2) << args << "\n" << o.text;
    EXPECT_NE(o.text.find(want), std::string::npos) << args << "\n" << o.text;
    EXPECT_EQ(line_count(o.text), 1) << args << "\n" << o.text;
  }
  // build_nccl.sh's own refusal of a source, passed through (the stand-in's)
  Output o = c.run(c.build_args(), "FAKE_EXIT=2");
  EXPECT_EQ(o.status, 2) << o.text;
  EXPECT_NE(o.text.find("coldstart: nccl build: --src " + c.cache.path() +
                        "/nccl.tar.gz is not NCCL as released (the stand-in says so)\n"),
            std::string::npos)
      << o.text;
  o = test_cli::run("frobnicate");
  EXPECT_NE(o.text.find("use one of bench, doctor, nccllog, trace, report, nccl, worker"), std::string::npos) << o.text;
}

}  // namespace coldstart
