// The delay line on its own, with socket pairs for TUN devices (datagrams both, a packet per read): a packet leaves
// after the latency, packets to one node leave at the link's rate behind each other, and what has no destination is
// dropped.
#include "lab/delay_line.h"

#include <arpa/inet.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "util/error.h"

namespace coldstart::lab {
namespace {

// A minimal IPv4 packet of `size` bytes to `dst`.
std::vector<uint8_t> packet_to(const char* dst, size_t size) {
  std::vector<uint8_t> p(size, 0);
  p[0] = 0x45;
  in_addr a{};
  ::inet_pton(AF_INET, dst, &a);
  std::memcpy(p.data() + 16, &a.s_addr, 4);
  return p;
}

struct Pair {
  int ours = -1, lines = -1;
  Pair() {
    int fds[2];
    if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK, 0, fds) == 0) ours = fds[0], lines = fds[1];
  }
  ~Pair() {
    ::close(ours);
    ::close(lines);
  }
};

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// Reads one packet from fd within 2 s; its size, or -1.
ssize_t read_one(int fd) {
  pollfd p{fd, POLLIN, 0};
  if (::poll(&p, 1, 2000) != 1) return -1;
  std::vector<uint8_t> buf(65536);
  return ::read(fd, buf.data(), buf.size());
}

TEST(DelayLine, APacketLeavesAfterTheLatencyAndAtTheRate) {
  Pair a, b;
  ASSERT_GE(a.ours, 0);
  // 1 ms, 8 Mbit/s: a 1000-byte packet is 1 ms on the wire
  DelayLine line(1'000'000, 8'000'000);
  line.add_port(a.lines, "10.0.0.2");
  line.add_port(b.lines, "10.0.0.3");
  line.start();
  const auto t0 = std::chrono::steady_clock::now();
  const auto p = packet_to("10.0.0.3", 1000);
  for (int i = 0; i < 10; ++i) ASSERT_EQ(::write(a.ours, p.data(), p.size()), 1000);
  const auto none = packet_to("10.9.9.9", 100);  // no port has it
  ASSERT_EQ(::write(a.ours, none.data(), none.size()), 100);
  ASSERT_EQ(read_one(b.ours), 1000);
  const double first = ms_since(t0);
  for (int i = 1; i < 10; ++i) ASSERT_EQ(read_one(b.ours), 1000) << i;
  const double last = ms_since(t0);
  EXPECT_GE(first, 2.0);  // the latency and its own time on the wire
  EXPECT_GE(last, 11.0);  // ten packets' time on the wire, then the latency
  EXPECT_LT(last, 1000.0);
  line.stop();
  EXPECT_EQ(line.forwarded(), 10u);
  EXPECT_EQ(line.dropped(), 1u);
}

TEST(DelayLine, WithoutARateOnlyTheLatencyWaits) {
  Pair a, b;
  DelayLine line(5'000'000, 0);
  line.add_port(a.lines, "10.0.0.2");
  line.add_port(b.lines, "10.0.0.3");
  line.start();
  const auto t0 = std::chrono::steady_clock::now();
  const auto p = packet_to("10.0.0.2", 10000);
  for (int i = 0; i < 5; ++i) ASSERT_EQ(::write(b.ours, p.data(), p.size()), 10000);
  for (int i = 0; i < 5; ++i) ASSERT_EQ(read_one(a.ours), 10000) << i;
  const double all = ms_since(t0);
  EXPECT_GE(all, 5.0);
  EXPECT_LT(all, 1000.0);
  EXPECT_THROW(line.add_port(a.lines, "not an address"), RuntimeError);
}

}  // namespace
}  // namespace coldstart::lab
