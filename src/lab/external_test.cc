// `coldstart worker` under outside launchers, end to end: torchrun's variables, a real `mpirun` (Open MPI), two
// hosts made of network namespaces, and a rank that never joins.
#include "lab/external.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "util/random.h"
#include "util/run_for_test.h"

namespace coldstart::lab {
namespace {
using nlohmann::json;

int run_shell(const std::string& cmd, std::string* out = nullptr) {
  test_cli::Output o = test_cli::run_shell(cmd);
  if (out) *out = o.text;
  return o.status;
}

json results(const std::string& dir) { return json::parse(std::ifstream(dir + "/results.json")); }

std::string torchrun_env(int rank, int world, const std::string& addr, int port) {
  return "env -u COLDSTART_TOKEN RANK=" + std::to_string(rank) + " WORLD_SIZE=" + std::to_string(world) +
         " LOCAL_RANK=" + std::to_string(rank) + " LOCAL_WORLD_SIZE=" + std::to_string(world) + " MASTER_ADDR=" + addr +
         " MASTER_PORT=" + std::to_string(port) + " ";
}

TEST(External, TorchrunVariablesTrialsAccumulate) {
  const std::string dir = "/tmp/coldstart-ext-" + random_hex(6);
  const int port = 31000 + static_cast<int>(::getpid() % 2000);
  for (int launch = 0; launch < 2; ++launch) {
    std::string cmd;
    for (int r = 0; r < 3; ++r)
      cmd += torchrun_env(r, 3, "127.0.0.1", port) + COLDSTART_BIN + " worker --dry-run --out " + dir + " & ";
    std::string out;
    EXPECT_EQ(run_shell(cmd + "wait", &out), 0) << out;
  }
  json j = results(dir);
  ASSERT_EQ(j["trials"].size(), 2u);
  for (const auto& t : j["trials"]) {
    EXPECT_EQ(t["status"], "ok") << t.dump();
    ASSERT_EQ(t["ranks"].size(), 3u);
    for (const auto& r : t["ranks"]) {
      EXPECT_EQ(r["launcher"]["name"], "torchrun");
      EXPECT_EQ(r["launcher"]["local_rank"], std::to_string(r["rank"].get<int>()));
    }
  }
  EXPECT_EQ(j["configs"][0]["label"], "torchrun · NCCL_CUMEM_ENABLE=(unset)");
  EXPECT_EQ(j["trials"][1]["repeat"], 1);
  std::filesystem::remove_all(dir);
}

TEST(External, MaskGivesEachRankItsOwnGpuAsRayDoes) {
  const std::string dir = "/tmp/coldstart-ext-" + random_hex(6);
  const int port = 33000 + static_cast<int>(::getpid() % 2000);
  std::string cmd;
  for (int r = 0; r < 2; ++r)
    cmd += torchrun_env(r, 2, "127.0.0.1", port) + "CUDA_VISIBLE_DEVICES=4,5 " + COLDSTART_BIN +
           " worker --dry-run --mask --out " + dir + " & ";
  std::string out;
  ASSERT_EQ(run_shell(cmd + "wait", &out), 0) << out;
  json j = results(dir);
  EXPECT_EQ(j["configs"][0]["label"], "torchrun (masked) · NCCL_CUMEM_ENABLE=(unset)");
  EXPECT_EQ(j["trials"][0]["ranks"][0]["cuda_visible_devices"], "4");
  EXPECT_EQ(j["trials"][0]["ranks"][1]["cuda_visible_devices"], "5");
  EXPECT_EQ(j["trials"][0]["ranks"][1]["device_index"], 0);
  std::filesystem::remove_all(dir);
}

TEST(External, ARankThatNeverJoinsIsAHangNamingIt) {
  const std::string dir = "/tmp/coldstart-ext-" + random_hex(6);
  std::string out;
  int st = run_shell(torchrun_env(0, 2, "127.0.0.1", 35000 + static_cast<int>(::getpid() % 2000)) + COLDSTART_BIN +
                         " worker --dry-run --timeout 2 --out " + dir,
                     &out);
  EXPECT_EQ(st, 1) << out;
  json j = results(dir);
  EXPECT_EQ(j["trials"][0]["status"], "hang");
  EXPECT_NE(j["trials"][0]["message"].get<std::string>().find("rank 1 never connected"), std::string::npos)
      << j["trials"][0];
  std::filesystem::remove_all(dir);
}

// A declared world of a million with one rank: the result holds that rank, and names the rest as one range.
TEST(External, AHugeDeclaredWorldWritesASmallResult) {
  const std::string dir = "/tmp/coldstart-ext-" + random_hex(6);
  std::string out;
  int st = run_shell(torchrun_env(0, 1'000'000, "127.0.0.1", 37000 + static_cast<int>(::getpid() % 2000)) +
                         " LOCAL_WORLD_SIZE=1000000 " + COLDSTART_BIN + " worker --dry-run --timeout 2 --out " + dir,
                     &out);
  EXPECT_EQ(st, 1) << out;
  EXPECT_LT(std::filesystem::file_size(dir + "/results.json"), 200'000u);
  json j = results(dir);
  EXPECT_EQ(j["trials"][0]["ranks"].size(), 1u);
  EXPECT_NE(j["trials"][0]["message"].get<std::string>().find("ranks 1–999999 never connected"), std::string::npos)
      << j["trials"][0]["message"];
  std::filesystem::remove_all(dir);
}

TEST(External, NoLauncherAndNoRankIsOneLine) {
  std::string out;
  EXPECT_EQ(run_shell("env -u RANK -u WORLD_SIZE -u SLURM_PROCID -u OMPI_COMM_WORLD_RANK -u PMI_RANK " +
                          std::string(COLDSTART_BIN) + " worker --dry-run",
                      &out),
            2);
  EXPECT_NE(out.find("no --rank and no launcher"), std::string::npos) << out;
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;
}

TEST(External, OpenMpiStartsRanksThatFindEachOther) {
  std::string where;
  ASSERT_EQ(run_shell("command -v mpirun", &where), 0)
      << "mpirun not found: install Debian's openmpi-bin (scripts/setup.sh does)";
  const std::string dir = "/tmp/coldstart-ext-" + random_hex(6);
  std::string out;
  // Open MPI refuses root unless told; CI runs as root.
  int st = run_shell("OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun --oversubscribe -np 3 " +
                         std::string(COLDSTART_BIN) + " worker --dry-run --out " + dir,
                     &out);
  ASSERT_EQ(st, 0) << out;
  json j = results(dir);
  ASSERT_EQ(j["trials"].size(), 1u);
  EXPECT_EQ(j["trials"][0]["status"], "ok") << out;
  EXPECT_EQ(j["configs"][0]["label"], "openmpi · NCCL_CUMEM_ENABLE=(unset)");
  ASSERT_EQ(j["trials"][0]["ranks"].size(), 3u);
  for (const auto& r : j["trials"][0]["ranks"]) EXPECT_EQ(r["launcher"]["name"], "openmpi");
  std::filesystem::remove_all(dir);
}

// Two "hosts": network namespaces joined by a veth pair, each with its own hostname (UTS namespace). Rank 0 listens on
// its namespace's address; rank 1 reaches it across the link; each rank records its host.
TEST(External, TwoHostsMadeOfNetworkNamespaces) {
  if (::geteuid() != 0) GTEST_SKIP() << "network namespaces need root";
  std::string out;
  const std::string id = random_hex(3), a = "csa" + id, b = "csb" + id;
  auto cleanup = [&] { run_shell("ip netns del " + a + "; ip netns del " + b); };
  ASSERT_EQ(run_shell("ip netns add " + a + " && ip netns add " + b + " && ip link add va" + id + " netns " + a +
                          " type veth peer name vb" + id + " netns " + b + " && ip -n " + a +
                          " addr add 10.231.7.1/24 dev va" + id + " && ip -n " + b + " addr add 10.231.7.2/24 dev vb" +
                          id + " && ip -n " + a + " link set va" + id + " up && ip -n " + b + " link set vb" + id +
                          " up && ip -n " + a + " link set lo up && ip -n " + b + " link set lo up",
                      &out),
            0)
      << out;
  const std::string dir = "/tmp/coldstart-ext-" + random_hex(6);
  auto rank = [&](int r, const std::string& ns, const std::string& host) {
    return "ip netns exec " + ns + " unshare --uts sh -c 'hostname " + host + " && " +
           torchrun_env(r, 2, "10.231.7.1", 29400) + " LOCAL_WORLD_SIZE=1 " + COLDSTART_BIN +
           " worker --dry-run --timeout 20 --out " + dir + "' & ";
  };
  int st = run_shell(rank(0, a, "host-a") + rank(1, b, "host-b") + "wait", &out);
  cleanup();
  ASSERT_EQ(st, 0) << out;
  json j = results(dir);
  ASSERT_EQ(j["trials"][0]["status"], "ok") << out;
  EXPECT_EQ(j["trials"][0]["ranks"][0]["host"], "host-a");
  EXPECT_EQ(j["trials"][0]["ranks"][1]["host"], "host-b");
  // Rank 1's phases were moved onto rank 0's clock through its realtime anchor: they lie within the trial.
  for (const auto& p : j["trials"][0]["ranks"][1]["phases"]) {
    EXPECT_GE(p["start_ms"].get<double>(), 0) << p;
    EXPECT_LT(p["start_ms"].get<double>(), 20'000) << p;
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace coldstart::lab
