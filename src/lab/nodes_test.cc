// bench --nodes' network: namespaces on a bridge, built and torn down for real (root), the link's delay measured
// across it, and what a killed run left removed by the next.
#include "lab/nodes.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "util/error.h"
#include "util/fs.h"
#include "util/process.h"
#include "util/random.h"
#include "util/run_for_test.h"

namespace coldstart::lab {
namespace {

std::string netns_list() { return test_cli::run_shell("ip netns list").text; }
std::string links() { return test_cli::run_shell("ip -o link show 2>/dev/null").text; }

// Whether this kernel has netem (sch_netem), which --link needs: tried on the loopback of a namespace of its own.
bool netem_available() {
  const std::string ns = "cs-netem-probe-" + std::to_string(::getpid());
  const int st =
      test_cli::run_shell("ip netns add " + ns + " && ip netns exec " + ns +
                          " tc qdisc add dev lo root netem delay 1ms; s=$?; ip netns del " + ns + "; exit $s")
          .status;
  return st == 0;
}

TEST(Nodes, RanksSplitEvenlyInOrder) {
  EXPECT_EQ(node_of_rank(0, 4, 1), 0);
  EXPECT_EQ(node_of_rank(3, 4, 1), 0);
  EXPECT_EQ(node_of_rank(1, 4, 2), 0);
  EXPECT_EQ(node_of_rank(2, 4, 2), 1);
  EXPECT_EQ(node_of_rank(3, 4, 4), 3);
  EXPECT_EQ(node_of_rank(7, 8, 2), 1);
  EXPECT_EQ(node_hostname(3), "coldstart-node-3");
}

// What NCCL 2.28 refuses: two ranks of one GPU on one node. Nodes of one rank each hold one; two nodes of 8 ranks
// on one GPU hold 4 a node; 2 GPUs of 2 ranks over 2 nodes keep each GPU's ranks together.
TEST(Nodes, RanksSharingAGpuCountOneNodeAtATime) {
  BenchSpec spec;
  spec.devices = {"0"};
  spec.ranks_per_gpu = 8;
  EXPECT_EQ(ranks_sharing_a_gpu(spec, 1), 8);
  EXPECT_EQ(ranks_sharing_a_gpu(spec, 2), 4);
  EXPECT_EQ(ranks_sharing_a_gpu(spec, 8), 1);
  spec.devices = {"0", "1"};
  spec.ranks_per_gpu = 2;
  EXPECT_EQ(ranks_sharing_a_gpu(spec, 2), 2);
  EXPECT_EQ(ranks_sharing_a_gpu(spec, 4), 1);
  spec.ranks_per_gpu = 1;
  EXPECT_EQ(ranks_sharing_a_gpu(spec, 1), 1);
}

// Two nodes with a 2 ms link: each its namespace, address and interface; node 0's TCP connect to node 1 waits for the
// delay twice (the SYN into node 1, the answer into node 0); nothing is left once the lab goes.
TEST(Nodes, TwoNodesOnABridgeWithTheLinksDelayAndNothingLeftAfter) {
  if (::geteuid() != 0) GTEST_SKIP() << "network namespaces need root";
  if (!netem_available()) GTEST_SKIP() << "this kernel has no netem (sch_netem)";
  std::string bridge;
  std::vector<Node> nodes;
  {
    NodeLab lab(2, *Link::parse("2ms/10gbit"), random_hex(4));
    bridge = lab.bridge();
    nodes = lab.nodes();
    ASSERT_EQ(nodes.size(), 2u);
    EXPECT_EQ(nodes[1].hostname, "coldstart-node-1");
    EXPECT_EQ(nodes[0].ifname, kNodeIfname);
    EXPECT_GE(lab.probe_ms(), 4.0) << lab.describe();
    EXPECT_LT(lab.probe_ms(), 1000.0) << lab.describe();
    for (const auto& n : nodes) EXPECT_NE(netns_list().find(n.netns), std::string::npos) << n.netns;
    // The node's address is on its own interface, inside its namespace; the lab reaches it across the bridge.
    auto in_node = test_cli::run_shell("ip -n " + nodes[1].netns + " -4 -o addr show dev " + kNodeIfname);
    EXPECT_NE(in_node.text.find(nodes[1].address + "/24"), std::string::npos) << in_node.text;
    auto qdisc = test_cli::run_shell("tc qdisc show");
    EXPECT_NE(qdisc.text.find("delay 2ms"), std::string::npos) << qdisc.text;
    EXPECT_NE(lab.describe().find("link 2ms/10gbit"), std::string::npos) << lab.describe();
  }
  for (const auto& n : nodes) EXPECT_EQ(netns_list().find(n.netns), std::string::npos) << n.netns;
  EXPECT_EQ(links().find(bridge + ":"), std::string::npos);
}

// No tool is needed (the GPU nodes have no iproute2): with nothing on PATH two nodes are built, reach each other and
// go. A link is built with netem where the kernel has it, else on coldstart's own delay line (TUN devices, no bridge),
// which delays a connect between two nodes by the link's two crossings; either way nothing is left after.
TEST(Nodes, NoToolIsNeededAndAKernelWithoutNetemGetsTheDelayLine) {
  if (::geteuid() != 0) GTEST_SKIP() << "network namespaces need root";
  const bool netem = netem_available();
  const std::string bin = "/tmp/coldstart-nodes-path-" + random_hex(4);
  std::filesystem::create_directories(bin);
  const std::string path = std::getenv("PATH");
  ::setenv("PATH", bin.c_str(), 1);
  std::vector<Node> nodes;
  double probe_ms = 0;
  try {
    NodeLab lab(2, Link{}, random_hex(4));
    nodes = lab.nodes();
    probe_ms = lab.probe_ms();
    EXPECT_FALSE(lab.on_delay_line());
  } catch (const std::exception& e) {
    ADD_FAILURE() << e.what();
  }
  const std::string run = random_hex(4);
  try {
    NodeLab lab(2, *Link::parse("1ms"), run);
    EXPECT_EQ(lab.on_delay_line(), !netem) << lab.describe();
    EXPECT_GE(lab.probe_ms(), 2.0) << lab.describe();
    EXPECT_LT(lab.probe_ms(), 500.0) << lab.describe();
    if (!netem) EXPECT_NE(lab.describe().find("coldstart's delay line"), std::string::npos) << lab.describe();
  } catch (const RuntimeError& e) {
    ADD_FAILURE() << e.what();
  }
  ::setenv("PATH", path.c_str(), 1);
  std::filesystem::remove_all(bin);
  EXPECT_GT(probe_ms, 0);
  ASSERT_EQ(nodes.size(), 2u);
  for (const auto& n : nodes) EXPECT_EQ(netns_list().find(n.netns), std::string::npos) << n.netns;
  EXPECT_EQ(netns_list().find("-" + run + "-node-"), std::string::npos) << netns_list();
  EXPECT_EQ(links().find("csbr" + std::to_string(::getpid()) + ":"), std::string::npos);
  EXPECT_EQ(links().find("csv" + std::to_string(::getpid()) + "-"), std::string::npos);
}

// One node is a namespace too (the lab builds as many as the largest count asks); no probe without a peer.
TEST(Nodes, OneNodeHasNoProbe) {
  if (::geteuid() != 0) GTEST_SKIP() << "network namespaces need root";
  NodeLab lab(1, Link{}, random_hex(4));
  EXPECT_EQ(lab.probe_ms(), 0);
  EXPECT_EQ(lab.nodes().size(), 1u);
}

// Without --link the bridge is as the kernel makes it: the nodes reach each other (the probe and a connect from
// node 2 to node 0); nothing is left once the lab goes, the veths included.
TEST(Nodes, WithoutALinkTheNodesReachEachOtherAndTheLab) {
  if (::geteuid() != 0) GTEST_SKIP() << "network namespaces need root";
  std::vector<Node> nodes;
  std::string bridge;
  {
    NodeLab lab(3, Link{}, random_hex(4));
    nodes = lab.nodes();
    bridge = lab.bridge();
    EXPECT_GT(lab.probe_ms(), 0);
    EXPECT_EQ(test_cli::run_shell("tc qdisc show").text.find("netem"), std::string::npos);
    auto ping = test_cli::run_shell("ip netns exec " + nodes[2].netns + " bash -c 'exec 3<>/dev/tcp/" +
                                    nodes[0].address + "/9' 2>&1; echo done");
    EXPECT_NE(ping.text.find("Connection refused"), std::string::npos) << ping.text;  // an answer: it is reachable
  }
  for (const auto& n : nodes) EXPECT_EQ(netns_list().find(n.netns), std::string::npos) << n.netns;
  EXPECT_EQ(links().find(bridge + ":"), std::string::npos);
  EXPECT_EQ(links().find("csv" + std::to_string(::getpid()) + "-"), std::string::npos);  // the veths too
}

// A run killed before it could tear down (its pid gone) leaves namespaces and a bridge named after it: the next run
// removes them, and leaves a live run's alone.
TEST(Nodes, WhatAKilledRunLeftIsRemovedByTheNext) {
  if (::geteuid() != 0) GTEST_SKIP() << "network namespaces need root";
  pid_t gone = ::fork();
  if (gone == 0) ::_exit(0);
  ::waitpid(gone, nullptr, 0);
  const std::string dead = "coldstart-" + std::to_string(gone) + "-ab12-node-0",
                    live = "coldstart-" + std::to_string(::getpid()) + "-ab12-node-7",
                    dead_bridge = "csbr" + std::to_string(gone);
  ASSERT_EQ(test_cli::run_shell("ip netns add " + dead + " && ip netns add " + live + " && ip link add " + dead_bridge +
                                " type bridge")
                .status,
            0);
  EXPECT_GE(remove_stale_nodes(), 1);
  EXPECT_EQ(netns_list().find(dead), std::string::npos);
  EXPECT_EQ(links().find(dead_bridge + ":"), std::string::npos);
  EXPECT_NE(netns_list().find(live), std::string::npos);  // this process runs: its namespace stays
  test_cli::run_shell("ip netns del " + live);
}

// ---- bench --nodes end to end, with dry-run ranks (no GPU) ----

nlohmann::json results_of(const std::string& dir) {
  return nlohmann::json::parse(std::ifstream(dir + "/results.json"));
}

std::string bench(const std::string& args) {
  return std::string(COLDSTART_BIN) +
         " bench --dry-run --gpus 2 --ranks-per-gpu 2 --modes isolated --env "
         "NCCL_CUMEM_ENABLE= " +
         args;
}

// 4 ranks over 1 and 2 nodes, interleaved in one run: every trial ok; the 2-node configuration's ranks ran on two
// hosts, 2 each (what each rank's own gethostname said), the 1-node one's on the lab's host; nothing is left after.
TEST(NodesBench, RanksRunOnTheirNodesAndTheNamespacesGoAfterTheRun) {
  if (::geteuid() != 0) GTEST_SKIP() << "network namespaces need root";
  const std::string dir = "/tmp/coldstart-nodes-" + random_hex(6);
  auto out = test_cli::run_shell(bench("--nodes 1,2 --trials 2 --out " + dir));
  ASSERT_EQ(out.status, 0) << out.text;
  EXPECT_NE(out.text.find("2 nodes (network namespaces"), std::string::npos) << out.text;
  auto j = results_of(dir);
  ASSERT_EQ(j["configs"].size(), 2u);
  EXPECT_FALSE(j["configs"][0].contains("nodes"));
  EXPECT_EQ(j["configs"][1]["nodes"], 2);
  EXPECT_EQ(j["configs"][1]["key"], "isolated|NCCL_CUMEM_ENABLE unset|nccl=|log=light|trace=off|nodes=2");
  ASSERT_EQ(j["trials"].size(), 4u);
  for (const auto& t : j["trials"]) {
    EXPECT_EQ(t["status"], "ok") << t.dump();
    ASSERT_EQ(t["ranks"].size(), 4u);
    for (const auto& r : t["ranks"]) {
      const int rank = r["rank"];
      const std::string want = t["config_id"] == 1 ? node_hostname(rank / 2) : hostname();
      EXPECT_EQ(r["host"], want) << "rank " << rank << " of trial " << t["index"];
    }
  }
  const std::string run_id = j["context"]["run_id"];
  EXPECT_EQ(netns_list().find("-" + run_id + "-node-"), std::string::npos) << netns_list();
  std::filesystem::remove_all(dir);
}

// --link 2ms: a node's rank waits for the delay when it connects to the coordinator (the lab's answers cross the
// link), a rank of one node does not; with netem where the kernel has it, else on the delay line, which the run's
// description names.
TEST(NodesBench, TheLinksDelayShowsInTheRanksConnect) {
  if (::geteuid() != 0) GTEST_SKIP() << "network namespaces need root";
  const std::string dir = "/tmp/coldstart-nodes-" + random_hex(6);
  auto out = test_cli::run_shell(bench("--nodes 1,2 --link 2ms --trials 1 --out " + dir + " 2>&1"));
  ASSERT_EQ(out.status, 0) << out.text;
  EXPECT_NE(out.text.find(netem_available() ? "link 2ms (netem)" : "link 2ms (coldstart's delay line"),
            std::string::npos)
      << out.text;
  auto j = results_of(dir);
  EXPECT_EQ(j["configs"][1]["link"], "2ms");
  EXPECT_EQ(j["configs"][1]["label"], "isolated · NCCL_CUMEM_ENABLE=(unset) · 2 nodes (link 2ms)");
  for (const auto& t : j["trials"]) {
    EXPECT_EQ(t["status"], "ok") << t.dump();
    for (const auto& r : t["ranks"])
      for (const auto& p : r["phases"])
        if (p["name"] == "connect" && t["config_id"] == 1) EXPECT_GE(p["dur_ms"].get<double>(), 2.0) << r.dump();
  }
  std::filesystem::remove_all(dir);
}

// Ctrl-C in the middle of a run over nodes: the run ends as interrupted runs do (exit 130), and its namespaces and
// bridge go with it.
TEST(NodesBench, AnInterruptedRunLeavesNoNamespaces) {
  if (::geteuid() != 0) GTEST_SKIP() << "network namespaces need root";
  const std::string dir = "/tmp/coldstart-nodes-" + random_hex(6);
  SpawnSpec s;
  s.argv = {"/bin/sh", "-c", "exec " + bench("--nodes 2 --trials 500 --out " + dir)};
  s.env = make_env({}, {});
  s.output_path = "/dev/null";
  pid_t pid = spawn(s);
  // /bin/sh exec'd the lab: its pid names the namespaces. Wait for them and for a trial or two, then Ctrl-C.
  const std::string mine = "coldstart-" + std::to_string(pid) + "-";
  for (int i = 0; i < 300 && netns_list().find(mine) == std::string::npos; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_NE(netns_list().find(mine), std::string::npos) << "no namespaces of the run appeared";
  for (int i = 0; i < 200 && !std::filesystem::exists(dir + "/results.jsonl"); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ::kill(pid, SIGINT);
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 130) << status;
  EXPECT_EQ(netns_list().find(mine), std::string::npos) << netns_list();
  EXPECT_EQ(links().find("csbr" + std::to_string(pid) + ":"), std::string::npos);
  std::filesystem::remove_all(dir);
}

// The refusals, each one line before anything starts: a node count that does not divide the job's ranks, --bind
// (the coordinator listens on the bridge), and --nodes without root.
TEST(NodesBench, RefusalsAreOneLine) {
  if (::geteuid() != 0) GTEST_SKIP() << "--nodes needs root";  // (which is refused first)
  auto uneven = test_cli::run_shell(bench("--nodes 3 --out /tmp/coldstart-nodes-uneven-" + random_hex(6)));
  EXPECT_EQ(uneven.status, 2) << uneven.text;
  EXPECT_NE(uneven.text.find("--nodes 3: the job's 4 ranks (2 GPU(s), 2 rank(s) each) do not split evenly over 3 "
                             "nodes"),
            std::string::npos)
      << uneven.text;
  EXPECT_EQ(std::count(uneven.text.begin(), uneven.text.end(), '\n'), 1) << uneven.text;
  auto bind = test_cli::run_shell(bench("--nodes 2 --bind 0.0.0.0 --out /tmp/coldstart-nodes-bind-" + random_hex(6)));
  EXPECT_EQ(bind.status, 2) << bind.text;
  EXPECT_NE(bind.text.find("--nodes 2 with --bind or --advertise: the coordinator listens on the nodes' bridge"),
            std::string::npos)
      << bind.text;
  if (test_cli::run_shell("command -v setpriv").status != 0) GTEST_SKIP() << "setpriv (util-linux) not found";
  auto user = test_cli::run_shell("cd /tmp && setpriv --reuid=65534 --regid=65534 --clear-groups " +
                                  bench("--nodes 1,2 --out /tmp/coldstart-nodes-user-" + random_hex(6)));
  EXPECT_EQ(user.status, 2) << user.text;
  EXPECT_NE(user.text.find("--nodes 1,2: each node is a network namespace"), std::string::npos) << user.text;
  EXPECT_NE(user.text.find("root"), std::string::npos) << user.text;
  EXPECT_EQ(std::count(user.text.begin(), user.text.end(), '\n'), 1) << user.text;
}

}  // namespace
}  // namespace coldstart::lab
