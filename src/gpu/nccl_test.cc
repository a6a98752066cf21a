// The loader against the real NCCL library of the CUDA toolkit on the build machine (ncclGetVersion needs no GPU).
#include "gpu/nccl.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "util/error.h"

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
  std::string patched = dir + "/libnccl.so.2", stock = dir + "/stock.so";
  {
    std::FILE* f = std::fopen(patched.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    // the marks sit among NUL-terminated strings, as in a library's read-only data (fputs would stop at the first NUL)
    static constexpr char kData[] =
        "\x7f"
        "ELF...binary...NCCL_FD_TABLE_RESERVE\0...NCCL_P2P_PEER_REGION\0...more";
    ASSERT_EQ(std::fwrite(kData, 1, sizeof kData, f), sizeof kData);
    std::fclose(f);
  }
  std::filesystem::copy_file(COLDSTART_FAKE_OLD_NCCL, stock);
  // in the series' order, whatever the order of the strings in the file
  EXPECT_EQ(patches_in(patched), (std::vector<std::string>{"peer-regions", "fd-reserve"}));
  EXPECT_TRUE(patches_in(stock).empty());
  EXPECT_TRUE(patches_in(dir + "/missing.so").empty());
  Library lib;
  lib.version = 23007;
  EXPECT_EQ(lib.name(), "2.30.7");
  lib.patches = {"peer-regions"};
  EXPECT_EQ(lib.name(), "2.30.7+peer-regions");
  std::filesystem::remove_all(dir);
}

}  // namespace coldstart::nccl
