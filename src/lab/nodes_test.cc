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

namespace coldstart {
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

// A tool that is missing (here tc, for --link) is named with the command and what to install, and what was built
// before it (the bridge, the namespaces) is torn down.
TEST(Nodes, AMissingToolIsNamedAndWhatWasBuiltIsTornDown) {
  if (::geteuid() != 0) GTEST_SKIP() << "network namespaces need root";
  const std::string bin = "/tmp/coldstart-nodes-path-" + random_hex(4);
  std::filesystem::create_directories(bin);
  auto ip = find_on_path("ip");
  ASSERT_TRUE(ip.has_value());
  std::filesystem::create_symlink(*ip, bin + "/ip");
  const std::string path = std::getenv("PATH");
  ::setenv("PATH", bin.c_str(), 1);
  const std::string run = random_hex(4);
  try {
    NodeLab lab(2, *Link::parse("1ms"), run);
    ADD_FAILURE() << "built without tc";
  } catch (const RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find("`tc qdisc add dev csv"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("(not found); tc is iproute2's"), std::string::npos) << e.what();
  }
  ::setenv("PATH", path.c_str(), 1);
  std::filesystem::remove_all(bin);
  EXPECT_EQ(netns_list().find("-" + run + "-node-"), std::string::npos) << netns_list();
  EXPECT_EQ(links().find("csbr" + std::to_string(::getpid()) + ":"), std::string::npos);
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

}  // namespace
}  // namespace coldstart
