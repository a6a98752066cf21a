// Coordinator throughput: N client connections from this one process connect, say hello, receive the unique id and
// pass one barrier. The server runs on its own thread, as it does in the lab. Target: 1,024 clients in <= 250 ms on a
// 2-core machine.
#include <arpa/inet.h>
#include <benchmark/benchmark.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "coord/server.h"
#include "coord/wire.h"
#include "util/random.h"

namespace {
using coldstart::coord::FrameReader;
using nlohmann::json;

void raise_fd_limit() {
  rlimit r{};
  getrlimit(RLIMIT_NOFILE, &r);
  r.rlim_cur = r.rlim_max;
  setrlimit(RLIMIT_NOFILE, &r);
}

// Drives n non-blocking clients through hello -> get uid -> barrier with one epoll loop.
void run_clients(int n, uint16_t port, const std::string& token) {
  struct C {
    int fd;
    int stage = 0;  // 0 wait welcome, 1 wait value, 2 wait barrier_ok, 3 done
    FrameReader reader;
  };
  std::vector<C> cs(static_cast<size_t>(n));
  int ep = epoll_create1(0);
  for (int r = 0; r < n; ++r) {
    C& c = cs[static_cast<size_t>(r)];
    c.fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(c.fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) throw std::runtime_error("connect");
    int one = 1;
    setsockopt(c.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    std::string hello = coldstart::coord::encode_frame({{"t", "hello"},
                                                        {"v", coldstart::coord::kProtocolVersion},
                                                        {"token", token},
                                                        {"trial", 1},
                                                        {"rank", r},
                                                        {"nranks", n}});
    std::string rest =
        r == 0 ? coldstart::coord::encode_frame({{"t", "put"}, {"key", "uid"}, {"value", std::string(256, 'a')}}) : "";
    rest += coldstart::coord::encode_frame({{"t", "get"}, {"key", "uid"}});
    rest += coldstart::coord::encode_frame({{"t", "barrier"}, {"name", "init"}});
    std::string all = hello + rest;
    if (::send(c.fd, all.data(), all.size(), 0) != static_cast<ssize_t>(all.size())) throw std::runtime_error("send");
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u32 = static_cast<uint32_t>(r);
    epoll_ctl(ep, EPOLL_CTL_ADD, c.fd, &ev);
  }
  int done = 0;
  epoll_event evs[256];
  while (done < n) {
    int k = epoll_wait(ep, evs, 256, 5000);
    if (k <= 0) throw std::runtime_error("clients stalled");
    for (int i = 0; i < k; ++i) {
      C& c = cs[evs[i].data.u32];
      char buf[4096];
      ssize_t m = ::recv(c.fd, buf, sizeof buf, 0);
      if (m <= 0) throw std::runtime_error("server closed a client");
      c.reader.feed(buf, static_cast<size_t>(m));
      std::string payload, err;
      while (c.reader.next(&payload, &err) == FrameReader::Status::frame)
        if (++c.stage == 3) ++done;
    }
  }
  for (auto& c : cs) ::close(c.fd);
  ::close(ep);
}

void BM_ConnectUidBarrier(benchmark::State& state) {
  raise_fd_limit();
  const int n = static_cast<int>(state.range(0));
  for (auto _ : state) {
    state.PauseTiming();
    std::string token = coldstart::random_hex(16);
    coldstart::coord::Server server({"127.0.0.1", 0, token});
    server.begin_trial(1, n);
    std::atomic<bool> stop{false};
    state.ResumeTiming();
    std::thread serve([&] {
      while (!stop) server.poll(1);
    });
    run_clients(n, server.port(), token);
    stop = true;
    serve.join();
  }
  state.counters["clients"] = n;
}
BENCHMARK(BM_ConnectUidBarrier)->Arg(8)->Arg(128)->Arg(1024)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
