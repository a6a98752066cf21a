// The cache of builds: what counts as built (a manifest that reads, naming its folder, its library there), what
// bench's --nccl-lib makes of a name, a cache that cannot be written, the lock two builds take turns on, and the lines
// that say how to load a build.
#include "ncclbuild/cache.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <thread>

#include <nlohmann/json.hpp>

#include "ncclbuild/build.h"
#include "ncclbuild/fake_share_test.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/strings.h"

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

// A manifest is believed only about its own folder: a library by a relative path (complete from one folder and not
// from another), outside the entry, or reached through a link that leaves it is no build; nor is an entry whose
// build folder's stamp says another build than build.json (a switch interrupted between the two), nor a build.json
// that is a link.
TEST(NcclCache, AManifestNamesItsOwnLibraryInsideItsFolderOrTheEntryIsIncomplete) {
  TempDir cache("coldstart-cache-");
  TempDir elsewhere("coldstart-elsewhere-");
  write_file_atomic(elsewhere.path() + "/libnccl.so.2", std::string(1000, 'x'));
  auto with_library = [&](const std::string& version, const std::string& library) {
    Manifest m = put_cache_entry(cache.path(), version, "2026-12-03T18:00:00Z");
    m.library = library;
    write_file_atomic(cache.path() + "/" + m.name + "/" + kManifestFile, manifest_json(m));
    return m;
  };
  with_library("2.30.1", "2.30.1+peer-regions/build/patched/lib/libnccl.so.2");
  with_library("2.30.2", elsewhere.path() + "/libnccl.so.2");
  with_library("2.30.3", cache.path() + "/2.30.3+peer-regions/../../" + fs::path(elsewhere.path()).filename().string() +
                             "/libnccl.so.2");
  Manifest linked = with_library("2.30.4", cache.path() + "/2.30.4+peer-regions/build/patched/lib/libnccl.so.2");
  fs::remove(linked.library);
  fs::create_symlink(elsewhere.path() + "/libnccl.so.2", linked.library);
  Manifest switched = put_cache_entry(cache.path(), "2.30.5", "2026-12-03T18:00:00Z");
  write_file_atomic(cache.path() + "/2.30.5+peer-regions/build/" + kBuiltForFile,
                    built_for({"90", "100"}, switched.series) + "\n");
  Manifest agrees = put_cache_entry(cache.path(), "2.30.6", "2026-12-03T18:00:00Z");
  write_file_atomic(cache.path() + "/2.30.6+peer-regions/build/" + kBuiltForFile,
                    built_for(agrees.arch, agrees.series) + "\n");
  Manifest link_manifest = put_cache_entry(cache.path(), "2.30.7", "2026-12-03T18:00:00Z");
  const std::string mpath = cache.path() + "/2.30.7+peer-regions/" + kManifestFile;
  fs::rename(mpath, elsewhere.path() + "/build.json");
  fs::create_symlink(elsewhere.path() + "/build.json", mpath);

  std::map<std::string, Entry> by;
  for (auto& e : list_entries(cache.path())) by[e.name] = e;
  auto state = [&](const std::string& v) { return by[v + "+peer-regions"].state; };
  EXPECT_NE(state("2.30.1").find("build.json names its library by a relative path"), std::string::npos)
      << state("2.30.1");
  EXPECT_NE(state("2.30.2").find("build.json names a library outside its folder"), std::string::npos)
      << state("2.30.2");
  EXPECT_NE(state("2.30.3").find("build.json names a library outside its folder"), std::string::npos)
      << state("2.30.3");
  EXPECT_NE(state("2.30.4").find("leads outside its folder through a link"), std::string::npos) << state("2.30.4");
  EXPECT_NE(state("2.30.5").find("a switch to a new build was interrupted"), std::string::npos) << state("2.30.5");
  EXPECT_TRUE(by["2.30.6+peer-regions"].complete) << state("2.30.6");
  EXPECT_NE(state("2.30.7").find("is a symbolic link"), std::string::npos) << state("2.30.7");
  for (const auto& v : {"2.30.1", "2.30.2", "2.30.3", "2.30.4", "2.30.5", "2.30.7"})
    EXPECT_FALSE(by[std::string(v) + "+peer-regions"].complete) << v;
  EXPECT_EQ(find_complete(cache.path(), "")->name, "2.30.6+peer-regions");
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
  EXPECT_EQ(library_for("2.30.7+peer-regions", cache.path(), "--nccl-lib"), m.library);
  EXPECT_EQ(library_for("/opt/nccl/libnccl.so.2", cache.path(), "--nccl-lib"), "/opt/nccl/libnccl.so.2");
  EXPECT_EQ(library_for("libnccl.so.2", cache.path(), "--nccl-lib"), "libnccl.so.2");
  EXPECT_EQ(library_for("", cache.path(), "--nccl-lib"), "");
  std::string e = testing::input_error_of([&] { library_for("2.31.0+peer-regions", cache.path(), "--nccl-lib"); });
  EXPECT_NE(e.find("is not complete"), std::string::npos) << e;
  EXPECT_NE(e.find("coldstart nccl build --version 2.31.0"), std::string::npos) << e;
  e = testing::input_error_of([&] { library_for("2.29.1+peer-regions", cache.path(), "--nccl-lib"); });
  EXPECT_NE(e.find("no build of that name in " + cache.path()), std::string::npos) << e;
  EXPECT_NE(e.find("coldstart nccl list"), std::string::npos) << e;
  EXPECT_TRUE(looks_like_entry_name("2.30.7+peer-regions"));
  EXPECT_FALSE(looks_like_entry_name("2.30.7"));
  EXPECT_FALSE(looks_like_entry_name("./2.30.7+peer-regions"));
  EXPECT_FALSE(looks_like_entry_name("2.30.7+"));
  EXPECT_FALSE(looks_like_entry_name("2..7+x"));
  EXPECT_FALSE(looks_like_entry_name("2.30.7+a\nb"));
  // A name of 100k characters was matched by a recursive regex that overflowed the sanitized build's stack
  const std::string huge = "2.30.7+" + std::string(100000, 'a');
  EXPECT_FALSE(looks_like_entry_name(huge));
  EXPECT_EQ(library_for(huge, cache.path(), "--nccl-lib"), huge);  // a path, as any word that is no name
  EXPECT_FALSE(looks_like_entry_name(std::string(100000, '1') + ".2.3+x"));
}

// nccl env and list read a cache; a --cache-dir that is a file or a device is refused, never taken for an empty one
TEST(NcclCache, ACacheDirThatIsNoFolderIsRefusedAndAMissingOneIsEmpty) {
  TempDir tmp("coldstart-cache-");
  write_file_atomic(tmp.path() + "/file", "x");
  std::string e = testing::input_error_of([&] { check_cache_dir(tmp.path() + "/file", "--cache-dir"); });
  EXPECT_EQ(e, "--cache-dir " + tmp.path() +
                   "/file: not a folder (a file); give the folder of the cache, or none for "
                   "the default");
  e = testing::input_error_of([&] { check_cache_dir("/dev/null", "--cache-dir"); });
  EXPECT_NE(e.find("--cache-dir /dev/null: not a folder (a device, FIFO or socket)"), std::string::npos) << e;
  EXPECT_EQ(testing::input_error_of([&] { check_cache_dir(tmp.path() + "/none", "--cache-dir"); }), "");
  EXPECT_EQ(testing::input_error_of([&] { check_cache_dir(tmp.path(), "--cache-dir"); }), "");
}

// The lock file is the entry's own: a link planted there is never followed (its target was truncated and overwritten
// with the lock's text), and a FIFO never waited on
TEST(NcclCache, ALockThatIsALinkOrAFifoIsRefusedAndItsTargetUntouched) {
  TempDir entry("coldstart-entry-");
  TempDir elsewhere("coldstart-elsewhere-");
  const std::string precious = elsewhere.path() + "/precious";
  write_file_atomic(precious, "keep me\n");
  fs::create_symlink(precious, entry.path() + "/lock");
  std::string e = testing::input_error_of([&] { EntryLock l(entry.path(), [](const std::string&) {}); });
  EXPECT_EQ(e, entry.path() + "/lock is a symbolic link, which nccl build never follows: remove it and run again");
  EXPECT_EQ(read_file(precious), "keep me\n");
  fs::remove(entry.path() + "/lock");
  fs::create_symlink(elsewhere.path() + "/none", entry.path() + "/lock");  // dangling: O_CREAT would make its target
  EXPECT_NE(testing::input_error_of([&] { EntryLock l(entry.path(), [](const std::string&) {}); }), "");
  EXPECT_FALSE(fs::exists(elsewhere.path() + "/none"));
  fs::remove(entry.path() + "/lock");
  ASSERT_EQ(::mkfifo((entry.path() + "/lock").c_str(), 0600), 0);
  e = testing::input_error_of([&] { EntryLock l(entry.path(), [](const std::string&) {}); });
  EXPECT_NE(e.find("lock is not a regular file"), std::string::npos) << e;
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

// Two ranks on one GPU need NCCL_MULTI_RANK_GPU_ENABLE=1 (NCCL 2.30+), or NCCL stops at init with "invalid usage":
// the lines set it where the node has one GPU or the job puts several ranks on one, and only for a 2.30+ library.
TEST(NcclCache, TheLoadingLinesLetRanksShareAGpuWhereTheyDo) {
  const std::string lib = "/c/2.30.7+peer-regions/build/patched/lib/libnccl.so.2";
  LoadLines one = load_lines(lib, "2.30.7", JobShape{1, 0});
  EXPECT_EQ(one.torchrun, "LD_PRELOAD=" + lib + " NCCL_MULTI_RANK_GPU_ENABLE=1 torchrun --nproc-per-node 2 train.py");
  EXPECT_EQ(one.ray, "ray.init(runtime_env={\"env_vars\": {\"LD_PRELOAD\": \"" + lib +
                         "\", \"NCCL_MULTI_RANK_GPU_ENABLE\": \"1\"}})");
  EXPECT_EQ(one.slurm, "srun --export=ALL,LD_PRELOAD=" + lib + ",NCCL_MULTI_RANK_GPU_ENABLE=1 python train.py");
  ASSERT_EQ(one.env.size(), 2u);
  EXPECT_EQ(one.env[1], (std::pair<std::string, std::string>{"NCCL_MULTI_RANK_GPU_ENABLE", "1"}));
  // Eight GPUs: one rank each unless the job says otherwise
  EXPECT_EQ(load_lines(lib, "2.30.7", JobShape{8, 0}).torchrun,
            "LD_PRELOAD=" + lib + " torchrun --nproc-per-node 8 train.py");
  EXPECT_EQ(load_lines(lib, "2.30.7", JobShape{8, 4}).torchrun,
            "LD_PRELOAD=" + lib + " NCCL_MULTI_RANK_GPU_ENABLE=1 torchrun --nproc-per-node 32 train.py");
  EXPECT_EQ(load_lines(lib, "2.30.7", JobShape{0, 2}).env.size(), 2u);
  // Before 2.30 NCCL runs one rank a GPU whatever is set; a library of no known version is not claimed to share
  EXPECT_EQ(load_lines(lib, "2.28.9", JobShape{1, 0}).env.size(), 1u);
  EXPECT_EQ(load_lines(lib, "", JobShape{1, 0}).env.size(), 1u);
  Manifest m;
  m.name = "2.30.7+peer-regions";
  m.version = "2.30.7";
  m.library = lib;
  EXPECT_NE(join(describe_loading(m, JobShape{1, 0}), "\n").find("one GPU here: a job's ranks share it"),
            std::string::npos);
  m.version = "2.28.9";
  EXPECT_NE(join(describe_loading(m, JobShape{1, 0}), "\n").find("one GPU here: NCCL 2.28.9 runs one rank a GPU"),
            std::string::npos);
}

// The stock build of a release sits beside the patched one in an entry of its own; what bench and nccl env take by
// themselves is the patched one unless the stock one is asked for by its kind or name.
TEST(NcclCache, TheStockBuildIsAnEntryOfItsOwn) {
  TempDir cache("coldstart-cache-");
  EXPECT_EQ(entry_name("2.30.7", Which::stock), "2.30.7+stock");
  EXPECT_TRUE(looks_like_entry_name("2.30.7+stock"));
  testing::put_cache_entry(cache.path(), "2.30.7", "2026-12-03T18:00:00Z");
  const Manifest stock =
      testing::put_cache_entry(cache.path(), "2.30.7", "2026-12-03T19:00:00Z", "", Which::stock);  // built after
  EXPECT_EQ(parse_manifest(manifest_json(stock), "build.json").which, Which::stock);
  EXPECT_EQ(find_complete(cache.path(), "")->name, "2.30.7+peer-regions");
  EXPECT_EQ(find_complete(cache.path(), "2.30.7+stock")->manifest->library, stock.library);
  EXPECT_EQ(newest_complete_from(cache.path(), 23000)->name, "2.30.7+peer-regions");
  EXPECT_EQ(newest_complete_from(cache.path(), 23000, Which::stock)->name, "2.30.7+stock");
  EXPECT_EQ(library_for("2.30.7+stock", cache.path(), "--nccl-lib"), stock.library);
  // A manifest from before stock builds has no "which": a patched build's
  nlohmann::json old = nlohmann::json::parse(manifest_json(stock));
  old.erase("which");
  EXPECT_EQ(parse_manifest(old.dump(), "build.json").which, Which::patched);
  old["which"] = "other";
  EXPECT_NE(testing::input_error_of([&] {
              parse_manifest(old.dump(), "build.json");
            }).find("'which' is other, not patched or stock"),
            std::string::npos);
}

}  // namespace coldstart::ncclbuild
