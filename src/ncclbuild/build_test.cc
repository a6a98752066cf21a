// nccl build without NCCL: the plan's refusals, the architectures, the progress read from a make log, and the build
// itself against a stand-in build_nccl.sh that "builds" a fake library (fake_share_test.h): the manifest written last
// and only for a library that loads and carries the series, a build that fails, is refused or is interrupted leaving
// nothing that looks built, and a build that is there already not run again.
#include "ncclbuild/build.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>

#include "ncclbuild/fake_share_test.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/strings.h"

namespace coldstart::ncclbuild {
namespace {
namespace fs = std::filesystem;

// A node with one H200 and a PyTorch that loads `torch_version`; or no GPU.
Probes node(std::vector<std::pair<int, int>> caps, const std::string& torch_version = "2.28.9") {
  Probes p;
  p.capabilities = [caps](std::string* problem) {
    if (caps.empty()) *problem = "no NVIDIA driver found";
    return caps;
  };
  p.torch_nccl = [torch_version](const std::string& python) {
    TorchNccl t;
    t.python = "/usr/bin/" + python;
    t.torch_dir = "/site/torch";
    t.torch_version = "2.11.0";
    t.library = "/site/nvidia/nccl/lib/libnccl.so.2";
    t.version = torch_version;
    return t;
  };
  return p;
}

// The environment the stand-in script reads, set for one test and cleared after.
class FakeEnv {
 public:
  FakeEnv(std::initializer_list<std::pair<const char*, std::string>> vars) {
    for (const auto& [k, v] : vars) {
      ::setenv(k, v.c_str(), 1);
      keys_.push_back(k);
    }
  }
  ~FakeEnv() {
    for (const auto& k : keys_) ::unsetenv(k.c_str());
  }

 private:
  std::vector<std::string> keys_;
};

struct Said {
  std::vector<std::string> lines;
  std::function<void(const std::string&)> fn() {
    return [this](const std::string& l) { lines.push_back(l); };
  }
  std::string text() const { return join(lines, "\n"); }
};
}  // namespace

TEST(NcclBuildPlan, TheReleaseIsPyTorchsUnlessGivenAndMustHaveAPort) {
  testing::FakeShare share;
  BuildRequest req;
  req.arch = "90";
  req.cache_dir = "/tmp/c";
  BuildPlan p = plan_build(req, share.share(), node({{9, 0}}));
  EXPECT_EQ(p.port.version, "2.28.9");
  EXPECT_NE(p.version_from.find("the release PyTorch 2.11.0 loads (/site/nvidia/nccl/lib/libnccl.so.2"),
            std::string::npos)
      << p.version_from;
  EXPECT_EQ(p.entry, "/tmp/c/2.28.9+peer-regions");
  EXPECT_EQ(p.library, "/tmp/c/2.28.9+peer-regions/build/patched/lib/libnccl.so.2");
  // No --src: the release's tarball from GitHub, into the entry
  EXPECT_EQ(p.download, "https://github.com/NVIDIA/nccl/archive/refs/tags/v2.28.9-1.tar.gz");
  EXPECT_EQ(p.src, "/tmp/c/2.28.9+peer-regions/v2.28.9-1.tar.gz");
  auto argv = p.script_argv(p.entry + "/build", false);
  EXPECT_EQ(join(std::vector<std::string>(argv.begin() + 1, argv.end()), " "),
            share.path() + "/scripts/build_nccl.sh --src /tmp/c/2.28.9+peer-regions/v2.28.9-1.tar.gz --out " +
                "/tmp/c/2.28.9+peer-regions/build --which patched --version 2.28.9 --arch 90 --jobs " +
                std::to_string(p.jobs) + " --seed-from /tmp/c/2.28.9+stock/build");

  // PyTorch's release without a port: the ports are named, and --version as the way
  std::string e = testing::input_error_of([&] { plan_build(req, share.share(), node({{9, 0}}, "2.27.3")); });
  EXPECT_EQ(e,
            "PyTorch loads NCCL 2.27.3 (/site/nvidia/nccl/lib/libnccl.so.2); the series has no port for it, only for "
            "2.28.9, 2.30.7: give --version one of them (the job then loads that release in place of PyTorch's)");
  req.version = "2.29.1";
  e = testing::input_error_of([&] { plan_build(req, share.share(), node({{9, 0}})); });
  EXPECT_EQ(e,
            "--version 2.29.1: the series has no port for NCCL 2.29.1; it has ports for 2.28.9, 2.30.7: give one of "
            "them");
  for (const char* bad : {"2.30", "v2.30.7", "latest", "2.30.7-1"}) {
    req.version = bad;
    e = testing::input_error_of([&] { plan_build(req, share.share(), node({{9, 0}})); });
    EXPECT_NE(e.find(std::string("--version ") + bad + ": not an NCCL release number such as 2.30.7"),
              std::string::npos)
        << e;
  }
  req.version = "2.30.7";
  req.src = "relative/nccl.tar.gz";
  p = plan_build(req, share.share(), node({}));  // --arch given: no GPU needed
  EXPECT_EQ(p.src, (fs::current_path() / "relative/nccl.tar.gz").string());
  EXPECT_EQ(p.download, "");
  EXPECT_EQ(describe_plan(p)[0], "NCCL 2.30.7 (--version)");
}

TEST(NcclBuildPlan, TheArchitecturesAreTheGpusHereUnlessGivenAndMustBeKnown) {
  testing::FakeShare share;
  BuildRequest req;
  req.version = "2.30.7";
  BuildPlan p = plan_build(req, share.share(), node({{9, 0}, {9, 0}, {10, 0}}));
  EXPECT_EQ(p.arch, (std::vector<std::string>{"90", "100"}));
  EXPECT_EQ(p.arch_from, "the GPUs here: 9.0, 9.0, 10.0");
  std::string e = testing::input_error_of([&] { plan_build(req, share.share(), node({})); });
  EXPECT_EQ(e,
            "no GPU here to build for (no NVIDIA driver found): give --arch, the compute capabilities of the job's "
            "GPUs, e.g. --arch 90 for H100 and H200");
  EXPECT_EQ(parse_arch("90, 100,90a,120f"), (std::vector<std::string>{"90", "100", "90a", "120f"}));
  EXPECT_EQ(parse_arch("80,80"), (std::vector<std::string>{"80"}));
  for (const char* bad : {"95", "sm_90", "9.0", "100x", "80a", "", "90,,100", "1000"}) {
    e = testing::input_error_of([&] { parse_arch(bad); });
    EXPECT_NE(e.find("is not a GPU architecture NCCL builds for"), std::string::npos) << bad << ": " << e;
  }
  req.arch = "95";
  e = testing::input_error_of([&] { plan_build(req, share.share(), node({{9, 0}})); });
  EXPECT_NE(e.find("--arch 95: '95' is not a GPU architecture"), std::string::npos) << e;
}

TEST(NcclBuildProgress, FilesAreCountedOnceAgainstTheTreeAndWhatNcclGenerated) {
  TempDir tmp("coldstart-progress-");
  const std::string src = tmp.path() + "/src-patched", obj = tmp.path() + "/patched/obj";
  for (const char* f : {"src/init.cc", "src/misc/a.cc", "src/os/windows.cc", "src/transport/net_ib_stub.cc",
                        "src/transport/doca/x.cpp", "src/device/common.cu"}) {
    fs::create_directories(fs::path(src + "/" + f).parent_path());
    write_file_atomic(src + "/" + f, "");
  }
  MakeLogReader reader(tmp.path() + "/patched.log", src, obj);
  EXPECT_EQ(reader.read().compiled, 0u);  // no log yet
  write_file_atomic(tmp.path() + "/patched.log",
                    "Compiling  init.cc                             > /o/init.o\n"
                    "Grabbing   nccl.h                              > /o/include/nccl.h\n"
                    "Compiling  misc/a.cc                           > /o/misc/a.o\n"
                    "Compiling  init.cc                             > /o/init.o\n"  // a resumed make's second try
                    "Compiling       src/device/common.cu\n"
                    "Compil");
  MakeProgress m = reader.read();
  EXPECT_EQ(m.compiled, 3u);
  EXPECT_EQ(m.total, 0u);  // the device files are not generated yet: no total
  fs::create_directories(obj + "/device/gensrc/symmetric");
  for (const char* f : {"a.cu", "b.cu", "host_table.cc", "rules.mk", "symmetric/c.cu"})
    write_file_atomic(obj + "/device/gensrc/" + f, "");
  std::ofstream(tmp.path() + "/patched.log", std::ios::app) << "ing  misc/b.cc > /o/b.o\n";
  m = reader.read();
  EXPECT_EQ(m.compiled, 4u);
  EXPECT_EQ(m.total, 3u + 2u + 4u);  // init.cc a.cc x.cpp; common.cu onerank.cu; a b host_table c
  EXPECT_EQ(m.compiled_device, 1u);  // common.cu
  EXPECT_EQ(m.total_device, 2u + 4u);

  // A build that started from another's objects (build_nccl.sh --seed-from) counts them as compiled: almost done
  std::ofstream(tmp.path() + "/patched.log", std::ios::app)
      << "Seeded     120 host and 190 device objects from /c/2.30.7+stock/build/stock\n";
  m = reader.read();
  EXPECT_EQ(m.compiled, 4u + 310u);
  EXPECT_EQ(m.compiled_device, 1u + 190u);
  EXPECT_EQ(m.total, m.compiled);

  EXPECT_EQ(progress_line({57, 300}, {}, 72), "compiled 57 of ~300 files, 1m12s, about 5m07s left");
  EXPECT_EQ(progress_line({57, 300}, {55, 300}, 72), "compiled 57 of ~300 files, 1m12s");  // too few this run to tell
  EXPECT_EQ(progress_line({3, 0}, {}, 4), "compiled 3 files, 4s");
  EXPECT_EQ(format_elapsed(3725), "1h02m");
}

TEST(NcclBuildProgress, ADeviceFileCountsAsSeveralHostFilesInTheEstimate) {
  // 110 host and 10 device files done in 60 s: 140 host files' worth; 189 device files left, 567 worth
  EXPECT_EQ(progress_line({120, 309, 10, 199}, {}, 60), "compiled 120 of ~309 files, 1m00s, about 4m03s left");
  // Ten seconds into the H200 node's build (41 host files), the estimate counting files alike said 1m05s left of
  // 4m34s; weighted it says 2m42s
  EXPECT_EQ(progress_line({41, 309, 0, 199}, {}, 10), "compiled 41 of ~309 files, 10s, about 2m42s left");
  // A resumed build counts only this run's work
  EXPECT_EQ(progress_line({150, 309, 40, 199}, {120, 309, 10, 199}, 60),
            "compiled 150 of ~309 files, 1m00s, about 5m18s left");
}

namespace {
// A plan for the stand-in share, in a cache of its own.
BuildPlan fake_plan(const testing::FakeShare& share, const std::string& cache, const std::string& arch = "90") {
  BuildRequest req;
  req.version = "2.30.7";
  req.arch = arch;
  req.src = "/nccl/v2.30.7-1.tar.gz";
  req.cache_dir = cache;
  req.jobs = 1;
  req.progress_every_s = 0.2;
  return plan_build(req, share.share(), node({}));
}
}  // namespace

TEST(NcclBuildRun, TheManifestIsWrittenLastForALibraryThatCarriesTheSeries) {
  testing::FakeShare share;
  TempDir cache("coldstart-cache-");
  BuildPlan p = fake_plan(share, cache.path());
  const std::string series = series_hash(share.share(), p.port);
  FakeEnv env{{"FAKE_LIB", COLDSTART_FAKE_PATCHED_NCCL}, {"FAKE_SLEEP", "0.3"}, {"FAKE_SERIES", series}};
  Said said;
  ASSERT_EQ(run_build(p, said.fn()), 0) << said.text();
  const std::string out = said.text();
  EXPECT_NE(out.find("build_nccl: patched: make -j1"), std::string::npos) << out;
  EXPECT_NE(out.find("nccl build: compiled "), std::string::npos) << out;  // the progress, condensed
  EXPECT_NE(out.find("nccl build: built 2.30.7+peer-regions in "), std::string::npos) << out;
  EXPECT_NE(out.find("the library carries peer-regions, fd-reserve (read back from it)"), std::string::npos) << out;
  EXPECT_NE(out.find("  torchrun:  LD_PRELOAD=" + p.library + " torchrun"), std::string::npos) << out;
  EXPECT_NE(out.find("  Ray:       ray.init(runtime_env={\"env_vars\": {\"LD_PRELOAD\": \"" + p.library),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("  Slurm:     srun --export=ALL,LD_PRELOAD=" + p.library), std::string::npos) << out;

  auto e = find_complete(cache.path(), "2.30.7+peer-regions");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->manifest->library, p.library);
  EXPECT_EQ(e->manifest->arch, std::vector<std::string>{"90"});
  EXPECT_EQ(e->manifest->series, series);
  EXPECT_EQ(e->manifest->source, "/nccl/v2.30.7-1.tar.gz");
  EXPECT_EQ(e->manifest->patches, (std::vector<std::string>{"peer-regions", "fd-reserve"}));

  // Built already: nothing runs again
  {
    FakeEnv runs{{"FAKE_RUNS", cache.path() + "/runs"}};
    Said again;
    ASSERT_EQ(run_build(p, again.fn()), 0);
    EXPECT_NE(again.text().find("2.30.7+peer-regions is built already (series " + series + ", for 90"),
              std::string::npos)
        << again.text();
    EXPECT_FALSE(fs::exists(cache.path() + "/runs"));
  }
  // Other architectures: built beside the complete build, then switched in; the old one goes
  BuildPlan other = fake_plan(share, cache.path(), "90,100");
  Said rebuilt;
  ASSERT_EQ(run_build(other, rebuilt.fn()), 0) << rebuilt.text();
  EXPECT_NE(rebuilt.text().find("building beside the complete build (for 90, series " + series), std::string::npos)
      << rebuilt.text();
  EXPECT_EQ(find_complete(cache.path(), "")->manifest->arch, (std::vector<std::string>{"90", "100"}));
  EXPECT_EQ(find_complete(cache.path(), "")->manifest->library, p.library);  // the path the job's lines name
  EXPECT_FALSE(fs::exists(p.entry + "/next"));
}

// --which both: the patched library, then NCCL's own of the same release in an entry of its own, from the same source
// (a download is the patched entry's tarball, fetched once). A stock build whose library carries the series is no
// stock build; on a node of one GPU the lines let two ranks share it.
TEST(NcclBuildRun, TheStockLibraryIsBuiltBesideThePatchedOne) {
  testing::FakeShare share;
  TempDir cache("coldstart-cache-");
  BuildRequest req;
  req.which = "both";
  req.version = "2.30.7";
  req.arch = "90";
  req.cache_dir = cache.path();
  req.jobs = 1;
  Probes one_gpu = node({{9, 0}});
  one_gpu.gpu_count = [] { return 1; };  // --arch is given: the GPUs are counted apart
  auto plans = plan_builds(req, share.share(), one_gpu);
  ASSERT_EQ(plans.size(), 2u);
  EXPECT_EQ(plans[0].which, Which::patched);
  EXPECT_EQ(plans[1].which, Which::stock);
  EXPECT_EQ(plans[1].entry, cache.path() + "/2.30.7+stock");
  EXPECT_EQ(plans[1].library, cache.path() + "/2.30.7+stock/build/stock/lib/libnccl.so.2");
  EXPECT_EQ(plans[1].src, plans[0].src);  // the download, fetched once into the patched entry
  EXPECT_EQ(plans[1].download, plans[0].download);
  const auto argv = plans[1].script_argv("/out", false);
  EXPECT_EQ(argv[std::find(argv.begin(), argv.end(), "--which") - argv.begin() + 1], "stock");
  // Each starts from the other's finished build where there is one: the stock one from the patched one just built
  EXPECT_EQ(argv[std::find(argv.begin(), argv.end(), "--seed-from") - argv.begin() + 1], plans[0].entry + "/build");
  EXPECT_EQ(plans[0].seed, cache.path() + "/2.30.7+stock/build");
  EXPECT_NE(join(describe_plan(plans[1]), "\n").find("patches: none: NCCL's own 2.30.7"), std::string::npos);

  req.src = "/nccl/v2.30.7-1.tar.gz";
  // A stock build whose library carries the series is refused, and nothing counts as built (in a cache of its own: a
  // library loaded once stays loaded, and the good build below writes the same path)
  {
    TempDir wrong("coldstart-cache-");
    req.cache_dir = wrong.path();
    BuildPlan p = plan_builds(req, share.share(), one_gpu)[1];
    FakeEnv env{{"FAKE_LIB", COLDSTART_FAKE_PATCHED_NCCL}};
    Said said;
    EXPECT_NE(testing::runtime_error_of([&] { run_build(p, said.fn()); }).find("carries coldstart's patches"),
              std::string::npos);
    EXPECT_FALSE(find_complete(wrong.path(), "2.30.7+stock"));
    req.cache_dir = cache.path();
  }
  plans = plan_builds(req, share.share(), one_gpu);
  EXPECT_EQ(plans[1].src, "/nccl/v2.30.7-1.tar.gz");
  FakeEnv env{{"FAKE_LIB", COLDSTART_FAKE_PATCHED_NCCL}, {"FAKE_STOCK_LIB", COLDSTART_FAKE_UNPATCHED_NCCL}};
  for (const auto& p : plans) {
    Said said;
    ASSERT_EQ(run_build(p, said.fn()), 0) << said.text();
    // One GPU here: the lines set NCCL_MULTI_RANK_GPU_ENABLE=1 for the job's two ranks on it
    EXPECT_NE(said.text().find("  torchrun:  LD_PRELOAD=" + p.library +
                               " NCCL_MULTI_RANK_GPU_ENABLE=1 torchrun --nproc-per-node 2 train.py"),
              std::string::npos)
        << said.text();
  }
  auto stock = find_complete(cache.path(), "2.30.7+stock");
  ASSERT_TRUE(stock);
  EXPECT_EQ(stock->manifest->which, Which::stock);
  EXPECT_EQ(stock->manifest->series, kStockSeries);
  EXPECT_TRUE(stock->manifest->patches.empty());
  EXPECT_EQ(find_complete(cache.path(), "")->name, "2.30.7+peer-regions");
  req.which = "neither";
  EXPECT_NE(testing::input_error_of([&] { plan_builds(req, share.share(), one_gpu); }).find("--which neither"),
            std::string::npos);
}

TEST(NcclBuildRun, AFailedRefusedOrWrongBuildLeavesNothingThatLooksBuilt) {
  testing::FakeShare share;
  TempDir cache("coldstart-cache-");
  BuildPlan p = fake_plan(share, cache.path());
  auto built = [&] { return find_complete(cache.path(), "").has_value(); };
  {
    FakeEnv env{{"FAKE_LIB", COLDSTART_FAKE_PATCHED_NCCL}, {"FAKE_EXIT", "1"}};
    Said said;
    std::string e = testing::runtime_error_of([&] { run_build(p, said.fn()); });
    EXPECT_NE(e.find("nothing in " + p.entry + " counts as built"), std::string::npos) << e;
    EXPECT_NE(said.text().find("build_nccl: patched: make failed"), std::string::npos) << said.text();
    EXPECT_FALSE(built());
    auto entries = list_entries(cache.path());
    ASSERT_EQ(entries.size(), 1u);
    EXPECT_FALSE(entries[0].complete);
  }
  {
    // build_nccl.sh's refusal is the one line, passed through (exit status 2)
    FakeEnv env{{"FAKE_EXIT", "2"}};
    Said said;
    std::string e = testing::input_error_of([&] { run_build(p, said.fn()); });
    EXPECT_EQ(e, "nccl build: --src /nccl/v2.30.7-1.tar.gz is not NCCL as released (the stand-in says so)");
    EXPECT_NE(said.text().find("build_nccl: patched: starting"), std::string::npos) << said.text();
    EXPECT_EQ(said.text().find("the stand-in says so"), std::string::npos) << "said twice: " << said.text();
    EXPECT_FALSE(built());
  }
  {
    // A library without the series' marks, or of another release, is no build of the series
    FakeEnv env{{"FAKE_LIB", COLDSTART_FAKE_UNPATCHED_NCCL}};
    Said said;
    std::string e = testing::runtime_error_of([&] { run_build(p, said.fn()); });
    EXPECT_NE(e.find("does not carry the series"), std::string::npos) << e;
    EXPECT_FALSE(built());
  }
  {
    TempDir other("coldstart-cache-");  // a fresh entry: the loader keeps what it loaded by path
    BuildPlan q = fake_plan(share, other.path());
    FakeEnv env{{"FAKE_LIB", COLDSTART_FAKE_PATCHED_NCCL}, {"FAKE_NCCL_VERSION", "22809"}};
    Said said;
    std::string e = testing::runtime_error_of([&] { run_build(q, said.fn()); });
    EXPECT_NE(e.find("is NCCL 2.28.9, not 2.30.7"), std::string::npos) << e;
    EXPECT_FALSE(find_complete(other.path(), ""));
  }
  {
    // A stamp of another series than this binary's: build_nccl.sh and the binary disagree, nothing is taken
    TempDir other("coldstart-cache-");
    BuildPlan q = fake_plan(share, other.path());
    FakeEnv env{{"FAKE_LIB", COLDSTART_FAKE_PATCHED_NCCL}, {"FAKE_SERIES", "ffffffffffffffff"}};
    Said said;
    std::string e = testing::runtime_error_of([&] { run_build(q, said.fn()); });
    EXPECT_NE(e.find("another series"), std::string::npos) << e;
    EXPECT_FALSE(find_complete(other.path(), ""));
  }
  // The same entry once the cause is gone: the build continues and completes
  FakeEnv env{{"FAKE_LIB", COLDSTART_FAKE_PATCHED_NCCL}};
  TempDir fresh("coldstart-cache-");
  BuildPlan q = fake_plan(share, fresh.path());
  {
    FakeEnv fail{{"FAKE_EXIT", "1"}};
    Said said;
    EXPECT_THROW(run_build(q, said.fn()), RuntimeError);
  }
  Said said;
  EXPECT_EQ(run_build(q, said.fn()), 0) << said.text();
  EXPECT_TRUE(find_complete(fresh.path(), ""));
}

// A complete build is replaced only by a complete one: a rebuild for other architectures or another series is made
// beside it (next/) and switched in once its library checks; a refused (a mistyped --src), failed or running rebuild
// leaves the complete build whole and in use. Before, the manifest went first (the entry was "incomplete" for the
// whole build) and other architectures removed build/ (an hour of compile, for a typo).
TEST(NcclBuildRun, ACompleteBuildIsNeverRemovedBeforeItsReplacementIsComplete) {
  testing::FakeShare share;
  TempDir cache("coldstart-cache-");
  BuildPlan p = fake_plan(share, cache.path());
  const std::string series = series_hash(share.share(), p.port);
  FakeEnv env{{"FAKE_LIB", COLDSTART_FAKE_PATCHED_NCCL}, {"FAKE_SERIES", series}};
  Said first;
  ASSERT_EQ(run_build(p, first.fn()), 0) << first.text();
  const std::string library = read_file(p.library);
  auto whole = [&](const std::vector<std::string>& arch) {
    auto e = find_complete(cache.path(), "2.30.7+peer-regions");
    return e && e->manifest->arch == arch && e->manifest->library == p.library && read_file(p.library) == library;
  };
  ASSERT_TRUE(whole({"90"}));
  BuildPlan other = fake_plan(share, cache.path(), "90,100");
  {
    FakeEnv refused{{"FAKE_EXIT", "2"}};
    Said said;
    std::string e = testing::input_error_of([&] { run_build(other, said.fn()); });
    EXPECT_NE(e.find("is not NCCL as released"), std::string::npos) << e;
    EXPECT_NE(e.find("the complete build in " + p.entry + "/build is untouched and still in use"), std::string::npos)
        << e;
    EXPECT_TRUE(whole({"90"}));
  }
  {
    FakeEnv failed{{"FAKE_EXIT", "1"}};
    Said said;
    std::string e = testing::runtime_error_of([&] { run_build(other, said.fn()); });
    EXPECT_NE(e.find("build_nccl.sh failed (exit 1: build_nccl: patched: make failed (status 2))"), std::string::npos)
        << e;
    EXPECT_NE(e.find("nothing in " + p.entry + "/next counts as built"), std::string::npos) << e;
    EXPECT_TRUE(whole({"90"}));
  }
  // Another series (build.json and the stamp say so): the complete build stays complete while the new one compiles
  Manifest m = *find_complete(cache.path(), "")->manifest;
  m.series = "0123456789abcdef";
  write_file_atomic(p.entry + "/" + kManifestFile, manifest_json(m));
  write_file_atomic(p.entry + "/build/" + kBuiltForFile, built_for(m.arch, m.series) + "\n");
  ASSERT_TRUE(whole({"90"}));
  {
    FakeEnv slow{{"FAKE_SLEEP", "0.3"}, {"FAKE_RUNS", cache.path() + "/runs"}};
    std::atomic<bool> done = false;
    int rc = -1;
    Said said;
    std::thread build([&] {
      rc = run_build(p, said.fn());
      done = true;
    });
    int looked = 0, whole_while_compiling = 0;
    while (!done) {
      std::string runs;
      try {
        runs = read_file(cache.path() + "/runs");
      } catch (const std::exception&) {
      }
      if (!runs.empty() && runs.find("end") == std::string::npos) {  // the stand-in is compiling
        ++looked;
        whole_while_compiling += whole({"90"}) && find_complete(cache.path(), "")->manifest->series == m.series;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    build.join();
    ASSERT_EQ(rc, 0) << said.text();
    EXPECT_GT(looked, 10);
    EXPECT_EQ(whole_while_compiling, looked);
    EXPECT_NE(said.text().find("building beside the complete build (for 90, series 0123456789abcdef)"),
              std::string::npos)
        << said.text();
  }
  auto e = find_complete(cache.path(), "");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->manifest->series, series);
  EXPECT_EQ(e->manifest->library, p.library);
  EXPECT_FALSE(fs::exists(p.entry + "/next"));
  EXPECT_FALSE(fs::exists(p.entry + "/arch.next"));
}

// A switch interrupted after the new build moved in and before its manifest: the entry reads as incomplete (never
// as the old build), and the next run finishes it without compiling
TEST(NcclBuildRun, AnInterruptedSwitchIsFinishedWithoutBuildingAgain) {
  testing::FakeShare share;
  TempDir cache("coldstart-cache-");
  BuildPlan p = fake_plan(share, cache.path());
  const std::string series = series_hash(share.share(), p.port);
  FakeEnv env{{"FAKE_LIB", COLDSTART_FAKE_PATCHED_NCCL}, {"FAKE_SERIES", series}};
  Said first;
  ASSERT_EQ(run_build(p, first.fn()), 0) << first.text();
  Manifest m = *find_complete(cache.path(), "")->manifest;
  m.arch = {"80"};  // the old build.json, of the build switched out
  write_file_atomic(p.entry + "/" + kManifestFile, manifest_json(m));
  auto entries = list_entries(cache.path());
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_FALSE(entries[0].complete);
  EXPECT_NE(entries[0].state.find("a switch to a new build was interrupted"), std::string::npos) << entries[0].state;
  FakeEnv runs{{"FAKE_RUNS", cache.path() + "/runs"}};
  Said said;
  ASSERT_EQ(run_build(p, said.fn()), 0) << said.text();
  EXPECT_NE(said.text().find("finishing the switch"), std::string::npos) << said.text();
  EXPECT_FALSE(fs::exists(cache.path() + "/runs"));  // nothing compiled
  EXPECT_EQ(find_complete(cache.path(), "")->manifest->arch, std::vector<std::string>{"90"});
}

// The entry folder is the cache's own: a link planted in its place is refused, nothing written through it
TEST(NcclBuildRun, AnEntryThatIsALinkIsRefused) {
  testing::FakeShare share;
  TempDir cache("coldstart-cache-");
  TempDir elsewhere("coldstart-elsewhere-");
  BuildPlan p = fake_plan(share, cache.path());
  fs::create_symlink(elsewhere.path(), p.entry);
  FakeEnv env{{"FAKE_LIB", COLDSTART_FAKE_PATCHED_NCCL}};
  Said said;
  std::string e = testing::input_error_of([&] { run_build(p, said.fn()); });
  EXPECT_EQ(e, p.entry + " is a symbolic link, which nccl build never follows: remove it and run again");
  EXPECT_TRUE(fs::is_empty(elsewhere.path()));
  // Nor a build folder planted as a link in a real entry
  fs::remove(p.entry);
  fs::create_directories(p.entry);
  fs::create_symlink(elsewhere.path(), p.entry + "/build");
  e = testing::input_error_of([&] { run_build(p, said.fn()); });
  EXPECT_EQ(e, p.entry + "/build is a symbolic link, which nccl build never follows: remove it and run again");
  EXPECT_TRUE(fs::is_empty(elsewhere.path()));
}

TEST(NcclBuildRun, ADryRunChecksTheSourceInAScratchFolderAndBuildsNothing) {
  TempDir cache("coldstart-cache-");
  BuildRequest req;
  req.version = "2.30.7";
  req.arch = "90";
  req.cache_dir = cache.path();
  req.dry_run = true;
  // The real build_nccl.sh and series (the checkout's): a missing source and a folder that is no NCCL, its lines
  const Share checkout{COLDSTART_SOURCE_DIR, "the source checkout"};
  req.src = cache.path() + "/missing.tar.gz";
  Said said;
  std::string e = testing::input_error_of([&] { run_build(plan_build(req, checkout, node({})), said.fn()); });
  EXPECT_EQ(e, "nccl build: --src " + req.src + " does not exist");
  req.src = cache.path() + "/not-nccl";
  fs::create_directories(req.src);
  e = testing::input_error_of([&] { run_build(plan_build(req, checkout, node({})), said.fn()); });
  EXPECT_EQ(e, "nccl build: " + req.src + " has no makefiles/version.mk: not an NCCL source tree");
  // Nothing left in the cache: no entry, no scratch folder
  std::vector<std::string> left;
  for (const auto& d : fs::directory_iterator(cache.path())) left.push_back(d.path().filename().string());
  EXPECT_EQ(left, std::vector<std::string>{"not-nccl"});
  // Without --src: the download is named, nothing fetched
  req.src.clear();
  Said plan;
  EXPECT_EQ(run_build(plan_build(req, checkout, node({})), plan.fn()), 0);
  EXPECT_NE(plan.text().find("dry run: would download https://github.com/NVIDIA/nccl/archive/refs/tags/v2.30.7-1"),
            std::string::npos)
      << plan.text();
  EXPECT_FALSE(fs::exists(cache.path() + "/2.30.7+peer-regions"));
  // A cache that cannot be written
  req.cache_dir = cache.path() + "/not-nccl/../missing.tar.gz/x";
  write_file_atomic(cache.path() + "/missing.tar.gz", "");
  e = testing::input_error_of([&] { run_build(plan_build(req, checkout, node({})), plan.fn()); });
  EXPECT_NE(e.find("cannot be made"), std::string::npos) << e;
}

}  // namespace coldstart::ncclbuild
