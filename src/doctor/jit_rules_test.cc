// The JIT rules (rules_jit.cc) on fact sets shaped like the nodes of the reports: a B200 whose NCCL carries SASS for
// 8.0 and 9.0 only (NVIDIA/nccl#1646), the same without PTX, an H100 that has its SASS; and the JIT facts themselves:
// read from real libraries, through JSON and check_facts.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "doctor/report.h"
#include "doctor/rules.h"
#include "doctor/test_facts.h"
#include "model/test_runs.h"
#include "util/error.h"
#include "util/fs.h"

namespace coldstart::doctor {
namespace {

const Finding* find_id(const std::vector<Finding>& fs, const std::string& id) {
  for (const auto& f : fs)
    if (f.id == id) return &f;
  return nullptr;
}

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

std::vector<Finding> run(const Facts& f, const BenchResults* measured = nullptr) {
  EXPECT_FALSE(check_facts(f)) << check_facts(f)->text();
  return evaluate({&f, {}, measured});
}

TEST(JitRules, B200WithoutItsSassCompilesNcclsPtxAtInit) {
  auto fs = run(b200());
  const Finding* x = find_id(fs, "nccl-no-sass");
  ASSERT_NE(x, nullptr);
  EXPECT_EQ(x->severity, Severity::warn);
  EXPECT_TRUE(has(x->title, "init.kernels")) << x->title;
  EXPECT_TRUE(has(x->evidence, "/usr/lib/x86_64-linux-gnu/libnccl.so.2")) << x->evidence;
  EXPECT_TRUE(has(x->evidence, "SASS for sm_80, sm_90 and PTX for compute_90")) << x->evidence;
  EXPECT_TRUE(has(x->evidence, "GPU 0 (NVIDIA B200) is sm_100 (compute capability 10.0)")) << x->evidence;
  EXPECT_TRUE(has(x->evidence, "compiles its compute_90 PTX (131.6 MiB) into sm_100 code")) << x->evidence;
  // The cost at coldstart's measured rate (249 s for 82.9 MiB on an H100 node): 131.6 MiB is ~395 s
  EXPECT_TRUE(has(x->evidence, "coldstart measured 249 s for NCCL 2.30.7's 82.9 MiB of PTX")) << x->evidence;
  EXPECT_TRUE(has(x->evidence, "of the order of 395 s for this one")) << x->evidence;
  ASSERT_EQ(x->fixes.size(), 2u);
  EXPECT_TRUE(has(x->fixes[0].what, "`coldstart nccl build --arch 100`")) << x->fixes[0].what;
  EXPECT_TRUE(has(x->fixes[0].what, "NVCC_GENCODE=\"-gencode=arch=compute_100,code=sm_100\"")) << x->fixes[0].what;
  EXPECT_TRUE(has(x->fixes[0].cost, "none at run time")) << x->fixes[0].cost;
  EXPECT_TRUE(has(x->fixes[1].what, "CUDA_CACHE_MAXSIZE")) << x->fixes[1].what;
  EXPECT_TRUE(has(x->fixes[1].cost, "the first start on each node")) << x->fixes[1].cost;
  EXPECT_EQ(find_id(fs, "nccl-no-arch"), nullptr);
  EXPECT_EQ(find_id(fs, "jit-cache"), nullptr);  // the cache is on, writable and large enough
}

// Eight B200s are named as one range; the report's library line shows what the library carries.
TEST(JitRules, EightGpusAndTheLibraryLine) {
  Facts f = b200();
  for (int i = 1; i < 8; ++i) {
    f.cuda.gpus.push_back(f.cuda.gpus[0]);
    f.cuda.gpus.back().index = i;
  }
  f.compute_capabilities.assign(8, 100);
  auto fs = run(f);
  const Finding* x = find_id(fs, "nccl-no-sass");
  ASSERT_NE(x, nullptr);
  EXPECT_TRUE(has(x->evidence, "GPUs 0-7 (NVIDIA B200) are sm_100")) << x->evidence;
  const std::string text = render_report(f, {}, fs);
  EXPECT_TRUE(has(text, "libnccl.so.2  2.21.5  SASS 80,90 PTX 90  ← a process's default")) << text;
  f.nccl[0].sass.clear();
  f.nccl[0].ptx.clear();
  f.nccl[0].ptx_bytes.clear();
  f.nccl[0].arch_problem = "libnccl.so.2: no section headers (stripped of them), so its fat binaries cannot be found";
  EXPECT_TRUE(has(render_report(f, {}, run(f)), "(GPU code not read: libnccl.so.2: no section headers"));
}

TEST(JitRules, MeasuredInitKernelsGoesIntoTheEvidence) {
  BenchResults r;
  r.configs = {Config{}};
  r.summaries = {test::summary_with("isolated", {{"comm_init", 55000}, {"init.kernels", 52450}})};
  const auto fs = run(b200(), &r);
  const Finding* x = find_id(fs, "nccl-no-sass");
  ASSERT_NE(x, nullptr);
  EXPECT_TRUE(has(x->evidence, "measured (isolated): init.kernels 52450 ms of comm_init 55000 ms")) << x->evidence;
}

TEST(JitRules, NoSassAndNoPtxItCanCompileMeansNcclCannotLaunch) {
  auto fs = run(b200({}));
  const Finding* x = find_id(fs, "nccl-no-arch");
  ASSERT_NE(x, nullptr);
  EXPECT_EQ(x->severity, Severity::error);
  EXPECT_TRUE(has(x->evidence, "PTX for none")) << x->evidence;
  EXPECT_TRUE(has(x->evidence, "no kernel image is available")) << x->evidence;
  ASSERT_FALSE(x->fixes.empty());
  EXPECT_TRUE(has(x->fixes.back().what, "sm_100")) << x->fixes.back().what;
  EXPECT_EQ(find_id(fs, "nccl-no-sass"), nullptr);
  EXPECT_EQ(find_id(fs, "jit-cache"), nullptr);  // nothing to compile, so nothing to keep
  // PTX only for a later architecture is no help either
  EXPECT_NE(find_id(run(b200({"120"})), "nccl-no-arch"), nullptr);
  // nor PTX for one GPU only (90a)
  EXPECT_NE(find_id(run(b200({"90a"})), "nccl-no-arch"), nullptr);
}

TEST(JitRules, H100WithItsSassNeedsNothing) {
  Facts f = node(90, "NVIDIA H100 80GB HBM3", {"80", "90"}, {"90"});
  auto fs = run(f);
  EXPECT_EQ(find_id(fs, "nccl-no-sass"), nullptr);
  EXPECT_EQ(find_id(fs, "nccl-no-arch"), nullptr);
  EXPECT_EQ(find_id(fs, "jit-cache"), nullptr);
  // Without a JIT the cache does not matter: disabled, it is not named
  f.env["CUDA_CACHE_DISABLE"] = "1";
  f.jit_cache.writable = 0;
  EXPECT_EQ(find_id(run(f), "jit-cache"), nullptr);
  // SASS for 8.0 runs on an A10 (8.6): no JIT there either
  EXPECT_EQ(find_id(run(node(86, "NVIDIA A10", {"80"}, {"80"})), "nccl-no-sass"), nullptr);
}

TEST(JitRules, CacheDisabledWhereAJitHappens) {
  Facts f = b200();
  f.env["CUDA_CACHE_DISABLE"] = "1";
  auto fs = run(f);
  const Finding* x = find_id(fs, "jit-cache");
  ASSERT_NE(x, nullptr);
  EXPECT_EQ(x->severity, Severity::warn);
  EXPECT_TRUE(has(x->evidence, "CUDA_CACHE_DISABLE=1 turns the cache off")) << x->evidence;
  EXPECT_TRUE(has(x->evidence, "(nccl-no-sass)")) << x->evidence;
  EXPECT_EQ(x->fixes.front().what, "unset CUDA_CACHE_DISABLE (or set it to 0)");
  EXPECT_TRUE(has(x->fixes.back().what, "sm_100")) << x->fixes.back().what;
  EXPECT_NE(find_id(fs, "nccl-no-sass"), nullptr);
}

TEST(JitRules, CacheTooSmallOrNotWritable) {
  Facts f = b200();
  f.env["CUDA_CACHE_MAXSIZE"] = "33554432";
  auto fs = run(f);
  const Finding* x = find_id(fs, "jit-cache");
  ASSERT_NE(x, nullptr);
  EXPECT_TRUE(has(x->evidence,
                  "CUDA_CACHE_MAXSIZE=33554432 (32 MiB) is smaller than what the PTX to compile "
                  "(131.6 MiB) becomes in the cache (about 223.8 MiB: 1.7× its PTX, measured)"))
      << x->evidence;
  EXPECT_EQ(x->fixes.front().what, "CUDA_CACHE_MAXSIZE=1073741824 (bytes; at most 4294967296)");
  // Above the PTX but below what it compiles to (141 MiB in the cache for 82.9 MiB of PTX, measured): not kept
  f.env["CUDA_CACHE_MAXSIZE"] = "150000000";
  EXPECT_NE(find_id(run(f), "jit-cache"), nullptr);
  f.env["CUDA_CACHE_MAXSIZE"] = "240000000";
  EXPECT_EQ(find_id(run(f), "jit-cache"), nullptr);
  f.env["CUDA_CACHE_MAXSIZE"] = "4294967296";
  EXPECT_EQ(find_id(run(f), "jit-cache"), nullptr);
  f.jit_cache = {"/ro/cache", 0, 0, -1};
  fs = run(f);
  x = find_id(fs, "jit-cache");
  ASSERT_NE(x, nullptr);
  EXPECT_TRUE(has(x->evidence, "the cache folder /ro/cache is not writable (nor can it be created)")) << x->evidence;
  EXPECT_TRUE(has(x->fixes.front().what, "CUDA_CACHE_PATH=")) << x->fixes.front().what;
}

TEST(JitRules, TheDriversSwitchesForPtx) {
  // CUDA_FORCE_PTX_JIT=1: SASS ignored, the PTX compiled; without a cache that is every start
  Facts f = node(90, "NVIDIA H100 80GB HBM3", {"90"}, {"90"});
  f.env["CUDA_FORCE_PTX_JIT"] = "1";
  f.env["CUDA_CACHE_DISABLE"] = "1";
  auto fs = run(f);
  const Finding* x = find_id(fs, "nccl-no-sass");
  ASSERT_NE(x, nullptr);
  EXPECT_TRUE(has(x->evidence, "CUDA_FORCE_PTX_JIT=1")) << x->evidence;
  EXPECT_EQ(x->fixes.front().what, "unset CUDA_FORCE_PTX_JIT");
  EXPECT_NE(find_id(fs, "jit-cache"), nullptr);
  // ... and with no PTX, nothing loads
  f.nccl[0].ptx.clear();
  f.nccl[0].ptx_bytes.clear();
  EXPECT_NE(find_id(run(f), "nccl-no-arch"), nullptr);
  // CUDA_DISABLE_PTX_JIT=1 where only PTX would do: nothing loads
  Facts g = b200();
  g.env["CUDA_DISABLE_PTX_JIT"] = "1";
  fs = run(g);
  x = find_id(fs, "nccl-no-arch");
  ASSERT_NE(x, nullptr);
  EXPECT_TRUE(has(x->evidence, "CUDA_DISABLE_PTX_JIT=1 forbids compiling PTX")) << x->evidence;
}

// Fact sets from before these facts (no architectures, no capabilities) and libraries that could not be read say
// nothing.
TEST(JitRules, UnknownCodeOrGpusSayNothing) {
  Facts f = b200();
  f.nccl[0].sass.clear();
  f.nccl[0].ptx.clear();
  f.nccl[0].ptx_bytes.clear();
  f.nccl[0].arch_problem = "libnccl.so.2: no section headers";
  EXPECT_EQ(find_id(run(f), "nccl-no-arch"), nullptr);
  f = b200();
  f.compute_capabilities = {-1};
  EXPECT_EQ(find_id(run(f), "nccl-no-sass"), nullptr);
  auto fs = run(test::recorded_facts("h200x2.json"));
  EXPECT_EQ(find_id(fs, "nccl-no-sass"), nullptr);
  EXPECT_EQ(find_id(fs, "jit-cache"), nullptr);
}

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
