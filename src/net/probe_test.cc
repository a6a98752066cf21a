// The address classes the resolve layer judges answers by, at their edges.
#include "net/probe.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace coldstart::net
