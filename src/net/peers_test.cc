// doctor net --peers on loopback: ranks as threads of this process, each with torchrun's variables of its own; the
// cells' layers and whys, the JSON round trip and its errors (the text: report/net_text_test.cc).
#include "net/peers.h"
#include "net/test_env.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <thread>

#include <nlohmann/json.hpp>

#include "net/test_samples.h"
#include "report/net_text.h"  // the live runs' matrices, as text
#include "util/clock.h"
#include "util/error.h"

namespace coldstart::net {
namespace {
using nlohmann::json;
using Env = std::map<std::string, std::string>;

using test::env_of;

// A socket bound to 127.0.0.1 on a port below the kernel's ephemeral range (a connect from an ephemeral port can
// then never meet itself), listening with `backlog` or not listening at all (-1).
struct Bound {
  int fd = -1;
  uint16_t port = 0;
  ~Bound() {
    if (fd >= 0) ::close(fd);
  }
};
std::unique_ptr<Bound> bind_low_port(int backlog) {
  static std::mt19937 rng(std::random_device{}());
  for (int i = 0; i < 500; ++i) {
    auto b = std::make_unique<Bound>();
    b->port = static_cast<uint16_t>(20000 + rng() % 12000);
    b->fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(b->port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::bind(b->fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) continue;
    if (backlog >= 0 && ::listen(b->fd, backlog) != 0) continue;
    return b;
  }
  ADD_FAILURE() << "no free port in 20000-32000";
  return nullptr;
}
// A port nothing listens on (what was bound is closed again).
uint16_t closed_port() { return bind_low_port(-1)->port; }

Env torchrun_env(int rank, int world, uint16_t coord_port) {
  return {{"RANK", std::to_string(rank)},
          {"WORLD_SIZE", std::to_string(world)},
          {"LOCAL_RANK", std::to_string(rank)},
          {"LOCAL_WORLD_SIZE", std::to_string(world)},
          {"MASTER_ADDR", "127.0.0.1"},
          {"MASTER_PORT", "29500"},
          {"COLDSTART_COORD_PORT", std::to_string(coord_port)}};
}

struct Outcome {
  std::optional<PeerMatrix> m;
  std::string error;
};

// Runs `world` ranks on loopback, one thread each; `tweak` adjusts a rank's options.
std::vector<Outcome> run_ranks(int world, const std::function<void(int, PeerOptions&)>& tweak = {},
                               const std::vector<int>& only = {}) {
  const uint16_t port = closed_port();
  std::vector<Outcome> out(static_cast<size_t>(world));
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r) {
    if (!only.empty() && std::find(only.begin(), only.end(), r) == only.end()) continue;
    threads.emplace_back([&, r] {
      PeerOptions o;
      o.env = env_of(torchrun_env(r, world, port));
      o.address = "127.0.0.1";
      o.timeout_s = 1;
      o.wait_s = 10;
      if (tweak) tweak(r, o);
      try {
        out[static_cast<size_t>(r)].m = run_peers(o);
      } catch (const std::exception& e) {
        out[static_cast<size_t>(r)].error = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  return out;
}

TEST(PeersLoopback, FourRanksFullMatrix) {
  const int64_t t0 = mono_ns();
  auto out = run_ranks(4);
  const double s = static_cast<double>(mono_ns() - t0) / 1e9;
  for (int r = 0; r < 4; ++r) ASSERT_EQ(out[static_cast<size_t>(r)].error, "") << "rank " << r;
  const PeerMatrix& m = *out[0].m;
  EXPECT_EQ(m.world, 4);
  EXPECT_EQ(m.rank, 0);
  ASSERT_EQ(m.endpoints.size(), 4u);
  ASSERT_EQ(m.cells.size(), 4u);
  for (int r = 0; r < 4; ++r) {
    const PeerEndpoint& e = m.endpoints[static_cast<size_t>(r)];
    EXPECT_EQ(e.rank, r);
    EXPECT_EQ(e.address, "127.0.0.1");
    EXPECT_EQ(e.interface, "lo");
    EXPECT_GT(e.port, 0);
    EXPECT_EQ(e.problem, "");
    ASSERT_EQ(m.cells[static_cast<size_t>(r)].size(), 4u);
    for (int to = 0; to < 4; ++to)
      if (to != r) {
        EXPECT_TRUE(m.cells[static_cast<size_t>(r)][static_cast<size_t>(to)].ok) << r << " -> " << to;
      }
  }
  EXPECT_EQ(m.failing_pairs(), 0);
  EXPECT_LT(s, 3.0);  // healthy: well under a second; generous for a loaded CI machine
  // The others return their own row only.
  const PeerMatrix& m2 = *out[2].m;
  EXPECT_EQ(m2.rank, 2);
  EXPECT_EQ(m2.endpoints.size(), 4u);
  EXPECT_TRUE(m2.cells[0].empty());
  EXPECT_EQ(m2.cells[2].size(), 4u);
  EXPECT_NE(report::render_peers(m2).find("rank 2's row only"), std::string::npos);
  EXPECT_NE(report::render_peers(m).find("0 of 12 pairs failing"), std::string::npos) << report::render_peers(m);
}

TEST(PeersLoopback, ClosedPortIsRefusedAtTransport) {
  const uint16_t closed = closed_port();
  auto out = run_ranks(4, [&](int r, PeerOptions& o) {
    if (r == 3) o.advertise_port = closed;
  });
  for (int r = 0; r < 4; ++r) ASSERT_EQ(out[static_cast<size_t>(r)].error, "") << "rank " << r;
  const PeerMatrix& m = *out[0].m;
  EXPECT_EQ(m.failing_pairs(), 3);
  for (int from = 0; from < 3; ++from) {
    const PeerCell& c = m.cells[static_cast<size_t>(from)][3];
    EXPECT_FALSE(c.ok);
    EXPECT_EQ(c.err, ECONNREFUSED);
    EXPECT_EQ(c.layer, Layer::transport);
    EXPECT_EQ(c.why, "ECONNREFUSED: nothing listening");
    EXPECT_TRUE(m.cells[3][static_cast<size_t>(from)].ok);
  }
  const std::string text = report::render_peers(m);
  EXPECT_NE(text.find("3 of 12 pairs failing"), std::string::npos) << text;
  EXPECT_NE(text.find("  0 -> 3  transport: ECONNREFUSED: nothing listening\n"), std::string::npos) << text;
  EXPECT_NE(text.find(std::to_string(ECONNREFUSED)), std::string::npos) << text;
}

// A listener whose accept queue is full drops new SYNs: the connects to it time out, as through a drop rule. Both
// dropped peers of a rank are waited for at once: the run takes one timeout, not two.
TEST(PeersLoopback, DroppedPairsTimeOutTogether) {
  auto full = bind_low_port(0);
  ASSERT_TRUE(full);
  for (int i = 0; i < 3; ++i) tcp_connect("127.0.0.1", full->port, 0.2);  // fills the queue (one fits with backlog 0)
  ASSERT_TRUE(tcp_connect("127.0.0.1", full->port, 0.3).timed_out) << "the kernel answered a full queue's SYN";
  const int64_t t0 = mono_ns();
  auto out = run_ranks(4, [&](int r, PeerOptions& o) {
    if (r >= 2) o.advertise_port = full->port;
  });
  const double s = static_cast<double>(mono_ns() - t0) / 1e9;
  for (int r = 0; r < 4; ++r) ASSERT_EQ(out[static_cast<size_t>(r)].error, "") << "rank " << r;
  const PeerMatrix& m = *out[0].m;
  EXPECT_EQ(m.failing_pairs(), 6);  // every rank to 2 and 3, but for themselves
  const PeerCell& c = m.cells[0][2];
  EXPECT_EQ(c.err, ETIMEDOUT);
  EXPECT_EQ(c.layer, Layer::forward);
  EXPECT_EQ(c.why, "ETIMEDOUT after 1.0 s: dropped beyond the first hop");
  EXPECT_TRUE(m.cells[0][1].ok);
  EXPECT_LT(s, 1.9);  // one timeout (1 s) and a little; in turn it would be two
  EXPECT_NE(report::render_peers(m).find("TIMEOUT"), std::string::npos);
}

TEST(PeersLive, OneRankUsesNcclsChoice) {
  auto out = run_ranks(1, [](int, PeerOptions& o) { o.address.clear(); });
  ASSERT_EQ(out[0].error, "");
  const PeerEndpoint& e = out[0].m->endpoints[0];
  // NCCL's choice on this machine: an interface and its address, or why there is none.
  EXPECT_TRUE(!e.address.empty() || !e.problem.empty());
  if (!e.address.empty()) {
    EXPECT_GT(e.port, 0) << e.problem;
  }
  EXPECT_EQ(out[0].m->failing_pairs(), 0);
}

TEST(PeersLoopback, GloosChoiceIsRecordedBesideTheProbedOne) {
  // Rank 0's Gloo on lo, where the ranks listen; rank 1's GLOO_SOCKET_IFNAME names no interface.
  auto out = run_ranks(2, [](int r, PeerOptions& o) {
    o.env = [base = o.env, r](const char* k) -> const char* {
      if (std::string(k) == "GLOO_SOCKET_IFNAME") return r == 0 ? "lo" : "nosuch0";
      return base(k);
    };
  });
  ASSERT_EQ(out[0].error, "");
  const PeerMatrix& m = *out[0].m;
  const PeerEndpoint &zero = m.endpoints[0], &one = m.endpoints[1];
  EXPECT_EQ(zero.gloo_interface, "lo");
  EXPECT_EQ(zero.gloo_address, "127.0.0.1");
  EXPECT_FALSE(zero.gloo_differs());
  EXPECT_EQ(one.gloo_interface, "");
  EXPECT_NE(one.gloo_problem.find("no interface named 'nosuch0'"), std::string::npos) << one.gloo_problem;
  EXPECT_FALSE(one.gloo_differs());  // none to hold against the probed one: its problem says why
  EXPECT_EQ(m.failing_pairs(), 0);   // the matrix probes NCCL's (here --peers-address) alone
}

TEST(PeersErrors, NoLauncherNamesTheVariables) {
  PeerOptions o;
  o.env = env_of({});
  try {
    run_peers(o);
    FAIL() << "no InputError";
  } catch (const InputError& e) {
    std::string what = e.what();
    for (const char* v : {"RANK/WORLD_SIZE", "SLURM_PROCID/SLURM_NTASKS", "OMPI_COMM_WORLD_RANK", "PMI_RANK/PMI_SIZE"})
      EXPECT_NE(what.find(v), std::string::npos) << what;
  }
}

TEST(PeersErrors, RankZeroNeverStarted) {
  auto out = run_ranks(2, [](int, PeerOptions& o) { o.wait_s = 0.5; }, {1});
  EXPECT_NE(out[1].error.find("cannot reach rank 0's coordinator"), std::string::npos) << out[1].error;
  EXPECT_NE(out[1].error.find("ECONNREFUSED"), std::string::npos) << out[1].error;
}

TEST(PeersErrors, RankZeroNamesWhoNeverJoined) {
  auto out = run_ranks(3, [](int, PeerOptions& o) { o.wait_s = 0.5; }, {0, 1});
  EXPECT_NE(out[0].error.find("rank 2 never joined"), std::string::npos) << out[0].error;
  EXPECT_NE(out[1].error, "");
}

TEST(PeersErrors, BadPeersAddress) {
  PeerOptions o;
  o.env = env_of(torchrun_env(0, 1, closed_port()));
  o.address = "node7";
  EXPECT_THROW(run_peers(o), InputError);
}

TEST(PeerCells, ErrnoToLayerAndWhy) {
  Connect c;
  c.err = ETIMEDOUT;
  c.timed_out = true;
  c.ms = 1000.4;
  PeerCell t = peer_cell(c);
  EXPECT_FALSE(t.ok);
  EXPECT_EQ(t.layer, Layer::forward);
  EXPECT_EQ(t.why, "ETIMEDOUT after 1.0 s: dropped beyond the first hop");
  c = {};
  c.err = EHOSTUNREACH;
  EXPECT_EQ(peer_cell(c).layer, Layer::next_hop);
  c.err = ENETUNREACH;
  EXPECT_EQ(peer_cell(c).layer, Layer::route);
  c.err = EPERM;
  EXPECT_EQ(peer_cell(c).layer, Layer::context);
  c.err = ECONNREFUSED;
  EXPECT_EQ(peer_cell(c).layer, Layer::transport);
  c = {};
  c.ok = true;
  c.ms = 0.3;
  EXPECT_TRUE(peer_cell(c).ok);
  EXPECT_EQ(peer_cell(c).why, "");
  // Who sent the error decides between the peer's firewall and one on the way (firewalld's reject: EHOSTUNREACH).
  c = {};
  c.err = EHOSTUNREACH;
  c.icmp = IcmpReport{true, false, false, 3, 10, EHOSTUNREACH, "10.0.0.2"};
  t = peer_cell(c, "10.0.0.2");
  EXPECT_EQ(t.layer, Layer::transport);
  EXPECT_NE(t.why.find("the peer's own firewall rejects the port"), std::string::npos) << t.why;
  EXPECT_EQ(peer_cell(c, "10.0.1.2").layer, Layer::forward);
  // SYN retransmissions that never left this host: its own rules.
  c = {};
  c.err = ETIMEDOUT;
  c.timed_out = true;
  c.syn_retries = 1;
  t = peer_cell(c, "10.0.0.2");
  EXPECT_EQ(t.layer, Layer::transport);
  EXPECT_NE(t.why.find("never left this host"), std::string::npos) << t.why;
}

TEST(PeerCells, LoopbackAcrossHostsIsARouteFault) {
  PeerEndpoint a{0, "node1", "eth0", "10.0.0.1", 40000, ""};
  PeerEndpoint b{1, "node2", "lo", "127.0.0.1", 40001, ""};
  auto c = pair_precheck(a, b);
  ASSERT_TRUE(c);
  EXPECT_FALSE(c->ok);
  EXPECT_EQ(c->layer, Layer::route);
  EXPECT_NE(c->why.find("peer advertised a loopback address (127.0.0.1)"), std::string::npos) << c->why;
  EXPECT_EQ(pair_precheck(b, a)->layer, Layer::route);  // and from it: its source is loopback
  b.host = "node1";                                     // the same host: loopback is fine
  EXPECT_FALSE(pair_precheck(a, b));
  PeerEndpoint none{2, "node3", "", "", 0, "NCCL_SOCKET_IFNAME=ib matches no interface"};
  auto n = pair_precheck(a, none);
  ASSERT_TRUE(n);
  EXPECT_EQ(n->layer, Layer::context);
  EXPECT_NE(n->why.find("matches no interface"), std::string::npos);
}

TEST(PeerCells, OneHostEndpointsAreProblemsOnlyAcrossHosts) {
  std::vector<PeerEndpoint> eps = {{0, "node1", "lo", "127.0.0.1", 40000, ""},
                                   {1, "node1", "eth0", "10.0.0.1", 40001, ""}};
  note_cross_host_problems(eps);
  EXPECT_EQ(eps[0].problem, "");  // one host: loopback works
  eps[1].host = "node2";
  note_cross_host_problems(eps);
  EXPECT_NE(eps[0].problem.find("listens on 127.0.0.1 (lo), a loopback address, while the ranks run on 2 hosts"),
            std::string::npos)
      << eps[0].problem;
  EXPECT_NE(eps[0].problem.find("NCCL_SOCKET_IFNAME"), std::string::npos);
  EXPECT_EQ(eps[1].problem, "");
  // NCCL's own caveat (a bridge) counts once the hosts differ, not before.
  eps = {{0, "node1", "docker0", "172.17.0.2", 40000, "", "NCCL falls back to docker0 (172.17.0.2), a bridge"},
         {1, "node1", "eth0", "10.0.0.1", 40001, ""}};
  note_cross_host_problems(eps);
  EXPECT_EQ(eps[0].problem, "");
  EXPECT_NE(report::render_peers({2, 0, eps, {}}).find("  (NCCL falls back to docker0"), std::string::npos);
  eps[1].host = "node2";
  note_cross_host_problems(eps);
  EXPECT_EQ(eps[0].problem, "NCCL falls back to docker0 (172.17.0.2), a bridge");
}

PeerMatrix sample() { return test::sample_peers(); }

TEST(PeerJson, RoundTrip) {
  PeerMatrix m = sample();
  json j = to_json(m);
  EXPECT_EQ(j["failing_pairs"], 2);
  EXPECT_TRUE(j["cells"][1][1].is_null());
  EXPECT_EQ(j["cells"][0][2]["layer"], "forward");
  EXPECT_EQ(j["cells"][0][2]["errno"], "ETIMEDOUT");
  PeerMatrix back = peer_matrix_from_json(json::parse(j.dump()));
  EXPECT_EQ(back.world, 3);
  ASSERT_EQ(back.endpoints.size(), 3u);
  EXPECT_EQ(back.endpoints[2].interface, "ens5");
  EXPECT_EQ(back.endpoints[2].port, 41002);
  EXPECT_EQ(back.endpoints[2].problem, "a note");
  EXPECT_EQ(back.endpoints[2].caveat, "a caveat");
  for (size_t f = 0; f < 3; ++f)
    for (size_t t = 0; t < 3; ++t) {
      if (f == t) continue;
      const PeerCell &a = m.cells[f][t], &b = back.cells[f][t];
      EXPECT_EQ(a.ok, b.ok);
      EXPECT_EQ(a.err, b.err);
      EXPECT_DOUBLE_EQ(a.ms, b.ms);
      EXPECT_EQ(a.layer, b.layer);
      EXPECT_EQ(a.why, b.why);
    }
  EXPECT_EQ(to_json(back), j);
  // A rank's own row only: the other rows stay empty.
  m.rank = 1;
  m.cells[0].clear();
  m.cells[2].clear();
  back = peer_matrix_from_json(to_json(m));
  EXPECT_EQ(back.rank, 1);
  EXPECT_TRUE(back.cells[0].empty());
  EXPECT_EQ(back.failing_pairs(), 1);
}

std::string error_of(const json& j) {
  try {
    peer_matrix_from_json(j);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(PeerJson, ErrorsNameTheField) {
  json j = to_json(sample());
  json bad = j;
  bad["cells"][0][2]["layer"] = "wire";
  EXPECT_NE(error_of(bad).find("cells[0][2].layer: unknown value 'wire'; expected context, platform"),
            std::string::npos)
      << error_of(bad);
  bad = j;
  bad["endpoints"][1].erase("port");
  EXPECT_NE(error_of(bad).find("endpoints[1].port: missing"), std::string::npos) << error_of(bad);
  bad = j;
  bad["cells"][2] = json::array({nullptr, 1});
  EXPECT_NE(error_of(bad).find("cells[2]: 2 cells for a world of 3"), std::string::npos) << error_of(bad);
  bad = j;
  bad["cells"][2][0]["ok"] = "yes";
  EXPECT_NE(error_of(bad).find("cells[2][0].ok: expected true or false"), std::string::npos) << error_of(bad);
  bad = j;
  bad["world"] = 4;
  EXPECT_NE(error_of(bad).find("endpoints: 3 endpoints for a world of 4"), std::string::npos) << error_of(bad);
  EXPECT_EQ(error_of(json::array()), "peer matrix: (top): expected an object, found an array");
  bad = j;
  bad.erase("cells");
  EXPECT_EQ(error_of(bad), "peer matrix: cells: missing");
}

PeerMatrix sample_with_gloo() { return test::sample_peers_with_gloo(); }

TEST(PeerJson, GloosChoiceRoundTripsAndOldFilesLackIt) {
  const PeerMatrix m = sample_with_gloo();
  json j = to_json(m);
  EXPECT_EQ(j["endpoints"][1]["gloo_interface"], "lo");
  EXPECT_EQ(j["endpoints"][1]["gloo_differs"], true);
  EXPECT_EQ(j["endpoints"][0]["gloo_differs"], false);
  EXPECT_EQ(j["endpoints"][2]["gloo_problem"], "no interface named 'ib0'");
  PeerMatrix back = peer_matrix_from_json(json::parse(j.dump()));
  EXPECT_EQ(back.endpoints[1].gloo_address, "127.0.1.1");
  EXPECT_EQ(back.endpoints[1].gloo_problem, "a loopback address");
  EXPECT_TRUE(back.endpoints[1].gloo_differs());
  EXPECT_EQ(to_json(back), j);
  for (auto& e : j["endpoints"])
    for (const char* k : {"gloo_interface", "gloo_address", "gloo_problem", "gloo_differs"}) e.erase(k);
  back = peer_matrix_from_json(j);
  EXPECT_EQ(back.endpoints[1].gloo_interface, "");
  EXPECT_FALSE(back.endpoints[1].gloo_differs());
  EXPECT_EQ(report::render_peers(back), report::render_peers(sample()));  // no Gloo column without Gloo's choice
}

}  // namespace
}  // namespace coldstart::net
