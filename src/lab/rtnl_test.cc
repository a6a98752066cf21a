// The rtnetlink writer and the namespaces of bench --nodes, without iproute2: what a request carries, and (as root)
// links, addresses and namespaces made and removed for real in a namespace of the test's own.
#include "lab/rtnl.h"

#include <gtest/gtest.h>
#include <linux/pkt_sched.h>
#include <linux/rtnetlink.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "util/random.h"

namespace coldstart::lab {
namespace {

constexpr const char* kPsched = "000003e8 00000040 000f4240 3b9aca00\n";  // what a kernel of today says

TEST(NodesRtnl, AnErrorNamesTheOperationTheErrnoAndTheKernelsWords) {
  RtnlError e("creating bridge csbr1 (RTM_NEWLINK)", EEXIST, "File exists");
  EXPECT_EQ(e.err, EEXIST);
  EXPECT_EQ(std::string(e.what()),
            "creating bridge csbr1 (RTM_NEWLINK): " + std::string(std::strerror(EEXIST)) + " (EEXIST): File exists");
}

// tc's conversion: 1000 ns per us over 64 ns per tick, 15.625 ticks a microsecond.
TEST(NodesRtnl, DelaysAreTicksAsTcWritesThem) {
  EXPECT_EQ(psched_ticks(2'000'000, kPsched), 31250u);  // 2 ms
  EXPECT_EQ(psched_ticks(50'000, kPsched), 781u);       // 50 us (the exact delay goes as TCA_NETEM_LATENCY64)
  EXPECT_EQ(psched_ticks(0, kPsched), 0u);
  EXPECT_EQ(psched_ticks(2'000'000, "garbage"), 31250u);  // unreadable: the kernel's format
  EXPECT_EQ(psched_ticks(10'000'000'000, kPsched), 156'250'000u);
}

// TCA_OPTIONS: the qopt struct, then the exact latency and the rate (a 64-bit one past 2^32 bytes/s).
TEST(NodesRtnl, NetemOptionsCarryTheQoptThenTheLatencyAndRate) {
  Netem n;
  n.limit = 1'000'000;
  n.latency_ns = 2'000'000;
  n.rate_bytes_per_s = 100'000'000'000ull / 8;  // 100gbit
  auto b = netem_options(n, kPsched);
  ASSERT_GE(b.size(), sizeof(tc_netem_qopt));
  tc_netem_qopt q;
  std::memcpy(&q, b.data(), sizeof q);
  EXPECT_EQ(q.limit, 1'000'000u);
  EXPECT_EQ(q.latency, 31250u);
  std::vector<int> types;
  int64_t latency = 0;
  uint32_t rate32 = 0;
  for (size_t at = RTA_ALIGN(sizeof q); at + sizeof(rtattr) <= b.size();) {
    rtattr a;
    std::memcpy(&a, b.data() + at, sizeof a);
    ASSERT_GE(a.rta_len, sizeof a);
    types.push_back(a.rta_type);
    if (a.rta_type == TCA_NETEM_LATENCY64) std::memcpy(&latency, b.data() + at + RTA_LENGTH(0), sizeof latency);
    if (a.rta_type == TCA_NETEM_RATE) std::memcpy(&rate32, b.data() + at + RTA_LENGTH(0), sizeof rate32);
    at += RTA_ALIGN(a.rta_len);
  }
  EXPECT_EQ(types, (std::vector<int>{TCA_NETEM_LATENCY64, TCA_NETEM_RATE64, TCA_NETEM_RATE}));
  EXPECT_EQ(latency, 2'000'000);
  EXPECT_EQ(rate32, ~0u);
  n.rate_bytes_per_s = 1'000'000;
  n.latency_ns = 0;
  b = netem_options(n, kPsched);
  EXPECT_EQ(b.size(), RTA_ALIGN(sizeof q) + RTA_SPACE(sizeof(tc_netem_rate)));
}

// As root: two namespaces of the test's own, a bridge and a veth between them, addresses and links up, read back
// over the same sockets; errors name the operation and the errno; nothing left after.
TEST(NodesRtnl, LinksAddressesAndNamespacesForReal) {
  if (::geteuid() != 0) GTEST_SKIP() << "network namespaces need root";
  const std::string a_name = "cs-rtnl-test-" + random_hex(4) + "-a", b_name = "cs-rtnl-test-" + random_hex(4) + "-b";
  Netns a = create_netns(a_name), b = create_netns(b_name);
  ASSERT_GE(a.fd, 0);
  ASSERT_GE(b.fd, 0);
  if (a.bound) {
    EXPECT_EQ(a.path, "/run/netns/" + a_name);
    auto names = list_netns();
    EXPECT_NE(std::find(names.begin(), names.end(), a_name), names.end());
  }
  {
    Rtnl in_a = Rtnl::in_netns(a.fd, a_name), in_b = Rtnl::in_netns(b.fd, b_name);
    // A new namespace has its loopback only.
    auto links = in_a.links();
    ASSERT_EQ(links.size(), 1u);
    EXPECT_EQ(links[0].second, "lo");
    in_a.set_up("lo", in_a.link_index("lo"));
    in_a.add_bridge("br0");
    const int br = in_a.link_index("br0");
    EXPECT_GT(br, 0);
    EXPECT_EQ(in_a.link_index("nothing0"), 0);
    try {
      in_a.add_bridge("br0");
      ADD_FAILURE() << "a second br0";
    } catch (const RtnlError& e) {
      EXPECT_EQ(e.err, EEXIST);
      EXPECT_NE(std::string(e.what()).find("creating bridge br0 (RTM_NEWLINK): "), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("(EEXIST)"), std::string::npos) << e.what();
    }
    in_a.add_veth("v0", "peer0", b.fd);
    EXPECT_GT(in_a.link_index("v0"), 0);
    EXPECT_EQ(in_a.link_index("peer0"), 0);  // it went to b
    const int peer = in_b.link_index("peer0");
    ASSERT_GT(peer, 0);
    in_a.set_master("v0", in_a.link_index("v0"), br);
    in_a.set_up("v0", in_a.link_index("v0"));
    in_a.set_up("br0", br);
    in_a.add_ipv4_address("br0", br, "10.213.250.1", 24);
    in_b.add_ipv4_address("peer0", peer, "10.213.250.2", 24);
    in_b.set_up("peer0", peer);
    auto addrs = in_b.ipv4_addresses();
    EXPECT_NE(std::find(addrs.begin(), addrs.end(), "10.213.250.2"), addrs.end());
    auto routes = in_b.ipv4_routes();
    EXPECT_NE(std::find(routes.begin(), routes.end(), "10.213.250.0/24"), routes.end());
    // netem: there where the kernel has it, else the error the lab turns into its refusal.
    try {
      Netem n;
      n.latency_ns = 1'000'000;
      in_a.add_netem("v0", in_a.link_index("v0"), n);
    } catch (const RtnlError& e) {
      EXPECT_TRUE(e.err == ENOENT || e.err == EOPNOTSUPP) << e.what();
      EXPECT_NE(std::string(e.what()).find("(RTM_NEWQDISC)"), std::string::npos) << e.what();
    }
    EXPECT_EQ(in_a.delete_link("v0"), 0);
    EXPECT_EQ(in_b.link_index("peer0"), 0);  // the pair goes together
    EXPECT_EQ(in_a.delete_link("v0"), ENODEV);
  }
  ::close(a.fd);
  ::close(b.fd);
  EXPECT_EQ(remove_netns(a_name), a.bound);
  EXPECT_EQ(remove_netns(b_name), b.bound);
  auto names = list_netns();
  EXPECT_EQ(std::find(names.begin(), names.end(), a_name), names.end());
  EXPECT_FALSE(std::filesystem::exists("/run/netns/" + a_name));
}

}  // namespace
}  // namespace coldstart::lab
