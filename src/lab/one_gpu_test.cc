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
  // A complete build of `version` whose library loads (a copy of the fake patched NCCL, or unpatched for a stock one).
  ncclbuild::Manifest put(const std::string& version, ncclbuild::Which which = ncclbuild::Which::patched) const {
    return ncclbuild::testing::put_cache_entry(
        dir(), version, "2026-12-03T18:00:00Z",
        which == ncclbuild::Which::stock ? COLDSTART_FAKE_UNPATCHED_NCCL : COLDSTART_FAKE_PATCHED_NCCL, which);
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
// Without the cache's builds, a dry run of coldstart's worker loads no library: it plans the NCCL at hand, unchecked.
TEST(OneGpu, ADryRunPlansTwoRanksAndSaysWhy) {
  OneGpuBuildCache cache(COLDSTART_FAKE_UNPATCHED_NCCL, "22809");
  BenchSpec spec;
  spec.dry_run = true;
  spec.devices = {"0"};
  std::string line = two_ranks_on_one_gpu(spec).said;
  EXPECT_EQ(spec.ranks_per_gpu, 2);
  EXPECT_EQ(spec.nranks(), 2);
  EXPECT_TRUE(spec.nccl_libs.empty());
  EXPECT_NE(line.find("a one-rank job has no peers"), std::string::npos) << line;
  EXPECT_NE(line.find("--ranks-per-gpu 1"), std::string::npos) << line;
}

// bench with no flags on one GPU, both builds of a release in the cache: the stock and the patched library, each with
// cuMem on and off (the default axis), under one launch model (on one GPU every model gives the ranks the same view);
// nothing to add, so no second line. A dry run takes them by name, as the run does.
TEST(OneGpu, BothBuildsOfTheCacheAreComparedEachWithCumemOnAndOff) {
  OneGpuBuildCache cache(COLDSTART_FAKE_UNPATCHED_NCCL, "23007");
  const ncclbuild::Manifest patched = cache.put("2.30.7");
  const ncclbuild::Manifest stock = cache.put("2.30.7", ncclbuild::Which::stock);
  for (bool dry_run : {true, false}) {
    BenchSpec spec;
    spec.dry_run = dry_run;
    spec.devices = {"0"};
    OneGpuPlan plan = two_ranks_on_one_gpu(spec, false);
    EXPECT_EQ(spec.nccl_libs, (std::vector<std::string>{"2.30.7+stock", "2.30.7+peer-regions"})) << plan.said;
    EXPECT_EQ(spec.modes, std::vector<Mode>{Mode::isolated});
    EXPECT_EQ(spec.ranks_per_gpu, 2);
    EXPECT_EQ(plan.hint, "");
    EXPECT_NE(plan.said.find("one launch model, isolated: on one GPU every model gives each rank the same view"),
              std::string::npos)
        << plan.said;
    EXPECT_NE(plan.said.find("They run `coldstart nccl build`'s 2.30.7+stock (" + stock.library +
                             "), NCCL's own 2.30.7, and 2.30.7+peer-regions (" + patched.library +
                             "), coldstart's patched NCCL 2.30.7 (peer-regions, fd-reserve), each with cuMem on and "
                             "off: the first is the cold start a job gets from NCCL, the second what the patch leaves"),
              std::string::npos)
        << plan.said;
    EXPECT_EQ(plan.said.find('\n'), std::string::npos) << plan.said;
  }
  // --modes given: kept; --env given: no cuMem axis to promise
  BenchSpec spec;
  spec.dry_run = true;
  spec.devices = {"0"};
  spec.env = {{"NCCL_ALGO", {"Ring"}}};
  OneGpuPlan plan = two_ranks_on_one_gpu(spec, true);
  EXPECT_EQ(spec.modes.size(), 3u);
  EXPECT_EQ(plan.said.find("cuMem on and off"), std::string::npos) << plan.said;
}

// One build of the release in the cache: it runs, and a second line names the command that adds the other, from the
// same source, after which bench runs both.
TEST(OneGpu, OneBuildOfTheCacheRunsAndTheCommandThatAddsTheOtherIsNamed) {
  OneGpuBuildCache cache(COLDSTART_FAKE_UNPATCHED_NCCL, "23007");
  cache.put("2.30.7");
  BenchSpec spec;
  spec.dry_run = true;
  spec.devices = {"0"};
  OneGpuPlan plan = two_ranks_on_one_gpu(spec, false);
  EXPECT_EQ(spec.nccl_libs, std::vector<std::string>{"2.30.7+peer-regions"});
  EXPECT_EQ(plan.hint,
            "NCCL's own 2.30.7 is not in the cache to compare with: `coldstart nccl build --version 2.30.7 --which "
            "stock --src /src/nccl.tar.gz` adds it, and bench then runs both");
  OneGpuBuildCache stock_only(COLDSTART_FAKE_UNPATCHED_NCCL, "23007");
  stock_only.put("2.30.7", ncclbuild::Which::stock);
  BenchSpec s2;
  s2.dry_run = true;
  s2.devices = {"0"};
  plan = two_ranks_on_one_gpu(s2, false);
  EXPECT_EQ(s2.nccl_libs, std::vector<std::string>{"2.30.7+stock"});
  EXPECT_EQ(plan.hint,
            "coldstart's patched NCCL 2.30.7 is not in the cache to compare with: `coldstart nccl build --version "
            "2.30.7 --src /src/nccl.tar.gz` adds it, and bench then runs both");
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

// --nodes 2 puts each of the 2 ranks on a node of its own, where an NCCL before 2.30 runs them (one rank a GPU of a
// node); a list with one node among its counts still has both on one GPU of one node, and is refused.
TEST(OneGpu, AnNcclBefore230RunsWhereEachRankIsOnANodeOfItsOwn) {
  OneGpuBuildCache cache(COLDSTART_FAKE_UNPATCHED_NCCL, "22809");
  BenchSpec spec;
  spec.devices = {"0"};
  spec.nccl_libs = {COLDSTART_FAKE_UNPATCHED_NCCL};
  spec.nodes = {1, 2};
  EXPECT_THROW(two_ranks_on_one_gpu(spec), InputError);
  EXPECT_EQ(spec.ranks_per_gpu, 1);
  spec.nodes = {2};
  const std::string line = two_ranks_on_one_gpu(spec).said;
  EXPECT_EQ(spec.ranks_per_gpu, 2);
  EXPECT_NE(line.find("each on a node of its own (--nodes), which any NCCL runs"), std::string::npos) << line;
  BenchSpec at_hand;  // the NCCL at hand (2.28.9 here), without --nccl-lib or a cache's build
  at_hand.devices = {"0"};
  EXPECT_THROW(two_ranks_on_one_gpu(at_hand), InputError);
  at_hand.nodes = {2};
  two_ranks_on_one_gpu(at_hand);
  EXPECT_EQ(at_hand.ranks_per_gpu, 2);
}

// Without --nccl-lib the ranks run the newest release of 2.30+ that `coldstart nccl build`'s cache holds, by its
// name (what --nccl-lib takes), before the NCCL at hand (never loaded then), and the line says which, where, and what.
TEST(OneGpu, TheNewestBuildOfTheCacheRunsBeforeTheNcclAtHand) {
  OneGpuBuildCache cache(COLDSTART_FAKE_UNPATCHED_NCCL, "22809");
  ncclbuild::testing::put_cache_entry(cache.dir(), "2.28.9", "2026-12-03T19:00:00Z", COLDSTART_FAKE_PATCHED_NCCL);
  const ncclbuild::Manifest m = cache.put("2.30.7");
  BenchSpec spec;
  spec.devices = {"0"};
  std::string line = two_ranks_on_one_gpu(spec).said;
  ASSERT_EQ(spec.nccl_libs, std::vector<std::string>{"2.30.7+peer-regions"}) << line;
  EXPECT_EQ(ncclbuild::library_for(spec.nccl_libs[0]), m.library);  // what prepare() then loads
  EXPECT_EQ(spec.ranks_per_gpu, 2);
  EXPECT_NE(line.find("a one-rank job has no peers"), std::string::npos) << line;
  EXPECT_NE(line.find("`coldstart nccl build`'s 2.30.7+peer-regions (" + m.library + ")"), std::string::npos) << line;
  EXPECT_NE(line.find("coldstart's patched NCCL 2.30.7 (peer-regions, fd-reserve)"), std::string::npos) << line;
  EXPECT_NE(line.find("the first collective shows the patched cold start"), std::string::npos) << line;
  EXPECT_EQ(line.find('\n'), std::string::npos) << line;
  // The NCCL at hand is 2.30 too: the cache's build still runs (the node's user built it to compare)
  ::setenv("FAKE_NCCL_VERSION", "23007", 1);
  BenchSpec again;
  again.devices = {"0"};
  two_ranks_on_one_gpu(again);
  EXPECT_EQ(again.nccl_libs, std::vector<std::string>{"2.30.7+peer-regions"});
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
    std::string line = two_ranks_on_one_gpu(spec).said;
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
    std::string line = two_ranks_on_one_gpu(spec).said;
    FAIL() << "planned with " << join(spec.nccl_libs, ",") << ": " << line;
  } catch (const InputError& e) {
    std::string line = e.what();
    EXPECT_EQ(line.find("--nccl-lib " + m.library), std::string::npos) << line;
    EXPECT_NE(line.find("the build bench takes, 2.30.7+peer-regions of `coldstart nccl list` (" + m.library +
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
    std::string line = two_ranks_on_one_gpu(spec).said;
    EXPECT_EQ(spec.nccl_libs, std::vector<std::string>{"2.30.7+peer-regions"}) << dry_run << ": " << line;
    EXPECT_EQ(spec.ranks_per_gpu, 2);
    EXPECT_NE(line.find("They run `coldstart nccl build`'s 2.30.7+peer-regions (" + m.library + ")"), std::string::npos)
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
    std::string line = two_ranks_on_one_gpu(spec).said;
    EXPECT_EQ(spec.nccl_libs, std::vector<std::string>{COLDSTART_FAKE_UNPATCHED_NCCL});
    EXPECT_EQ(spec.ranks_per_gpu, 2);
    EXPECT_EQ(line.find("coldstart nccl build"), std::string::npos) << line;
  }
}

// With nothing in the cache, the NCCL at hand runs the 2 ranks where it is 2.30 or newer.
TEST(OneGpu, WithoutBuildsTheNcclAtHandRunsWhenItIs230) {
  OneGpuBuildCache cache(COLDSTART_FAKE_PATCHED_NCCL, "23007");
  BenchSpec spec;
  spec.devices = {"0"};
  OneGpuPlan plan = two_ranks_on_one_gpu(spec);
  EXPECT_TRUE(spec.nccl_libs.empty()) << plan.said;
  EXPECT_EQ(spec.ranks_per_gpu, 2);
  EXPECT_EQ(plan.hint, "");
}

}  // namespace coldstart::lab
