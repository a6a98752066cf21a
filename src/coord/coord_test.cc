#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <functional>
#include <thread>

#include "coord/address.h"
#include "coord/client.h"
#include "coord/server.h"
#include "coord/wire.h"
#include "util/clock.h"
#include "util/error.h"

namespace coldstart::coord {
namespace {
using nlohmann::json;

const std::string kToken = "0123456789abcdef0123456789abcdef";

ServerOptions opts(int read_timeout_ms = 10'000) {
  ServerOptions o;
  o.token = kToken;
  o.hello_timeout_ms = read_timeout_ms;
  o.read_timeout_ms = read_timeout_ms;
  return o;
}

// Pumps the server until pred holds; false on timeout.
bool pump_until(Server& s, const std::function<bool()>& pred, int timeout_ms = 5000) {
  int64_t deadline = mono_ns() + int64_t{timeout_ms} * 1'000'000;
  while (!pred()) {
    if (mono_ns() > deadline) return false;
    s.poll(5);
  }
  return true;
}

int raw_connect(uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  return fd;
}

void raw_send(int fd, const std::string& bytes) {
  ASSERT_EQ(::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL), static_cast<ssize_t>(bytes.size()));
}

bool refused_with(const Server& s, const std::string& needle) {
  for (const auto& r : s.refusals())
    if (r.find(needle) != std::string::npos) return true;
  return false;
}

// Runs fn in a thread while the server is pumped; returns the error text fn threw, or "".
std::string run_client(Server& s, const std::function<void()>& fn) {
  std::string err;
  std::atomic<bool> done{false};
  std::thread t([&] {
    try {
      fn();
    } catch (const std::exception& e) {
      err = e.what();
    }
    done = true;
  });
  pump_until(s, [&] { return done.load(); });
  t.join();
  return err;
}
}  // namespace

TEST(Wire, FramesSplitAcrossReadsAreReassembled) {
  std::string a = encode_frame({{"t", "phase"}, {"name", "comm_init"}});
  std::string b = encode_frame({{"t", "result"}});
  std::string all = a + b;
  FrameReader r;
  std::string payload, err;
  int frames = 0;
  for (char c : all) {
    r.feed(&c, 1);
    while (r.next(&payload, &err) == FrameReader::Status::frame) ++frames;
  }
  EXPECT_EQ(frames, 2);
  EXPECT_FALSE(r.has_partial());
}

TEST(Wire, OversizedAndEmptyFramesAreErrors) {
  FrameReader r;
  std::string header("\x00\x00\x20\x00", 4);  // 2 MiB
  r.feed(header.data(), header.size());
  std::string payload, err;
  EXPECT_EQ(r.next(&payload, &err), FrameReader::Status::error);
  FrameReader z;
  std::string zero(4, '\0');
  z.feed(zero.data(), zero.size());
  EXPECT_EQ(z.next(&payload, &err), FrameReader::Status::error);
  json msg;
  EXPECT_FALSE(parse_message("{not json", &msg, &err));
  EXPECT_FALSE(parse_message("[1,2]", &msg, &err));
  EXPECT_FALSE(parse_message("{\"t\":3}", &msg, &err));
}

TEST(Coordinator, ManyClientsShareTheIdPassBarriersAndReport) {
  Server s(opts());
  const int n = 64;
  s.begin_trial(7, n);
  std::vector<std::thread> threads;
  std::atomic<int> failures{0}, right_id{0};
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      try {
        Client c;
        c.connect("127.0.0.1", s.port(), {kToken, 7, r, n}, 5000);
        if (r == 0) c.put("uid", "cafe");
        if (c.get("uid", 5000) == "cafe") ++right_id;
        c.send({{"t", "phase"}, {"name", "comm_init"}, {"state", "begin"}});
        c.barrier("init", 5000);
        c.barrier("first", 5000);
        c.send({{"t", "result"}, {"result", {{"rank", r}}}});
      } catch (const std::exception&) {
        ++failures;
      }
    });
  EXPECT_TRUE(pump_until(s, [&] { return s.all_done(); }));
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures, 0);
  EXPECT_EQ(right_id, n);
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(s.rank(r).result["rank"], r);
    EXPECT_EQ(s.rank(r).phase, "comm_init");
  }
  EXPECT_TRUE(s.refusals().empty());
}

TEST(Coordinator, WrongTokenIsRefused) {
  Server s(opts());
  s.begin_trial(1, 2);
  std::string err = run_client(s, [&] {
    Client c;
    c.connect("127.0.0.1", s.port(), {"not-the-token", 1, 0, 2}, 2000);
  });
  EXPECT_NE(err.find("wrong token"), std::string::npos) << err;
  EXPECT_FALSE(s.rank(0).seen);
}

TEST(Coordinator, OtherVersionsStaleTrialsBadRanksAndDuplicatesAreRefused) {
  Server s(opts());
  s.begin_trial(5, 2);
  auto hello = [&](json h) {
    return run_client(s, [&, h] {
      int fd = raw_connect(s.port());
      raw_send(fd, encode_frame(h));
      char buf[4096];
      ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      ::close(fd);
      FrameReader r;
      if (n > 0) r.feed(buf, static_cast<size_t>(n));
      std::string payload, e;
      if (r.next(&payload, &e) != FrameReader::Status::frame) throw RuntimeError("no reply");
      json m = json::parse(payload);
      if (m["t"] == "error") throw RuntimeError(m["message"].get<std::string>());
    });
  };
  json base = {{"t", "hello"}, {"v", kProtocolVersion}, {"token", kToken}, {"trial", 5}, {"rank", 0}, {"nranks", 2}};
  json v2 = base;
  v2["v"] = 99;
  EXPECT_NE(hello(v2).find("protocol version 99"), std::string::npos);
  json stale = base;
  stale["trial"] = 4;
  EXPECT_NE(hello(stale).find("stale"), std::string::npos);
  json range = base;
  range["rank"] = 2;
  EXPECT_NE(hello(range).find("out of range"), std::string::npos);
  json nranks = base;
  nranks["nranks"] = 3;
  EXPECT_NE(hello(nranks).find("nranks"), std::string::npos);
  EXPECT_EQ(hello(base), "");  // accepted (then the connection closes)
  EXPECT_NE(hello(base).find("already joined"), std::string::npos);
  json first = {{"t", "barrier"}, {"name", "x"}};
  EXPECT_NE(hello(first).find("first message must be hello"), std::string::npos);
}

TEST(Coordinator, OversizedGarbageAndUnknownMessagesCloseTheConnection) {
  Server s(opts());
  s.begin_trial(1, 1);
  int big = raw_connect(s.port());
  raw_send(big, std::string("\xff\xff\xff\x7f", 4));
  EXPECT_TRUE(pump_until(s, [&] { return refused_with(s, "frame of"); }));
  int garbage = raw_connect(s.port());
  std::string junk = "hello?";
  std::string frame = std::string("\x06\x00\x00\x00", 4) + junk;
  raw_send(garbage, frame);
  EXPECT_TRUE(pump_until(s, [&] { return refused_with(s, "not JSON"); }));
  // The refused client gets one error frame, then end of stream.
  char buf[4096];
  ssize_t n = ::recv(big, buf, sizeof buf, 0);
  EXPECT_GT(n, 0);
  EXPECT_EQ(::recv(big, buf, sizeof buf, 0), 0);
  ::close(big);
  ::close(garbage);
}

TEST(Coordinator, TruncatedMessagesAndSilentConnectionsTimeOut) {
  Server s(opts(/*read_timeout_ms=*/200));
  s.begin_trial(1, 1);
  int silent = raw_connect(s.port());
  EXPECT_TRUE(pump_until(
      s, [&] { return refused_with(s, "no hello"); }, 3000));
  int partial = raw_connect(s.port());
  raw_send(partial,
           encode_frame(
               {{"t", "hello"}, {"v", kProtocolVersion}, {"token", kToken}, {"trial", 1}, {"rank", 0}, {"nranks", 1}}));
  raw_send(partial, std::string("\x64\x00\x00\x00{\"t\":", 9));  // claims 100 bytes, sends 5
  EXPECT_TRUE(pump_until(
      s, [&] { return refused_with(s, "not finished"); }, 3000));
  ::close(silent);
  ::close(partial);
}

TEST(Coordinator, AClientThatDisappearsIsMarkedAndTheServerGoesOn) {
  Server s(opts());
  s.begin_trial(3, 2);
  std::string err = run_client(s, [&] {
    Client c;
    c.connect("127.0.0.1", s.port(), {kToken, 3, 1, 2}, 2000);
    c.send({{"t", "phase"}, {"name", "comm_init"}, {"state", "begin"}});
    // leaves without a result: the destructor closes the socket
  });
  EXPECT_EQ(err, "");
  EXPECT_TRUE(pump_until(s, [&] { return !s.rank(1).connected; }));
  EXPECT_TRUE(s.rank(1).seen);
  EXPECT_FALSE(s.rank(1).done);
  EXPECT_EQ(s.rank(1).phase, "comm_init");
  EXPECT_TRUE(s.rank(1).in_phase);
  EXPECT_NE(s.rank(1).error.find("closed before the result"), std::string::npos);
  // The other rank can still join and finish.
  err = run_client(s, [&] {
    Client c;
    c.connect("127.0.0.1", s.port(), {kToken, 3, 0, 2}, 2000);
    c.send({{"t", "result"}, {"result", json::object()}});
  });
  EXPECT_EQ(err, "");
  EXPECT_TRUE(pump_until(s, [&] { return s.rank(0).done; }));
}

TEST(Coordinator, BindRejectsNonAddresses) {
  ServerOptions o = opts();
  o.bind_address = "localhost-ish";
  EXPECT_THROW(Server{o}, InputError);
}

TEST(Coordinator, ListensOnLoopbackByDefault) {
  Server s(opts());
  // A connection from loopback works; the listening address is 127.0.0.1, so other interfaces cannot reach it.
  int fd = raw_connect(s.port());
  sockaddr_in local{};
  socklen_t len = sizeof local;
  getpeername(fd, reinterpret_cast<sockaddr*>(&local), &len);
  EXPECT_EQ(ntohl(local.sin_addr.s_addr), INADDR_LOOPBACK);
  ::close(fd);
}

TEST(Net, HostPortBothWays) {
  EXPECT_EQ(host_port("10.0.0.5", 29500), "10.0.0.5:29500");
  EXPECT_EQ(host_port("::1", 29500), "[::1]:29500");
  EXPECT_EQ(parse_host_port("[::1]:29500", "--coord"), (std::pair<std::string, uint16_t>{"::1", 29500}));
  EXPECT_EQ(parse_host_port("node-3:7", "--coord"), (std::pair<std::string, uint16_t>{"node-3", 7}));
  for (const char* bad : {"node-3", ":80", "h:0", "h:65536", "h:x"})
    EXPECT_THROW(parse_host_port(bad, "--coord"), InputError) << bad;
}

TEST(Net, RanksAreToldAnAddressTheyCanReach) {
  EXPECT_EQ(advertised_address("127.0.0.2", "", ""), "127.0.0.2");
  EXPECT_EQ(advertised_address("0.0.0.0", "", ""), "127.0.0.1");
  EXPECT_EQ(advertised_address("::", "", ""), "::1");
  EXPECT_EQ(advertised_address("0.0.0.0", "10.1.2.3", ""), "10.1.2.3");
  // Toward a host: the source address the kernel would use, here loopback's.
  EXPECT_EQ(advertised_address("0.0.0.0", "", "127.0.0.1"), "127.0.0.1");
}

TEST(Net, AServerOnIpv6LoopbackIsReached) {
  Server server({"::1", 0, "tok"});
  server.begin_trial(0, 1);
  std::thread t([&] {
    Client c;
    c.connect("::1", server.port(), {"tok", 0, 0, 1}, 5000);
  });
  for (int i = 0; i < 100 && !server.rank(0).seen; ++i) server.poll(20);
  t.join();
  EXPECT_TRUE(server.rank(0).seen);
}

// Memory grows with the ranks that joined, not with the world a trial declares.
TEST(CoordinatorLimits, AHugeDeclaredWorldHoldsSlotsForTheRanksThatJoinedOnly) {
  Server s(opts());
  s.begin_trial(0, 1'000'000);
  std::string err = run_client(s, [&] {
    Client c;
    c.connect("127.0.0.1", s.port(), {kToken, 0, 7, 1'000'000}, 5000);
  });
  EXPECT_EQ(err, "");
  EXPECT_EQ(s.joined().size(), 1u);
  EXPECT_TRUE(s.rank(7).seen);
  EXPECT_FALSE(s.rank(999'999).seen);
  EXPECT_FALSE(s.all_done());
}

// A flood of connections that never say hello, or send a huge first frame, is refused and counted; the refusals
// kept are bounded; a real rank still joins.
TEST(CoordinatorLimits, FloodsAreRefusedCountedAndBounded) {
  // Both ends of ~1,100 connections live in this process: room for them where the soft limit is 1024.
  rlimit lim{};
  ::getrlimit(RLIMIT_NOFILE, &lim);
  if (lim.rlim_max < 1200) GTEST_SKIP() << "needs 1,200 file descriptors; the hard limit is " << lim.rlim_max;
  if (lim.rlim_cur < 4096) {
    lim.rlim_cur = std::min<rlim_t>(4096, lim.rlim_max);
    ::setrlimit(RLIMIT_NOFILE, &lim);
  }
  Server s(opts());
  s.begin_trial(0, 1);
  int big = raw_connect(s.port());
  std::string header("\xff\xff\x0f\x00", 4);  // a frame of 1 MiB - 1 announced
  raw_send(big, header + std::string(Server::kMaxHelloBytes + 1024, 'x'));
  EXPECT_TRUE(pump_until(s, [&] { return refused_with(s, "bytes before a hello"); }));
  ::close(big);
  std::vector<int> idle;
  for (size_t i = 0; i < Server::kMaxPending + 40; ++i) idle.push_back(raw_connect(s.port()));
  EXPECT_TRUE(pump_until(s, [&] { return s.refusal_count() >= 40; }));
  for (int fd : idle) ::close(fd);
  pump_until(
      s, [] { return false; }, 200);  // the server sees them close
  const uint64_t before = s.refusal_count();
  for (int i = 0; i < 100; ++i) {
    int fd = raw_connect(s.port());
    raw_send(fd, encode_frame({{"t", "hello"}, {"v", kProtocolVersion}, {"token", "wrong"}}));
    pump_until(
        s, [] { return false; }, 2);
    ::close(fd);
  }
  EXPECT_TRUE(pump_until(s, [&] { return s.refusal_count() >= before + 100; }));
  EXPECT_EQ(s.refusals().size(), Server::kKeptRefusals);
  std::string err = run_client(s, [&] {
    Client c;
    c.connect("127.0.0.1", s.port(), {kToken, 0, 0, 1}, 5000);
  });
  EXPECT_EQ(err, "");
  EXPECT_TRUE(s.rank(0).seen);
}

// Out of file descriptors, the server rests its listening socket instead of spinning on it.
TEST(CoordinatorLimits, OutOfDescriptorsItRestsInsteadOfSpinning) {
  int ports[2];
  ASSERT_EQ(::pipe(ports), 0);
  pid_t child = ::fork();
  if (child == 0) {
    rlimit few{24, 24};
    ::setrlimit(RLIMIT_NOFILE, &few);
    Server s(opts());
    s.begin_trial(0, 1);
    uint16_t port = s.port();
    ssize_t w = ::write(ports[1], &port, sizeof port);
    (void)w;
    int64_t until = mono_ns() + 2'000'000'000;
    while (mono_ns() < until) s.poll(20);
    ::_exit(s.refusal_count() > 0 ? 0 : 3);
  }
  uint16_t port = 0;
  ASSERT_EQ(::read(ports[0], &port, sizeof port), static_cast<ssize_t>(sizeof port));
  std::vector<int> fds;
  for (int i = 0; i < 64; ++i) fds.push_back(raw_connect(port));  // the backlog holds what it cannot accept
  auto children_cpu = [] {
    rusage ru{};
    ::getrusage(RUSAGE_CHILDREN, &ru);
    return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
  };
  const double before = children_cpu();  // what earlier children used
  int status = 0;
  ::waitpid(child, &status, 0);
  const double cpu = children_cpu() - before;
  for (int fd : fds) ::close(fd);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "no refusal was counted";
  EXPECT_LT(cpu, 0.5) << "the server spun at its descriptor limit";
}

}  // namespace coldstart::coord
