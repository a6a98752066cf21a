// The job's size against the node (rules_job.cc), on the recorded 2x H200 fact set changed one field at a time: ranks
// that resolve to one GPU, a LOCAL_RANK past the GPUs seen, the open-files limit at the job's size, /dev/shm for the
// ranks of one node and their GPUs, the node's ranks against its CPUs while NCCL's waits spin.
#include <gtest/gtest.h>

#include <optional>

#include <nlohmann/json.hpp>

#include "doctor/rules.h"
#include "doctor/test_facts.h"
#include "util/error.h"

namespace coldstart::doctor {
namespace {

Facts h200x2() { return test::recorded_facts("h200x2.json"); }

// The finding `id` of a fact set under the planned ranks, if any (a copy: evaluate's list is a temporary).
std::optional<Finding> finding(const Facts& f, const std::string& id, const std::vector<RankView>& ranks = {}) {
  for (Finding& x : evaluate({&f, ranks, nullptr}))
    if (x.id == id) return x;
  return std::nullopt;
}

bool says(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// Ranks of a plan, each on the GPU given (all seeing every GPU, so none is masked).
std::vector<RankView> on_gpus(std::vector<int> gpus) {
  std::vector<RankView> out;
  for (size_t i = 0; i < gpus.size(); ++i) out.push_back({static_cast<int>(i), "0,1", gpus[i], {0, 1}, gpus[i], ""});
  return out;
}

void loads(Facts& f, const std::string& version) {
  for (auto& lib : f.nccl) lib.would_load = false;
  f.nccl.at(1).would_load = true;
  f.nccl.at(1).version = version;
}

}  // namespace

// deepspeedai/DeepSpeed#3165: srun --gpus-per-task=1 gives each task one GPU, and the framework still selects
// cuda:LOCAL_RANK.
TEST(DeviceIndex, ALocalRankPastTheGpusThisProcessSeesIsAnError) {
  Facts f = h200x2();
  f.env["LOCAL_RANK"] = "1";
  EXPECT_FALSE(finding(f, "device-index"));  // 2 GPUs seen: device 1 exists
  f.env["LOCAL_RANK"] = "2";
  auto d = finding(f, "device-index");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->severity, Severity::error);
  EXPECT_TRUE(says(d->evidence, "LOCAL_RANK=2 but this process sees 2 GPUs (CUDA_VISIBLE_DEVICES unset)"))
      << d->evidence;
  EXPECT_TRUE(says(d->fixes.at(0).what, "LOCAL_RANK % 2")) << d->fixes[0].what;
  // The task narrowed to its own GPU, as under srun --gpus-per-task=1: LOCAL_RANK 1 is past it, device 0 is the fix.
  f.cvd_set = true;
  f.cvd = "1";
  f.cuda.gpus.resize(1);
  f.env["LOCAL_RANK"] = "1";
  d = finding(f, "device-index");
  ASSERT_TRUE(d);
  EXPECT_TRUE(says(d->evidence, "sees 1 GPU (CUDA_VISIBLE_DEVICES=1)")) << d->evidence;
  EXPECT_TRUE(says(d->fixes.at(0).what, "select device 0")) << d->fixes[0].what;
  // Not a number, negative, or no CUDA to ask: nothing said.
  for (const char* v : {"x", "-1", ""}) {
    f.env["LOCAL_RANK"] = v;
    EXPECT_FALSE(finding(f, "device-index")) << v;
  }
  f.env["LOCAL_RANK"] = "1";
  f.cuda.available = false;
  EXPECT_FALSE(finding(f, "device-index"));
}

TEST(SameGpu, TwoRanksOnOneGpuAreRefusedByTheNcclThatLoads) {
  Facts f = h200x2();
  EXPECT_FALSE(finding(f, "same-gpu", on_gpus({0, 1})));
  auto s = finding(f, "same-gpu", on_gpus({0, 1, 0}));
  ASSERT_TRUE(s);
  EXPECT_EQ(s->severity, Severity::error);
  EXPECT_TRUE(says(s->evidence, "ranks 0, 2 on GPU 0 (0000:00:06.0)")) << s->evidence;
  // The node loads 2.28.3: the old refusal, and no switch before 2.30.
  EXPECT_TRUE(says(s->evidence, "Duplicate GPU detected")) << s->evidence;
  ASSERT_EQ(s->fixes.size(), 2u);
  EXPECT_TRUE(says(s->fixes[0].what, "NCCL_MULTI_RANK_GPU_ENABLE=1")) << s->fixes[0].what;
  EXPECT_TRUE(says(s->fixes[0].what, "NCCL 2.30 or later (2.28.3 has no such switch)")) << s->fixes[0].what;
  EXPECT_TRUE(says(s->fixes[0].cost, "share the GPU's compute and memory")) << s->fixes[0].cost;
  EXPECT_TRUE(says(s->fixes[1].what, "launcher's GPU assignment")) << s->fixes[1].what;
}

TEST(SameGpu, NcclFrom230WithItsSwitchIsInformationOnly) {
  Facts f = h200x2();
  loads(f, "2.30.7+peer-regions");
  auto s = finding(f, "same-gpu", on_gpus({1, 1}));
  ASSERT_TRUE(s);
  EXPECT_EQ(s->severity, Severity::error);
  EXPECT_TRUE(says(s->evidence, "Multiple Ranks are using the same GPU/Partition")) << s->evidence;
  EXPECT_FALSE(says(s->fixes.at(0).what, "2.30 or later")) << s->fixes[0].what;
  f.env["NCCL_MULTI_RANK_GPU_ENABLE"] = "1";
  s = finding(f, "same-gpu", on_gpus({1, 1}));
  ASSERT_TRUE(s);
  EXPECT_EQ(s->severity, Severity::info);
  EXPECT_TRUE(says(s->evidence, "ranks 0, 1 on GPU 1 (0000:00:07.0)")) << s->evidence;
  // The switch does nothing before 2.30.
  loads(f, "2.29.7");
  EXPECT_EQ(finding(f, "same-gpu", on_gpus({1, 1}))->severity, Severity::error);
}

TEST(FdLimit, TheSoftLimitAgainstTheFdsOfTheJobsRanks) {
  Facts f = h200x2();
  EXPECT_EQ(f.nofile_soft, -2);  // recorded before the limits were: unknown, no finding
  f.env["WORLD_SIZE"] = "512";
  EXPECT_FALSE(finding(f, "fd-limit"));
  f.nofile_soft = 1024;
  f.nofile_hard = 4096;
  auto d = finding(f, "fd-limit");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->severity, Severity::warn);
  // 64 + 511 peers; the store's process 512 more.
  EXPECT_TRUE(says(d->evidence, "WORLD_SIZE=512: a rank holds about 575 fds")) << d->evidence;
  EXPECT_TRUE(says(d->evidence, "about 1087 with a socket per rank")) << d->evidence;
  EXPECT_TRUE(says(d->evidence, "1024 (soft), 4096 (hard)")) << d->evidence;
  EXPECT_TRUE(says(d->fixes.at(0).what, "ulimit -n 4096")) << d->fixes[0].what;
  EXPECT_EQ(d->fixes[0].cost, "none");
  // Half the job fits; over the hard limit too is an error whose fix needs root.
  f.env["WORLD_SIZE"] = "256";
  EXPECT_FALSE(finding(f, "fd-limit"));
  f.env["WORLD_SIZE"] = "4096";
  d = finding(f, "fd-limit");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->severity, Severity::error);
  EXPECT_TRUE(says(d->fixes.at(0).what, "raise the hard limit past 8255")) << d->fixes[0].what;
  f.nofile_hard = -1;  // unlimited: a warning again
  EXPECT_EQ(finding(f, "fd-limit")->severity, Severity::warn);
}

TEST(FdLimit, ThePlannedRanksAreTheJobsSize) {
  Facts f = h200x2();
  f.nofile_soft = 64;
  f.nofile_hard = 1024;
  EXPECT_FALSE(finding(f, "fd-limit"));  // no size: nothing to say
  auto d = finding(f, "fd-limit", on_gpus({0, 1}));
  ASSERT_TRUE(d);
  EXPECT_TRUE(says(d->evidence, "--ranks 2: a rank holds about 65 fds")) << d->evidence;
  f.nofile_soft = 1024;
  EXPECT_FALSE(finding(f, "fd-limit", on_gpus({0, 1})));
}

TEST(FdLimit, TheLimitsAreFactsReadBackAndChecked) {
  Facts f = h200x2();
  f.nofile_soft = 1024;
  f.nofile_hard = 524288;
  nlohmann::json j = to_json(f);
  EXPECT_EQ(j["nofile_soft"], 1024);
  EXPECT_EQ(facts_from_json(j).nofile_hard, 524288);
  j["nofile_soft"] = 600000;
  EXPECT_THROW(facts_from_json(j), InputError);  // above the hard limit
  j["nofile_soft"] = -3;
  EXPECT_THROW(facts_from_json(j), InputError);
  j["nofile_soft"] = -1;  // unlimited under a finite hard limit cannot be
  EXPECT_THROW(facts_from_json(j), InputError);
  j["nofile_hard"] = -1;
  EXPECT_NO_THROW(facts_from_json(j));
}

TEST(ShmSmall, RanksOfOneGpuNeedItOnlyForAJobAcrossNodes) {
  Facts f = h200x2();
  f.nvml.gpus.resize(1);
  f.nvml.p2p = {{"X"}};
  f.cuda.gpus.resize(1);
  f.vmm.resize(1);
  f.shm_bytes = int64_t{64} << 20;
  EXPECT_FALSE(finding(f, "shm-small"));  // one GPU, one rank
  // Ranks sharing the GPU connect by P2P (NCCL_P2P_DISABLE=1 included): nothing of theirs in /dev/shm.
  f.env["LOCAL_WORLD_SIZE"] = "4";
  EXPECT_FALSE(finding(f, "shm-small"));
  // Across nodes each rank's proxy keeps its ops pool there: 4 x 34210180 bytes, more than 64 MiB.
  f.env["WORLD_SIZE"] = "8";
  auto s = finding(f, "shm-small");
  ASSERT_TRUE(s);
  EXPECT_TRUE(says(s->evidence, "for 4 ranks on 1 GPU of this node (LOCAL_WORLD_SIZE=4)")) << s->evidence;
  EXPECT_TRUE(says(s->evidence, "4 ranks need about 130.5 MiB: each rank's proxy ops pool")) << s->evidence;
  EXPECT_TRUE(says(s->evidence, "failed to extend /dev/shm/nccl-XXXXXX")) << s->evidence;
}

TEST(ShmSmall, PlannedRanksOnSeveralGpusAreWarnedWhereSharingOneIsNot) {
  Facts f = h200x2();
  f.shm_bytes = int64_t{64} << 20;
  EXPECT_FALSE(finding(f, "shm-small", on_gpus({0, 0})));
  auto s = finding(f, "shm-small", on_gpus({0, 1, 0, 1}));
  ASSERT_TRUE(s);
  // 4 ranks x 2 channels x 2 receives x 9637892 bytes: more than 64 MiB.
  EXPECT_TRUE(says(s->evidence, "for 4 ranks on 2 GPUs of this node (--ranks 4)")) << s->evidence;
  EXPECT_TRUE(says(s->evidence, "4 ranks need about 147.1 MiB: NCCL's shared-memory transport between their GPUs"))
      << s->evidence;
  EXPECT_TRUE(says(s->evidence, "failed to extend")) << s->evidence;
  s = finding(f, "shm-small", on_gpus({0, 1}));
  ASSERT_TRUE(s);  // under 1 GiB, though 2 x 2 x 9637892 bytes fit in 64 MiB
  EXPECT_FALSE(says(s->evidence, "failed to extend")) << s->evidence;
}

TEST(ShmSmall, TheThresholdGrowsWithTheRanksAndTheNodes) {
  Facts f = h200x2();
  f.shm_bytes = int64_t{2} << 30;
  f.env["LOCAL_WORLD_SIZE"] = "8";
  EXPECT_FALSE(finding(f, "shm-small"));
  f.env["LOCAL_WORLD_SIZE"] = "64";  // 64 x 2 x 2 x 9637892 bytes: 2.3 GiB
  auto s = finding(f, "shm-small");
  ASSERT_TRUE(s);
  EXPECT_TRUE(says(s->evidence, "more than it holds")) << s->evidence;
  EXPECT_TRUE(says(s->fixes.at(0).what, "--shm-size=16g")) << s->fixes[0].what;
  // 16 ranks here of 32: each rank's proxy ops pool joins the transport's files.
  f.shm_bytes = int64_t{1100} << 20;
  f.env["LOCAL_WORLD_SIZE"] = "16";
  EXPECT_FALSE(finding(f, "shm-small"));
  f.env["WORLD_SIZE"] = "32";
  s = finding(f, "shm-small");
  ASSERT_TRUE(s);
  EXPECT_TRUE(says(s->evidence, "proxy ops pool")) << s->evidence;
}

// 16 ranks on 16 CPUs: NCCL's spinning waits held the cores their peers needed (docs/results/2026-12-06-h100x1-quiet).
TEST(SpinningWaits, AsManyRanksAsCpusAreWarnedWhileNcclsWaitsSpin) {
  Facts f = h200x2();
  loads(f, "2.30.7");
  f.env["LOCAL_WORLD_SIZE"] = "16";
  EXPECT_FALSE(finding(f, "spinning-waits"));  // the recorded set has no CPU count: nothing to judge
  f.cpus = 32;
  EXPECT_FALSE(finding(f, "spinning-waits"));  // more CPUs than ranks
  f.cpus = 16;
  auto w = finding(f, "spinning-waits");
  ASSERT_TRUE(w);
  EXPECT_EQ(w->severity, Severity::warn);
  EXPECT_TRUE(says(w->evidence, "16 ranks on this node (LOCAL_WORLD_SIZE=16) and 16 CPUs this process may use"))
      << w->evidence;
  EXPECT_EQ(w->fixes.at(0).what, "NCCL_SOCKET_POLL_TIMEOUT_MSEC=1 in every rank's environment");
  EXPECT_FALSE(w->fixes[0].cost.empty());
  loads(f, "2.28.9");  // the variable came with NCCL 2.29
  w = finding(f, "spinning-waits");
  ASSERT_TRUE(w);
  EXPECT_TRUE(says(w->fixes.at(0).what, "NCCL 2.29 or newer (NCCL 2.28.9 has no such variable)")) << w->fixes[0].what;
  f.env["NCCL_SOCKET_POLL_TIMEOUT_MSEC"] = "0";  // spinning, as by default
  EXPECT_TRUE(finding(f, "spinning-waits"));
  f.env["NCCL_SOCKET_POLL_TIMEOUT_MSEC"] = "1";
  EXPECT_FALSE(finding(f, "spinning-waits"));
  f.env.erase("NCCL_SOCKET_POLL_TIMEOUT_MSEC");
  f.env.erase("LOCAL_WORLD_SIZE");
  f.cpus = 4;  // the planned ranks are the node's
  w = finding(f, "spinning-waits", on_gpus({0, 1, 0, 1}));
  ASSERT_TRUE(w);
  EXPECT_TRUE(says(w->evidence, "4 ranks on this node (--ranks 4) and 4 CPUs")) << w->evidence;
}

TEST(SpinningWaits, TheCpusAreTheAffinityBoundedByTheCgroupsQuota) {
  EXPECT_EQ(usable_cpus(16, "max 100000"), 16);
  EXPECT_EQ(usable_cpus(16, "800000 100000\n"), 8);
  EXPECT_EQ(usable_cpus(16, "150000 100000"), 2);  // 1.5 CPUs of time: two threads can run at once
  EXPECT_EQ(usable_cpus(4, "800000 100000"), 4);
  EXPECT_EQ(usable_cpus(16, ""), 16);  // no cgroup v2 quota read
  EXPECT_EQ(usable_cpus(16, "x y"), 16);
  EXPECT_EQ(usable_cpus(0, "800000 100000"), -1);
  Facts f = h200x2();
  f.cpus = 16;
  nlohmann::json j = to_json(f);
  EXPECT_EQ(facts_from_json(j).cpus, 16);
  j.erase("cpus");  // a fact set recorded before the field: unknown
  EXPECT_EQ(facts_from_json(j).cpus, -1);
  for (int bad : {0, -2, (1 << 20) + 1}) {
    j["cpus"] = bad;
    EXPECT_THROW(facts_from_json(j), InputError) << bad;
  }
}

}  // namespace coldstart::doctor
