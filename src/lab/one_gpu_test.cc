// Which NCCL bench's 2 ranks on one GPU run: --nccl-lib as given, the NCCL at hand when it is 2.30+, else the newest
// complete build of 2.30+ in `coldstart nccl build`'s cache (never an incomplete one), else a one-line refusal naming
// the command; against the fake NCCLs (tests/fake_nccl/) and a cache of the test's.
#include "lab/one_gpu.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "ncclbuild/fake_share_test.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/strings.h"

namespace coldstart::lab {
namespace {
// For the one-GPU tests: a cache of `coldstart nccl build` that bench finds by itself ($XDG_CACHE_HOME) and the NCCL
// at hand ($COLDSTART_NCCL_LIB), both set for the test's life and put back after. The fake NCCLs (tests/fake_nccl/)
// say the version $FAKE_NCCL_VERSION says: `version` here, NCCL's code (22809: 2.28.9).
class OneGpuBuildCache {
 public:
  OneGpuBuildCache(const std::string& nccl_at_hand, const std::string& version)
      : saved_{saved("XDG_CACHE_HOME"), saved("COLDSTART_NCCL_LIB"), saved("FAKE_NCCL_VERSION")} {
    ::setenv("XDG_CACHE_HOME", home_.path().c_str(), 1);
    ::setenv("COLDSTART_NCCL_LIB", nccl_at_hand.c_str(), 1);
    ::setenv("FAKE_NCCL_VERSION", version.c_str(), 1);
  }
  ~OneGpuBuildCache() {
    put_back("XDG_CACHE_HOME", saved_[0]);
    put_back("COLDSTART_NCCL_LIB", saved_[1]);
    put_back("FAKE_NCCL_VERSION", saved_[2]);
  }
  OneGpuBuildCache(const OneGpuBuildCache&) = delete;
  OneGpuBuildCache& operator=(const OneGpuBuildCache&) = delete;
  std::string dir() const { return home_.path() + "/coldstart/nccl"; }
  // A complete build of `version` whose library loads (a copy of the fake patched NCCL).
  ncclbuild::Manifest put(const std::string& version) const {
    return ncclbuild::testing::put_cache_entry(dir(), version, "2026-12-03T18:00:00Z", COLDSTART_FAKE_PATCHED_NCCL);
  }

 private:
  static std::optional<std::string> saved(const char* name) {
    const char* v = std::getenv(name);
    return v ? std::optional<std::string>(v) : std::nullopt;
  }
  static void put_back(const char* name, const std::optional<std::string>& v) {
    if (v)
      ::setenv(name, v->c_str(), 1);
    else
      ::unsetenv(name);
  }
  std::optional<std::string> saved_[3];
  TempDir home_{"coldstart-one-gpu-"};
};
}  // namespace

// One GPU is a node too: a one-rank job connects nothing, so a dry run plans 2 ranks on the GPU and says why.
// A dry run of coldstart's worker loads no library, so it cannot know that the NCCL at hand is older: it takes no
// build of the cache.
TEST(OneGpu, ADryRunPlansTwoRanksAndSaysWhy) {
  OneGpuBuildCache cache(COLDSTART_FAKE_UNPATCHED_NCCL, "22809");
  cache.put("2.30.7");
  BenchSpec spec;
  spec.dry_run = true;
  spec.devices = {"0"};
  std::string line = two_ranks_on_one_gpu(spec);
  EXPECT_EQ(spec.ranks_per_gpu, 2);
  EXPECT_EQ(spec.nranks(), 2);
  EXPECT_TRUE(spec.nccl_libs.empty());
  EXPECT_NE(line.find("a one-rank job has no peers"), std::string::npos) << line;
  EXPECT_NE(line.find("--ranks-per-gpu 1"), std::string::npos) << line;
}

// Where the ranks would run an NCCL before 2.30 (one rank a GPU), bench refuses in one line naming what gets one.
TEST(OneGpu, AnNcclBefore230IsRefusedNamingTheBuildCommand) {
  const std::string toolkit_nccl = "/usr/local/cuda/lib64/libnccl.so.2";  // 2.28.9 on this kind of machine
  if (!std::filesystem::exists(toolkit_nccl)) GTEST_SKIP() << "no CUDA toolkit NCCL at " << toolkit_nccl;
  BenchSpec spec;
  spec.devices = {"0"};
  spec.nccl_libs = {toolkit_nccl};
  try {
    two_ranks_on_one_gpu(spec);
    FAIL() << "an NCCL before 2.30 was accepted for 2 ranks on one GPU";
  } catch (const InputError& e) {
    std::string line = e.what();
    EXPECT_NE(line.find("runs one rank a GPU"), std::string::npos) << line;
    EXPECT_NE(line.find("coldstart nccl build"), std::string::npos) << line;
    EXPECT_NE(line.find("--ranks-per-gpu 1"), std::string::npos) << line;
    EXPECT_EQ(line.find('\n'), std::string::npos) << line;
  }
  EXPECT_EQ(spec.ranks_per_gpu, 1);
}

// The torch probe without --nccl-lib runs PyTorch's own NCCL (2.28 in PyTorch 2.11): refused the same way.
// Where the cache has no build to take instead.
TEST(OneGpu, TheTorchProbeWithoutALibraryIsRefusedNamingTheBuildCommand) {
  OneGpuBuildCache cache(COLDSTART_FAKE_UNPATCHED_NCCL, "22809");
  BenchSpec spec;
  spec.devices = {"0"};
  spec.worker = Worker::torch;
  try {
    two_ranks_on_one_gpu(spec);
    FAIL() << "the torch probe was planned with 2 ranks on PyTorch's own NCCL";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("PyTorch's own NCCL"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("coldstart nccl build"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(spec.nccl_libs.empty());
  EXPECT_EQ(spec.ranks_per_gpu, 1);
}

// Without --nccl-lib, where the NCCL at hand runs one rank a GPU, the ranks run the newest complete build of 2.30+ in
// `coldstart nccl build`'s cache, by its name (what --nccl-lib takes), and the line says which, where, and what it is.
TEST(OneGpu, AnOldNcclAtHandRunsTheNewestBuildOfTheCache) {
  OneGpuBuildCache cache(COLDSTART_FAKE_UNPATCHED_NCCL, "22809");
  ncclbuild::testing::put_cache_entry(cache.dir(), "2.28.9", "2026-12-03T19:00:00Z", COLDSTART_FAKE_PATCHED_NCCL);
  const ncclbuild::Manifest m = cache.put("2.30.7");
  BenchSpec spec;
  spec.devices = {"0"};
  std::string line = two_ranks_on_one_gpu(spec);
  ASSERT_EQ(spec.nccl_libs, std::vector<std::string>{"2.30.7+peer-regions"}) << line;
  EXPECT_EQ(ncclbuild::library_for(spec.nccl_libs[0]), m.library);  // what prepare() then loads
  EXPECT_EQ(spec.ranks_per_gpu, 2);
  EXPECT_NE(line.find("a one-rank job has no peers"), std::string::npos) << line;
  EXPECT_NE(line.find(std::string(COLDSTART_FAKE_UNPATCHED_NCCL) + " is NCCL 2.28.9, which runs one rank a GPU"),
            std::string::npos)
      << line;
  EXPECT_NE(line.find("`coldstart nccl build`'s 2.30.7+peer-regions (" + m.library + ")"), std::string::npos) << line;
  EXPECT_NE(line.find("coldstart's patched NCCL 2.30.7 (peer-regions, fd-reserve)"), std::string::npos) << line;
  EXPECT_NE(line.find("the first collective shows the patched cold start"), std::string::npos) << line;
  EXPECT_NE(line.find("--env NCCL_P2P_PEER_REGION=,0 times the stock connect path"), std::string::npos) << line;
  EXPECT_EQ(line.find('\n'), std::string::npos) << line;
}

// A build without its manifest (building, failed, interrupted) is never taken, however new, nor a complete one before
// 2.30: the refusal stays, naming the command that makes one.
TEST(OneGpu, AnIncompleteOrOldBuildIsNeverTaken) {
  OneGpuBuildCache cache(COLDSTART_FAKE_UNPATCHED_NCCL, "22809");
  cache.put("2.28.9");
  const std::string half = cache.dir() + "/2.31.0+peer-regions/build/patched/lib";
  std::filesystem::create_directories(half);
  std::filesystem::copy_file(COLDSTART_FAKE_PATCHED_NCCL, half + "/libnccl.so.2");
  BenchSpec spec;
  spec.devices = {"0"};
  try {
    std::string line = two_ranks_on_one_gpu(spec);
    FAIL() << "planned with " << join(spec.nccl_libs, ",") << ": " << line;
  } catch (const InputError& e) {
    std::string line = e.what();
    EXPECT_NE(line.find(std::string(COLDSTART_FAKE_UNPATCHED_NCCL) + " is NCCL 2.28.9, which runs one rank a GPU"),
              std::string::npos)
        << line;
    EXPECT_NE(line.find("`coldstart nccl build` makes one"), std::string::npos) << line;
    EXPECT_EQ(line.find('\n'), std::string::npos) << line;
  }
  EXPECT_TRUE(spec.nccl_libs.empty());
  EXPECT_EQ(spec.ranks_per_gpu, 1);
}

// A complete build whose library does not load (damaged after it was built) is named as the cache's, with the command
// that makes it again: bench took it by itself, so no --nccl-lib is blamed.
TEST(OneGpu, ABuildOfTheCacheThatDoesNotLoadIsNamedNotBlamedOnNcclLib) {
  OneGpuBuildCache cache(COLDSTART_FAKE_UNPATCHED_NCCL, "22809");
  const ncclbuild::Manifest m =
      ncclbuild::testing::put_cache_entry(cache.dir(), "2.30.7", "2026-12-03T18:00:00Z");  // 1000 bytes, no ELF
  BenchSpec spec;
  spec.devices = {"0"};
  try {
    std::string line = two_ranks_on_one_gpu(spec);
    FAIL() << "planned with " << join(spec.nccl_libs, ",") << ": " << line;
  } catch (const InputError& e) {
    std::string line = e.what();
    EXPECT_EQ(line.find("--nccl-lib " + m.library), std::string::npos) << line;
    EXPECT_NE(line.find("the build bench takes then, 2.30.7+peer-regions of `coldstart nccl list` (" + m.library +
                        "), does not load: not a shared library"),
              std::string::npos)
        << line;
    EXPECT_NE(line.find("`coldstart nccl build --version 2.30.7`, or give --nccl-lib"), std::string::npos) << line;
  }
}

// The torch probe's NCCL is PyTorch's own (before 2.30) without --nccl-lib: it takes the cache's build, in a dry run
// too (by name: nothing is loaded to know it).
TEST(OneGpu, TheTorchProbeRunsTheBuildOfTheCache) {
  OneGpuBuildCache cache(COLDSTART_FAKE_UNPATCHED_NCCL, "22809");
  const ncclbuild::Manifest m = cache.put("2.30.7");
  for (bool dry_run : {false, true}) {
    BenchSpec spec;
    spec.devices = {"0"};
    spec.worker = Worker::torch;
    spec.dry_run = dry_run;
    std::string line = two_ranks_on_one_gpu(spec);
    EXPECT_EQ(spec.nccl_libs, std::vector<std::string>{"2.30.7+peer-regions"}) << dry_run << ": " << line;
    EXPECT_EQ(spec.ranks_per_gpu, 2);
    EXPECT_NE(line.find("PyTorch's own NCCL (before 2.30) runs one rank a GPU, so they run `coldstart nccl build`'s "
                        "2.30.7+peer-regions (" +
                        m.library + ")"),
              std::string::npos)
        << line;
  }
}

// A library given with --nccl-lib is the one the ranks run: never replaced by the cache's build, too old or not.
TEST(OneGpu, AGivenLibraryIsNeverReplaced) {
  OneGpuBuildCache cache(COLDSTART_FAKE_PATCHED_NCCL, "22809");
  cache.put("2.30.7");
  for (Worker worker : {Worker::nccl, Worker::torch}) {
    ::setenv("FAKE_NCCL_VERSION", "22809", 1);
    BenchSpec spec;
    spec.devices = {"0"};
    spec.worker = worker;
    spec.nccl_libs = {COLDSTART_FAKE_UNPATCHED_NCCL};
    std::string e = ncclbuild::testing::input_error_of([&] { two_ranks_on_one_gpu(spec); });
    EXPECT_NE(e.find(std::string(COLDSTART_FAKE_UNPATCHED_NCCL) + " is NCCL 2.28.9, which runs one rank a GPU"),
              std::string::npos)
        << e;
    EXPECT_EQ(spec.nccl_libs, std::vector<std::string>{COLDSTART_FAKE_UNPATCHED_NCCL});
    EXPECT_EQ(spec.ranks_per_gpu, 1);

    ::setenv("FAKE_NCCL_VERSION", "23007", 1);
    std::string line = two_ranks_on_one_gpu(spec);
    EXPECT_EQ(spec.nccl_libs, std::vector<std::string>{COLDSTART_FAKE_UNPATCHED_NCCL});
    EXPECT_EQ(spec.ranks_per_gpu, 2);
    EXPECT_EQ(line.find("coldstart nccl build"), std::string::npos) << line;
  }
  // The NCCL at hand is 2.30: it runs the 2 ranks, and the cache's build is not taken.
  BenchSpec spec;
  spec.devices = {"0"};
  std::string line = two_ranks_on_one_gpu(spec);
  EXPECT_TRUE(spec.nccl_libs.empty()) << line;
  EXPECT_EQ(spec.ranks_per_gpu, 2);
}

}  // namespace coldstart::lab
