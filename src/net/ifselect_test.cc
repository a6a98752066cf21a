// NCCL's and Gloo's interface choice: a table of interface sets and variable values against what each would pick and
// the problem named.
#include "net/ifselect.h"
#include "net/test_env.h"

#include <map>

#include <gtest/gtest.h>

namespace coldstart::net::ifselect_test {
namespace {

Interface itf(const std::string& name, int index, std::vector<std::string> v4, std::vector<std::string> v6 = {},
              bool up = true) {
  Interface i;
  i.name = name;
  i.index = index;
  i.up = up;
  i.loopback = name == "lo";
  i.ipv4 = std::move(v4);
  i.ipv6 = std::move(v6);
  for (const auto& a : i.ipv4) i.ipv4_prefix.push_back(a.rfind("127.", 0) == 0 ? 8 : 24);
  for (const auto& a : i.ipv6) i.ipv6_prefix.push_back(a == "::1" ? 128 : 64);
  return i;
}

Interface lo() { return itf("lo", 1, {"127.0.0.1"}, {"::1"}); }
Interface eth0() { return itf("eth0", 2, {"10.0.0.2"}, {"fd00::2", "fe80::1"}); }
Interface eth1() { return itf("eth1", 3, {"10.0.1.2"}); }
Interface docker0() { return itf("docker0", 4, {"172.17.0.1"}); }
Interface ib0() { return itf("ib0", 5, {"192.168.100.2"}); }
Interface virbr0() { return itf("virbr0", 6, {"192.168.122.1"}); }

using test::env_of;

struct NcclCase {
  const char* what;
  std::vector<Interface> ifs;
  std::map<std::string, std::string> env;
  std::vector<std::string> want;
  std::string address;
  std::string problem_has;  // "" = no problem
  std::string rule_has = "";
};

TEST(NcclChoice, Table) {
  Interface down = eth1();
  down.up = false;
  Interface no_carrier = eth1();
  no_carrier.no_carrier = true;
  Interface v6only = itf("eth2", 2, {}, {"fd00::5"});
  Interface later_v4 = itf("eth3", 3, {"10.0.3.2"});
  std::vector<NcclCase> cases = {
      {"default: anything but lo and docker",
       {lo(), docker0(), eth0()},
       {},
       {"eth0"},
       "10.0.0.2",
       "",
       "default: not docker*, lo*, virbr*"},
      {"default: ib first", {lo(), eth0(), ib0()}, {}, {"ib0"}, "192.168.100.2", "", "default: ib*"},
      {"default: two interfaces, index order", {lo(), eth0(), eth1()}, {}, {"eth0", "eth1"}, "10.0.0.2", ""},
      {"default: IPv4 addresses come before IPv6 ones", {lo(), v6only, later_v4}, {}, {"eth3", "eth2"}, "10.0.3.2", ""},
      {"default: only docker left", {lo(), docker0()}, {}, {"docker0"}, "172.17.0.1", "a bridge inside this host"},
      {"default: only virbr left after lo", {lo(), virbr0()}, {}, {"lo"}, "127.0.0.1", "loopback"},
      {"default: only lo", {lo()}, {}, {"lo"}, "127.0.0.1", "peers on other hosts cannot reach it"},
      {"default: nothing at all", {}, {}, {}, "", "NCCL finds none"},
      {"down and carrier-less interfaces are skipped", {lo(), down, no_carrier}, {}, {"lo"}, "127.0.0.1", "loopback"},
      {"prefix match",
       {lo(), eth0(), eth1()},
       {{"NCCL_SOCKET_IFNAME", "eth"}},
       {"eth0", "eth1"},
       "10.0.0.2",
       "",
       "prefix match 'eth'"},
      {"a list, each cut at ':'",
       {lo(), eth0(), ib0()},
       {{"NCCL_SOCKET_IFNAME", "ib0:1,eth0"}},
       {"eth0", "ib0"},
       "10.0.0.2",
       "",
       "prefix match 'ib0', 'eth0'"},
      {"a name that matches nothing",
       {lo(), eth0()},
       {{"NCCL_SOCKET_IFNAME", "ens5"}},
       {},
       "",
       "NCCL_SOCKET_IFNAME=ens5 matches no running interface with an address (interfaces here: lo, eth0): NCCL "
       "finds none and fails ('no socket interface found'), naming nothing (NVIDIA/nccl#1837)"},
      {"a name that is down", {lo(), eth0(), down}, {{"NCCL_SOCKET_IFNAME", "eth1"}}, {}, "", "(eth1 is down)"},
      {"exact match",
       {lo(), eth0(), eth1()},
       {{"NCCL_SOCKET_IFNAME", "=eth1"}},
       {"eth1"},
       "10.0.1.2",
       "",
       "exact match 'eth1'"},
      {"exact match of a prefix",
       {lo(), eth0()},
       {{"NCCL_SOCKET_IFNAME", "=eth"}},
       {},
       "",
       "as prefixes they would match eth0"},
      {"exclude docker and lo",
       {lo(), docker0(), eth0()},
       {{"NCCL_SOCKET_IFNAME", "^docker,lo"}},
       {"eth0"},
       "10.0.0.2",
       "",
       "excluding prefixes 'docker', 'lo'"},
      {"excluding docker0 alone lets lo in first",
       {lo(), docker0(), eth0()},
       {{"NCCL_SOCKET_IFNAME", "^docker0"}},
       {"lo", "eth0"},
       "127.0.0.1",
       "NCCL would listen on lo (127.0.0.1), a loopback address that NCCL_SOCKET_IFNAME=^docker0 does not exclude"},
      {"exclude exactly",
       {lo(), docker0(), eth0()},
       {{"NCCL_SOCKET_IFNAME", "^=lo,docker0"}},
       {"eth0"},
       "10.0.0.2",
       "",
       "excluding exactly"},
      {"an empty exclusion matches nothing",
       {lo(), eth0()},
       {{"NCCL_SOCKET_IFNAME", "^,"}},
       {},
       "",
       "matches no running interface"},
      {"one character is ignored",
       {lo(), eth0()},
       {{"NCCL_SOCKET_IFNAME", "e"}},
       {"eth0"},
       "10.0.0.2",
       "",
       "ignored (NCCL reads it only when longer than one character)"},
      {"AF_INET6 forced: the IPv6 address, ::1 skipped",
       {lo(), eth0()},
       {{"NCCL_SOCKET_FAMILY", "AF_INET6"}},
       {"eth0"},
       "fd00::2",
       "",
       "AF_INET6 only"},
      {"AF_INET6 forced, no IPv6 but ::1",
       {lo(), eth1()},
       {{"NCCL_SOCKET_FAMILY", "AF_INET6"}},
       {},
       "",
       "NCCL finds none"},
      {"AF_INET6 forced on a named IPv4-only interface",
       {lo(), eth1()},
       {{"NCCL_SOCKET_FAMILY", "AF_INET6"}, {"NCCL_SOCKET_IFNAME", "eth1"}},
       {},
       "",
       "eth1 has no IPv6 address"},
      {"a family NCCL does not know is ignored",
       {lo(), eth0()},
       {{"NCCL_SOCKET_FAMILY", "ipv6"}},
       {"eth0"},
       "10.0.0.2",
       "",
       "NCCL_SOCKET_FAMILY=ipv6 ignored"},
      {"NCCL_COMM_ID's subnet before the general rule",
       {lo(), eth0(), eth1()},
       {{"NCCL_COMM_ID", "10.0.1.9:5000"}},
       {"eth1"},
       "10.0.1.2",
       "",
       "bootstrap: eth1 (10.0.1.2), in NCCL_COMM_ID's subnet"},
      {"NCCL_COMM_ID in no subnet: the bootstrap fails",
       {lo(), eth0()},
       {{"NCCL_COMM_ID", "192.168.9.9:5000"}},
       {"eth0"},
       "10.0.0.2",
       "No usable listening interface found"},
      {"NCCL_COMM_ID as a host name",
       {lo(), eth0()},
       {{"NCCL_COMM_ID", "master-0:5000"}},
       {"eth0"},
       "10.0.0.2",
       "",
       "resolved at run time"},
      {"NCCL_COMM_ID empty", {lo(), eth0()}, {{"NCCL_COMM_ID", ""}}, {"eth0"}, "10.0.0.2", "Invalid NCCL_COMM_ID"},
      {"NCCL_COMM_ID in IPv6 brackets",
       {lo(), eth0()},
       {{"NCCL_COMM_ID", "[fd00::9]:5000"}},
       {"eth0"},
       "fd00::2",
       "",
       "bootstrap: eth0 (fd00::2)"},
  };
  for (const auto& c : cases) {
    IfChoice got = nccl_choice(c.ifs, env_of(c.env));
    SCOPED_TRACE(c.what);
    EXPECT_EQ(got.tool, "NCCL");
    EXPECT_EQ(got.interfaces, c.want);
    EXPECT_EQ(got.address, c.address);
    if (c.problem_has.empty()) {
      EXPECT_EQ(got.problem, "");
    } else {
      EXPECT_NE(got.problem.find(c.problem_has), std::string::npos) << got.problem;
    }
    if (!c.rule_has.empty()) {
      EXPECT_NE(got.rule.find(c.rule_has), std::string::npos) << got.rule;
    }
    EXPECT_FALSE(got.rule.empty());
    auto v = c.env.find("NCCL_SOCKET_IFNAME");
    EXPECT_EQ(got.variable, v == c.env.end() ? "" : "NCCL_SOCKET_IFNAME=" + v->second);
  }
}

TEST(NcclChoice, NoEnvironmentFunction) {
  IfChoice got = nccl_choice({lo(), eth0()}, GetEnv());
  EXPECT_EQ(got.interfaces, std::vector<std::string>{"eth0"});
}

TEST(NcclChoice, AtMostSixteen) {
  std::vector<Interface> ifs{lo()};
  for (int i = 0; i < 20; ++i)
    ifs.push_back(itf("eth" + std::to_string(i), i + 2, {"10.0." + std::to_string(i) + ".2"}));
  EXPECT_EQ(nccl_choice(ifs, GetEnv()).interfaces.size(), 16u);
}

struct GlooCase {
  const char* what;
  std::vector<Interface> ifs;
  std::string ifname;  // "<unset>" for none
  std::string hostname;
  std::vector<std::pair<std::string, std::string>> hosts;
  std::vector<std::string> want;
  std::string address;
  std::string problem_has;
  std::string rule_has = "";
};

TEST(GlooChoice, Table) {
  Interface down = eth1();
  down.up = false;
  const std::vector<std::pair<std::string, std::string>> debian = {
      {"127.0.0.1", "localhost"}, {"127.0.1.1", "node1.example"}, {"127.0.1.1", "node1"}, {"::1", "ip6-localhost"}};
  const std::vector<std::pair<std::string, std::string>> fixed = {{"127.0.0.1", "localhost"}, {"10.0.0.2", "node1"}};
  std::vector<GlooCase> cases = {
      {"one exact name", {lo(), eth0()}, "eth0", "node1", {}, {"eth0"}, "10.0.0.2", "", "exact names 'eth0'"},
      {"two names, one device each",
       {lo(), eth0(), eth1()},
       "eth1,eth0",
       "node1",
       {},
       {"eth1", "eth0"},
       "10.0.1.2",
       ""},
      {"a trailing comma is dropped", {lo(), eth0()}, "eth0,", "node1", {}, {"eth0"}, "10.0.0.2", ""},
      {"an empty name in the middle",
       {lo(), eth0(), eth1()},
       "eth0,,eth1",
       "node1",
       {},
       {},
       "",
       "holds an empty name: PyTorch fails ('interface or hostname can't be empty')"},
      {"NCCL's ^ syntax",
       {lo(), eth0()},
       "^lo",
       "node1",
       {},
       {},
       "",
       "GLOO_SOCKET_IFNAME=^lo: no interface named '^lo': '^' is NCCL's syntax, Gloo takes exact names; Gloo fails "
       "('Unable to find address for: ^lo')"},
      {"a prefix is not a name",
       {lo(), eth0(), eth1()},
       "eth",
       "node1",
       {},
       {},
       "",
       "Gloo takes exact names, not prefixes (eth0, eth1 exist)"},
      {"a name that matches nothing", {lo(), eth0()}, "ens5", "node1", {}, {}, "", "(interfaces here: lo, eth0)"},
      {"a name without an address",
       {lo(), eth0(), itf("eth9", 9, {})},
       "eth9",
       "node1",
       {},
       {},
       "",
       "eth9 has no address"},
      {"IPv6 when there is no IPv4",
       {lo(), itf("eth2", 2, {}, {"fd00::5"})},
       "eth2",
       "node1",
       {},
       {"eth2"},
       "fd00::5",
       ""},
      {"lo by name", {lo(), eth0()}, "lo", "node1", {}, {"lo"}, "127.0.0.1", "a loopback address"},
      {"a down interface by name", {lo(), eth0(), down}, "eth1", "node1", {}, {"eth1"}, "10.0.1.2", "which is down"},
      {"one character is ignored",
       {lo(), eth0()},
       "x",
       "node1",
       fixed,
       {"eth0"},
       "10.0.0.2",
       "",
       "GLOO_SOCKET_IFNAME=x ignored"},
      {"default: Debian's 127.0.1.1",
       {lo(), eth0()},
       "<unset>",
       "node1",
       debian,
       {"lo"},
       "127.0.1.1",
       "hostname 'node1' is 127.0.1.1 in /etc/hosts, a loopback address: Gloo listens on lo and peers on other hosts "
       "cannot reach it"},
      {"default: the name in another case",
       {lo(), eth0()},
       "<unset>",
       "NODE1",
       debian,
       {"lo"},
       "127.0.1.1",
       "a loopback address"},
      {"default: a fixed address of this host",
       {lo(), eth0()},
       "<unset>",
       "node1",
       fixed,
       {"eth0"},
       "10.0.0.2",
       "",
       "hostname 'node1' is 10.0.0.2"},
      {"default: an address of another host",
       {lo(), eth0()},
       "<unset>",
       "node1",
       {{"10.9.9.9", "node1"}},
       {"lo"},
       "127.0.0.1",
       "not an address of this host: Gloo falls back to 127.0.0.1"},
      {"default: the first bindable address",
       {lo(), eth0()},
       "<unset>",
       "node1",
       {{"10.9.9.9", "node1"}, {"10.0.0.2", "node1"}},
       {"eth0"},
       "10.0.0.2",
       ""},
      {"default: not in /etc/hosts",
       {lo(), eth0()},
       "<unset>",
       "node1",
       {{"127.0.0.1", "localhost"}},
       {},
       "",
       "",
       "resolved by DNS at run time"},
      {"default: no hostname", {lo(), eth0()}, "<unset>", "", {}, {}, "", "", "hostname unknown"},
  };
  for (const auto& c : cases) {
    std::map<std::string, std::string> vars;
    if (c.ifname != "<unset>") vars["GLOO_SOCKET_IFNAME"] = c.ifname;
    HostFacts host;
    host.hostname = c.hostname;
    host.hosts_file = c.hosts;
    IfChoice got = gloo_choice(c.ifs, env_of(vars), host);
    SCOPED_TRACE(c.what);
    EXPECT_EQ(got.tool, "Gloo");
    EXPECT_EQ(got.variable, c.ifname == "<unset>" ? "" : "GLOO_SOCKET_IFNAME=" + c.ifname);
    EXPECT_EQ(got.interfaces, c.want);
    EXPECT_EQ(got.address, c.address);
    if (c.problem_has.empty()) {
      EXPECT_EQ(got.problem, "");
    } else {
      EXPECT_NE(got.problem.find(c.problem_has), std::string::npos) << got.problem;
    }
    if (!c.rule_has.empty()) {
      EXPECT_NE(got.rule.find(c.rule_has), std::string::npos) << got.rule;
    }
  }
}

// The field report's machine: WSL 2 writes "127.0.1.1 <hostname>" into /etc/hosts, so Gloo's default device is on
// loopback, while NCCL takes eth0.
TEST(GlooChoice, WslRecordedHostsFile) {
  HostFacts host = collect_host(Root(std::string(COLDSTART_SOURCE_DIR) + "/tests/data/net/wsl-nat"));
  std::vector<Interface> ifs{lo(), itf("eth0", 2, {"172.29.72.155"})};
  IfChoice gloo = gloo_choice(ifs, GetEnv(), host);
  EXPECT_EQ(gloo.interfaces, std::vector<std::string>{"lo"});
  EXPECT_EQ(gloo.address, "127.0.1.1");
  EXPECT_NE(gloo.problem.find("hostname 'DESKTOP-7K3M2QF' is 127.0.1.1 in /etc/hosts"), std::string::npos)
      << gloo.problem;
  IfChoice nccl = nccl_choice(ifs, GetEnv());
  EXPECT_EQ(nccl.interfaces, std::vector<std::string>{"eth0"});
  EXPECT_EQ(nccl.problem, "");
}

}  // namespace
}  // namespace coldstart::net::ifselect_test
