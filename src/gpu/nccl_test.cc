// The loader against the real NCCL library of the CUDA toolkit on the build machine (ncclGetVersion needs no GPU).
#include "gpu/nccl.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "util/error.h"
#include "util/fs.h"
#include "util/strings.h"

namespace coldstart::nccl {
namespace {
std::string toolkit_nccl() { return std::string(COLDSTART_CUDA_LIB_DIR) + "/libnccl.so.2"; }

std::string error_of(const std::string& path) {
  try {
    load(path);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST(NcclLoader, LoadsTheToolkitsNcclAndReportsFileAndVersion) {
  ASSERT_TRUE(std::filesystem::exists(toolkit_nccl())) << toolkit_nccl() << " is part of the CUDA toolkit";
  Library lib = load(toolkit_nccl());
  EXPECT_GE(lib.version, kMinVersion);
  EXPECT_EQ(lib.path, std::filesystem::canonical(toolkit_nccl()).string());
  int v = 0;
  ASSERT_EQ(lib.fn.GetVersion(&v), Success);
  EXPECT_EQ(v, lib.version);
  EXPECT_NE(lib.version_string().find("2."), std::string::npos);
  EXPECT_STRNE(lib.fn.GetErrorString(Success), "");
}

TEST(NcclLoader, EnvironmentVariableIsUsedWhenNoPathIsGiven) {
  ::setenv("COLDSTART_NCCL_LIB", toolkit_nccl().c_str(), 1);
  Library lib = load("");
  ::unsetenv("COLDSTART_NCCL_LIB");
  EXPECT_EQ(lib.path, std::filesystem::canonical(toolkit_nccl()).string());
}

TEST(NcclLoader, MissingFileNamesTheFlagAndTheFix) {
  std::string e = error_of("/nonexistent/libnccl.so.2");
  EXPECT_EQ(e, "--nccl-lib /nonexistent/libnccl.so.2: no such file; give the path of a libnccl.so.2");
}

// What a dry run checks without loading (check_file), as the loader meets it: a folder, a text file, a library this
// user cannot read (as root, checked from a child that has become nobody), each refused in one line; a library passes.
TEST(NcclLoader, WhatCannotBeLoadedIsRefusedWithoutLoading) {
  std::string dir = std::filesystem::temp_directory_path() / ("coldstart-nccl-check-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  auto refusal = [](const std::string& path) {
    try {
      check_file("--nccl-lib " + path, path);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(refusal(dir).find(": not a regular file"), std::string::npos) << refusal(dir);
  write_file_atomic(dir + "/text.so", "not a library\n");
  EXPECT_NE(refusal(dir + "/text.so").find(": not a shared library"), std::string::npos);
  EXPECT_EQ(refusal(COLDSTART_FAKE_PATCH_MARKS), "");
  EXPECT_EQ(refusal("libnccl.so.2"), "");  // the loader's to find
  // Programs: a position-independent one is ET_DYN like a library (it was taken for one), and a fixed-address one
  for (const std::string& program : std::vector<std::string>{"/bin/sh", "/usr/bin/env", self_exe()})
    EXPECT_NE(refusal(program).find(": a program (an ELF executable), not a shared library"), std::string::npos)
        << program << ": " << refusal(program);
  EXPECT_EQ(refusal(std::string(COLDSTART_CUDA_LIB_DIR) + "/libcudart.so"), "");  // a library, if not NCCL's
  const std::string locked = dir + "/locked.so";
  std::filesystem::copy_file(COLDSTART_FAKE_PATCH_MARKS, locked);
  std::filesystem::permissions(locked, std::filesystem::perms::owner_write);
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (::geteuid() == 0 && (::setgid(65534) != 0 || ::setuid(65534) != 0)) ::_exit(3);
    ::_exit(refusal(locked).find(": cannot be read (Permission denied); the ranks could not load it") !=
                    std::string::npos
                ? 0
                : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
  std::filesystem::remove_all(dir);
}

TEST(NcclLoader, ALibraryThatIsNotNcclIsRefused) {
  std::string cudart = std::string(COLDSTART_CUDA_LIB_DIR) + "/libcudart.so";
  std::string e = error_of(cudart);
  EXPECT_NE(e.find("not an NCCL library"), std::string::npos) << e;
  std::string text = error_of("/etc/hostname");
  EXPECT_NE(text.find("--nccl-lib /etc/hostname"), std::string::npos) << text;
}

TEST(NcclLoader, ANcclOlderThan219IsRefusedWithItsVersion) {
  std::string e = error_of(COLDSTART_FAKE_OLD_NCCL);
  EXPECT_NE(e.find("--nccl-lib " + std::string(COLDSTART_FAKE_OLD_NCCL)), std::string::npos) << e;
  EXPECT_NE(e.find("NCCL 2.18.5 is too old (coldstart needs 2.19 or later)"), std::string::npos) << e;
}

TEST(NcclLoader, CandidatesStartWithTheLoadersSearchPath) {
  auto c = candidate_paths("");
  ASSERT_FALSE(c.empty());
  EXPECT_EQ(c.front(), "libnccl.so.2");
  EXPECT_EQ(candidate_paths("/x/libnccl.so.2"), (std::vector<std::string>{"/x/libnccl.so.2"}));
}

TEST(NcclLoader, UidHashIsStableAndTellsIdsApart) {
  UniqueId a{}, b{};
  b.internal[127] = 1;
  EXPECT_EQ(uid_hash(a), uid_hash(a));
  EXPECT_NE(uid_hash(a), uid_hash(b));
  EXPECT_EQ(uid_hash(a).size(), 16u);
}

// A patched and a stock build of one release report the same version; the patch is found by the parameter it adds.
TEST(NcclLoader, PatchesAreFoundInTheLibraryFile) {
  std::string dir = std::filesystem::temp_directory_path() / ("coldstart-nccl-patch-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::string patched = dir + "/libnccl.so.2", stock = dir + "/stock.so", text = dir + "/marks.txt";
  std::filesystem::copy_file(COLDSTART_FAKE_PATCH_MARKS, patched);
  std::filesystem::copy_file(COLDSTART_FAKE_OLD_NCCL, stock);
  // in the series' order, whatever the order of the strings in the file
  EXPECT_EQ(patches_in(patched), (std::vector<std::string>{"peer-regions", "fd-reserve"}));
  EXPECT_TRUE(patches_in(stock).empty());
  EXPECT_TRUE(patches_in(dir + "/missing.so").empty());
  // The marks count in a library's read-only data only: the same bytes in a file that is not ELF are no patch.
  write_file_atomic(text, std::string("\x7f") + "ELF NCCL_P2P_PEER_REGION\0NCCL_FD_TABLE_RESERVE\0");
  EXPECT_TRUE(patches_in(text).empty());
  // A library of 5 GiB (its device code, say; here a hole after the section headers) is read no more than a small
  // one: only its read-only data, through one buffer, so that a memory limit cannot make it look unpatched.
  {
    std::FILE* f = std::fopen(patched.c_str(), "r+b");
    ASSERT_NE(f, nullptr);
    ASSERT_EQ(::ftruncate(::fileno(f), off_t{5} << 30), 0);
    std::fclose(f);
  }
  auto read_bytes = [] {
    for (const auto& line : split(read_file("/proc/self/io"), '\n'))
      if (line.starts_with("rchar:")) return std::stoull(std::string(line.substr(6)));
    return 0ull;
  };
  const auto before = read_bytes();
  EXPECT_EQ(patches_in(patched), (std::vector<std::string>{"peer-regions", "fd-reserve"}));
  EXPECT_LT(read_bytes() - before, 16ull << 20);
#ifndef __SANITIZE_ADDRESS__  // ASan's shadow takes terabytes of address space: no limit below it can be set
  // And under a memory limit far below the file's size, the answer is the same (mapping the file whole, as coldstart
  // did, failed there and said "unpatched").
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    const rlimit one_gib{rlim_t{1} << 30, rlim_t{1} << 30};
    if (::setrlimit(RLIMIT_AS, &one_gib) != 0) ::_exit(3);
    ::_exit(patches_in(patched) == std::vector<std::string>{"peer-regions", "fd-reserve"} ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
#endif
  Library lib;
  lib.version = 23007;
  EXPECT_EQ(lib.name(), "2.30.7");
  lib.patches = {"peer-regions"};
  EXPECT_EQ(lib.name(), "2.30.7+peer-regions");
  std::filesystem::remove_all(dir);
}

}  // namespace coldstart::nccl
