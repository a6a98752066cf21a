// The JIT facts (facts_jit.cc): read from real libraries and the cache folder, through JSON and check_facts.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "doctor/facts.h"
#include "util/error.h"
#include "util/fs.h"

namespace coldstart::doctor {
namespace {

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// One GPU of capability cc and one NCCL that loads, carrying the given code.
Facts node(int cc, const std::string& gpu, std::vector<std::string> sass, std::vector<std::string> ptx) {
  Facts f;
  f.cuda.available = true;
  GpuInfo g;
  g.index = 0;
  g.name = gpu;
  f.cuda.gpus = {g};
  f.compute_capabilities = {cc};
  NcclLibFact lib;
  lib.path = lib.resolved = "/usr/lib/x86_64-linux-gnu/libnccl.so.2";
  lib.version = "2.21.5";
  lib.would_load = true;
  lib.sass = std::move(sass);
  lib.ptx = std::move(ptx);
  lib.ptx_bytes.assign(lib.ptx.size(), 138'000'000);
  f.nccl = {lib};
  f.jit_cache = {"/root/.nv/ComputeCache", 1, 1, 0};
  return f;
}

Facts b200(std::vector<std::string> ptx = {"90"}) { return node(100, "NVIDIA B200", {"80", "90"}, std::move(ptx)); }

TEST(JitFacts, RoundTripThroughJson) {
  Facts f = b200();
  f.env["CUDA_CACHE_MAXSIZE"] = "1073741824";
  Facts back = facts_from_json(to_json(f));
  ASSERT_EQ(back.nccl.size(), 1u);
  EXPECT_EQ(back.nccl[0].sass, f.nccl[0].sass);
  EXPECT_EQ(back.nccl[0].ptx, f.nccl[0].ptx);
  EXPECT_EQ(back.nccl[0].ptx_bytes, f.nccl[0].ptx_bytes);
  EXPECT_EQ(back.compute_capabilities, f.compute_capabilities);
  EXPECT_EQ(back.jit_cache.path, f.jit_cache.path);
  EXPECT_EQ(back.jit_cache.writable, 1);
  EXPECT_EQ(back.jit_cache.bytes, 0);
  EXPECT_EQ(back.env, f.env);
}

TEST(JitFacts, CheckFactsRefusesWhatTheRulesCannotRead) {
  auto refused = [](Facts f, const std::string& path) {
    auto bad = check_facts(f);
    ASSERT_TRUE(bad) << path;
    EXPECT_EQ(bad->path, path) << bad->text();
    EXPECT_THROW(facts_from_json(to_json(f)), InputError);
  };
  Facts f = b200();
  f.nccl[0].sass = {"80", "sm_90"};
  refused(f, "nccl[0].sass[1]");
  f = b200();
  f.nccl[0].ptx_bytes = {1, 2};
  refused(f, "nccl[0].ptx_bytes");
  f = b200();
  f.nccl[0].ptx_bytes = {-5};
  refused(f, "nccl[0].ptx_bytes[0]");
  f = b200();
  f.compute_capabilities = {100, 100};
  refused(f, "compute_capabilities");
  f = b200();
  f.compute_capabilities = {7};
  refused(f, "compute_capabilities[0]");
  f = b200();
  f.jit_cache.exists = 2;
  refused(f, "jit_cache.exists");
  f = b200();
  f.jit_cache.bytes = -7;
  refused(f, "jit_cache.bytes");
}

// collect_jit_facts on files of this machine: a library nvcc built, a file that is no library, and the cache folder.
TEST(JitFacts, CollectedFromLibrariesAndTheCacheFolder) {
  TempDir dir("coldstart-jit-");
  const std::string text = dir.path() + "/libnccl.so.2";
  std::ofstream(text) << "not a library";
  std::ofstream(dir.path() + "/entry") << std::string(1000, 'x');
  Facts f;
  NcclLibFact lib;
  lib.path = lib.resolved = text;
  lib.version = "2.21.5";
  f.nccl = {lib};
  const std::string fixtures = COLDSTART_FATBIN_DIR;
  if (!fixtures.empty()) {
    lib.path = lib.resolved = fixtures + "/sass80_90_ptx90.so";
    f.nccl.push_back(lib);
  }
  f.env["CUDA_CACHE_PATH"] = dir.path();
  collect_jit_facts(f);
  EXPECT_TRUE(f.nccl[0].sass.empty());
  EXPECT_TRUE(has(f.nccl[0].arch_problem, "not an ELF file")) << f.nccl[0].arch_problem;
  if (!fixtures.empty()) {
    EXPECT_EQ(f.nccl[1].sass, (std::vector<std::string>{"80", "90"})) << f.nccl[1].arch_problem;
    EXPECT_EQ(f.nccl[1].ptx, (std::vector<std::string>{"90"}));
    EXPECT_EQ(f.nccl[1].ptx_bytes.size(), 1u);
  }
  EXPECT_EQ(f.jit_cache.path, dir.path());
  EXPECT_EQ(f.jit_cache.exists, 1);
  EXPECT_EQ(f.jit_cache.bytes, 1000 + 13);
  EXPECT_NE(f.jit_cache.writable, -1);
  // A folder the driver would create: it does not exist, and whether it could be made is read from the one above
  f.env["CUDA_CACHE_PATH"] = dir.path() + "/not/yet";
  collect_jit_facts(f);
  EXPECT_EQ(f.jit_cache.exists, 0);
  EXPECT_EQ(f.jit_cache.bytes, -1);
  EXPECT_NE(f.jit_cache.writable, -1);
  f.env.erase("CUDA_CACHE_PATH");
  collect_jit_facts(f);
  EXPECT_TRUE(f.jit_cache.path.ends_with("/.nv/ComputeCache")) << f.jit_cache.path;
  EXPECT_FALSE(check_facts(f)) << check_facts(f)->text();
}

}  // namespace
}  // namespace coldstart::doctor
