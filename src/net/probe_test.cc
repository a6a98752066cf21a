// The address classes the resolve layer judges answers by, at their edges; the error queue on a real ICMP error.
#include "net/probe.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

namespace coldstart::net {
namespace {

TEST(Probe, FakeIpRangeIs198_18Slash15) {
  EXPECT_FALSE(is_fake_ip_address("198.17.255.255"));
  EXPECT_TRUE(is_fake_ip_address("198.18.0.1"));
  EXPECT_TRUE(is_fake_ip_address("198.19.255.255"));
  EXPECT_FALSE(is_fake_ip_address("198.20.0.0"));
  EXPECT_FALSE(is_fake_ip_address("::ffff:198.18.0.1"));  // IPv4 only, as the proxies hand it out
  EXPECT_FALSE(is_fake_ip_address("inet.test"));
}

TEST(Probe, LoopbackAddresses) {
  EXPECT_TRUE(is_loopback_address("127.0.1.1"));
  EXPECT_TRUE(is_loopback_address("::1"));
  EXPECT_TRUE(is_loopback_address("::ffff:127.0.0.1"));
  EXPECT_FALSE(is_loopback_address("128.0.0.1"));
  EXPECT_FALSE(is_loopback_address("localhost"));  // a name, not an address
}

// A datagram to a closed port of 127.0.0.1: the kernel answers ICMP port unreachable from 127.0.0.1, which the error
// queue holds with its sender (no root needed).
TEST(Probe, TheErrorQueueNamesTheIcmpErrorAndItsSender) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  const int closed = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);  // a port bound, read, and let go
  ASSERT_EQ(::bind(closed, reinterpret_cast<sockaddr*>(&a), len), 0);
  ::getsockname(closed, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(closed);
  const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  set_recverr(fd, AF_INET, true);
  ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&a), len), 0);
  ASSERT_EQ(::send(fd, "x", 1, 0), 1);
  pollfd p{fd, 0, 0};  // POLLERR is always reported
  ::poll(&p, 1, 1000);
  const IcmpReport r = read_error_queue(fd);
  ::close(fd);
  ASSERT_TRUE(r.present);
  EXPECT_EQ(r.kind(), IcmpKind::port_unreachable);
  EXPECT_EQ(r.err, ECONNREFUSED);
  EXPECT_EQ(r.from, "127.0.0.1");
  EXPECT_EQ(r.describe(), "ICMP destination unreachable, code 3 (port unreachable) from 127.0.0.1");
}

}  // namespace
}  // namespace coldstart::net
