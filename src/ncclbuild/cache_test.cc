// The cache of builds: what counts as built (a manifest that reads, naming its folder, its library there), what
// bench's --nccl-lib makes of a name, a cache that cannot be written, the lock two builds take turns on, and the lines
// that say how to load a build.
#include "ncclbuild/cache.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <thread>

#include "ncclbuild/fake_share_test.h"
#include "util/error.h"
#include "util/fs.h"

namespace coldstart::ncclbuild {
namespace {
namespace fs = std::filesystem;
using testing::put_cache_entry;
}  // namespace

TEST(NcclCache, TheDefaultFollowsXdgCacheHomeThenHome) {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  const std::string saved_xdg = xdg ? xdg : "";
  ::setenv("XDG_CACHE_HOME", "/xdg/cache", 1);
  EXPECT_EQ(default_cache_dir(), "/xdg/cache/coldstart/nccl");
  ::setenv("XDG_CACHE_HOME", "relative/cache", 1);  // XDG: a relative path is ignored
  ::setenv("HOME", std::getenv("HOME") ? std::getenv("HOME") : "/root", 1);
  EXPECT_EQ(default_cache_dir(), std::string(std::getenv("HOME")) + "/.cache/coldstart/nccl");
  if (xdg)
    ::setenv("XDG_CACHE_HOME", saved_xdg.c_str(), 1);
  else
    ::unsetenv("XDG_CACHE_HOME");
  EXPECT_EQ(entry_name("2.30.7"), "2.30.7+peer-regions");
}

TEST(NcclCache, AManifestReadsBackAndAnythingElseIsRefusedByName) {
  TempDir cache("coldstart-cache-");
  Manifest m = put_cache_entry(cache.path(), "2.30.7", "2026-12-03T18:00:00Z");
  Manifest back = parse_manifest(read_file(cache.path() + "/2.30.7+peer-regions/build.json"), "build.json");
  EXPECT_EQ(back.name, m.name);
  EXPECT_EQ(back.arch, m.arch);
  EXPECT_EQ(back.patches, m.patches);
  EXPECT_EQ(back.library, m.library);
  EXPECT_NE(testing::input_error_of([] { parse_manifest("{}", "x/build.json"); }).find("x/build.json: not a manifest"),
            std::string::npos);
  EXPECT_NE(testing::input_error_of([] { parse_manifest("not json", "y"); }), "");
  EXPECT_NE(testing::input_error_of([] {
              parse_manifest(R"({"schema": "coldstart.nccl-build/1", "name": "a", "version": 3})", "z");
            }).find("'version'"),
            std::string::npos);
}

TEST(NcclCache, OnlyAnEntryWithItsManifestAndItsLibraryIsComplete) {
  TempDir cache("coldstart-cache-");
  put_cache_entry(cache.path(), "2.30.7", "2026-12-03T18:00:00Z");
  put_cache_entry(cache.path(), "2.28.9", "2026-12-03T19:00:00Z");
  // A build that never finished: its folder without a manifest
  fs::create_directories(cache.path() + "/2.31.0+peer-regions/build/patched/lib");
  write_file_atomic(cache.path() + "/2.31.0+peer-regions/build/patched/lib/libnccl.so.2", "half");
  // A manifest whose library went away, and one that does not parse
  Manifest gone = put_cache_entry(cache.path(), "2.27.3", "2026-12-03T20:00:00Z");
  fs::remove(gone.library);
  fs::create_directories(cache.path() + "/2.26.2+peer-regions");
  write_file_atomic(cache.path() + "/2.26.2+peer-regions/build.json", "{");
  fs::create_directories(cache.path() + "/.dry-run-abc");  // a dry run's scratch folder is no entry

  auto entries = list_entries(cache.path());
  ASSERT_EQ(entries.size(), 5u);
  std::map<std::string, Entry> by;
  for (auto& e : entries) by[e.name] = e;
  EXPECT_TRUE(by["2.30.7+peer-regions"].complete);
  EXPECT_TRUE(by["2.28.9+peer-regions"].complete);
  EXPECT_GE(by["2.30.7+peer-regions"].size_bytes, 1000u);
  EXPECT_FALSE(by["2.31.0+peer-regions"].complete);
  EXPECT_NE(by["2.31.0+peer-regions"].state.find("no build.json"), std::string::npos);
  EXPECT_FALSE(by["2.27.3+peer-regions"].complete);
  EXPECT_NE(by["2.27.3+peer-regions"].state.find("is gone"), std::string::npos);
  EXPECT_FALSE(by["2.26.2+peer-regions"].complete);
  EXPECT_NE(by["2.26.2+peer-regions"].state.find("not a manifest"), std::string::npos);

  // The newest complete one, and an incomplete one is never found
  EXPECT_EQ(find_complete(cache.path(), "")->name, "2.28.9+peer-regions");
  EXPECT_EQ(find_complete(cache.path(), "2.30.7+peer-regions")->name, "2.30.7+peer-regions");
  EXPECT_FALSE(find_complete(cache.path(), "2.31.0+peer-regions"));
  EXPECT_FALSE(find_complete(cache.path() + "/none", ""));
}

// What bench's one GPU runs 2 ranks with: the newest release (by its number, not its name's letters) among complete
// entries at or above the version asked; an incomplete entry never, however new.
TEST(NcclCache, TheNewestCompleteReleaseFromAVersion) {
  TempDir cache("coldstart-cache-");
  put_cache_entry(cache.path(), "2.28.9", "2026-12-03T21:00:00Z");
  put_cache_entry(cache.path(), "2.30.7", "2026-12-03T20:00:00Z");
  put_cache_entry(cache.path(), "2.30.10", "2026-12-03T18:00:00Z");
  fs::create_directories(cache.path() + "/2.31.0+peer-regions/build/patched/lib");
  EXPECT_EQ(newest_complete_from(cache.path(), 23000)->name, "2.30.10+peer-regions");
  EXPECT_EQ(newest_complete_from(cache.path(), 22800)->name, "2.30.10+peer-regions");
  EXPECT_FALSE(newest_complete_from(cache.path(), 23011));
  EXPECT_FALSE(newest_complete_from(cache.path() + "/none", 23000));
  fs::remove_all(cache.path() + "/2.30.10+peer-regions");
  EXPECT_EQ(newest_complete_from(cache.path(), 23000)->name, "2.30.7+peer-regions");
  EXPECT_EQ(version_code("2.30.7"), 23007);
  EXPECT_EQ(version_code("2.30.10"), 23010);
  EXPECT_EQ(version_code("2.30"), 0);
  EXPECT_EQ(version_code("2.30.7+peer-regions"), 0);
  EXPECT_EQ(version_code("2.100.1"), 0);  // no two digits for the minor
}

TEST(NcclCache, BenchNamesABuildAndKeepsPathsAsTheyAre) {
  TempDir cache("coldstart-cache-");
  Manifest m = put_cache_entry(cache.path(), "2.30.7", "2026-12-03T18:00:00Z");
  fs::create_directories(cache.path() + "/2.31.0+peer-regions");
  EXPECT_EQ(library_for("2.30.7+peer-regions", cache.path()), m.library);
  EXPECT_EQ(library_for("/opt/nccl/libnccl.so.2", cache.path()), "/opt/nccl/libnccl.so.2");
  EXPECT_EQ(library_for("libnccl.so.2", cache.path()), "libnccl.so.2");
  EXPECT_EQ(library_for("", cache.path()), "");
  std::string e = testing::input_error_of([&] { library_for("2.31.0+peer-regions", cache.path()); });
  EXPECT_NE(e.find("is not complete"), std::string::npos) << e;
  EXPECT_NE(e.find("coldstart nccl build --version 2.31.0"), std::string::npos) << e;
  e = testing::input_error_of([&] { library_for("2.29.1+peer-regions", cache.path()); });
  EXPECT_NE(e.find("no build of that name in " + cache.path()), std::string::npos) << e;
  EXPECT_NE(e.find("coldstart nccl list"), std::string::npos) << e;
  EXPECT_TRUE(looks_like_entry_name("2.30.7+peer-regions"));
  EXPECT_FALSE(looks_like_entry_name("2.30.7"));
  EXPECT_FALSE(looks_like_entry_name("./2.30.7+peer-regions"));
}

TEST(NcclCache, ACacheThatCannotBeWrittenIsRefusedInOneLine) {
  TempDir tmp("coldstart-cache-");
  write_file_atomic(tmp.path() + "/a-file", "x");
  std::string e = testing::input_error_of([&] { make_writable_dir(tmp.path() + "/a-file/cache", "--cache-dir"); });
  EXPECT_NE(e.find("--cache-dir " + tmp.path() + "/a-file/cache cannot be made"), std::string::npos) << e;
  EXPECT_NE(e.find("give a folder you can write"), std::string::npos) << e;
  // Even for root: /proc takes no folder
  e = testing::input_error_of([] { make_writable_dir("/proc/coldstart-cache", "--cache-dir"); });
  EXPECT_NE(e.find("cannot be made"), std::string::npos) << e;
  EXPECT_EQ(e.find('\n'), std::string::npos);
  make_writable_dir(tmp.path() + "/new/cache", "--cache-dir");
  EXPECT_TRUE(fs::is_directory(tmp.path() + "/new/cache"));
}

// A second holder waits, having been told who holds the lock; a process the first one started keeps it held.
TEST(NcclCache, TheLockMakesASecondBuildWaitAndSaysWhoHoldsIt) {
  TempDir entry("coldstart-entry-");
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  pid_t child = ::fork();
  if (child == 0) {
    ::close(ready[0]);
    EntryLock held(entry.path(), [](const std::string&) {});
    // The lock's descriptor is inherited: a grandchild (make) holds it after this process has gone.
    if (::fork() == 0) {
      ::usleep(600 * 1000);
      ::_exit(0);
    }
    ssize_t w = ::write(ready[1], "x", 1);
    (void)w;
    ::_exit(0);
  }
  ::close(ready[1]);
  char c;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  ::close(ready[0]);
  int status = 0;
  ::waitpid(child, &status, 0);
  std::string told;
  const auto t0 = std::chrono::steady_clock::now();
  {
    EntryLock mine(entry.path(), [&](const std::string& holder) { told = holder; });
  }
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_NE(told.find("pid " + std::to_string(child)), std::string::npos) << told;
  EXPECT_NE(told.find("gone; the processes its build started still hold the lock"), std::string::npos) << told;
  EXPECT_GT(waited, 0.2);
  // Free again: taken at once, nobody named
  told.clear();
  {
    EntryLock again(entry.path(), [&](const std::string& holder) { told = holder; });
  }
  EXPECT_EQ(told, "");
}

TEST(NcclCache, TheLoadingLinesQuoteAPathThatNeedsIt) {
  LoadLines plain = load_lines("/home/u/.cache/coldstart/nccl/2.30.7+peer-regions/build/patched/lib/libnccl.so.2");
  EXPECT_EQ(plain.torchrun,
            "LD_PRELOAD=/home/u/.cache/coldstart/nccl/2.30.7+peer-regions/build/patched/lib/libnccl.so.2 torchrun "
            "--nproc-per-node N train.py");
  EXPECT_EQ(plain.ray,
            "ray.init(runtime_env={\"env_vars\": {\"LD_PRELOAD\": "
            "\"/home/u/.cache/coldstart/nccl/2.30.7+peer-regions/build/patched/lib/libnccl.so.2\"}})");
  EXPECT_EQ(plain.slurm,
            "srun --export=ALL,LD_PRELOAD=/home/u/.cache/coldstart/nccl/2.30.7+peer-regions/build/patched/lib/"
            "libnccl.so.2 python train.py");
  LoadLines spaced = load_lines("/home/a b/it's/libnccl.so.2");
  EXPECT_EQ(spaced.torchrun, "LD_PRELOAD='/home/a b/it'\\''s/libnccl.so.2' torchrun --nproc-per-node N train.py");
  EXPECT_NE(spaced.ray.find("\"/home/a b/it's/libnccl.so.2\""), std::string::npos);
}

}  // namespace coldstart::ncclbuild
