// The one NETLINK_ROUTE socket against the running kernel, without root: a dump of the links here, an acknowledgement
// left behind and skipped by the next request, the kernel's refusal with its errno and its words, and a request it
// never answers.
#include "util/netlink.h"

#include <gtest/gtest.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "util/random.h"

namespace coldstart {
namespace {

// An RTM_GETLINK request: a dump of every link, or (with `name`) the one of that name.
class LinkRequest {
 public:
  explicit LinkRequest(uint16_t flags, const std::string& name = "") {
    h()->nlmsg_len = NLMSG_LENGTH(sizeof(ifinfomsg));
    h()->nlmsg_type = RTM_GETLINK;
    h()->nlmsg_flags = flags;
    if (name.empty()) return;
    auto* a = reinterpret_cast<rtattr*>(bytes_ + NLMSG_ALIGN(h()->nlmsg_len));
    a->rta_type = IFLA_IFNAME;
    a->rta_len = static_cast<unsigned short>(RTA_LENGTH(name.size() + 1));
    std::memcpy(RTA_DATA(a), name.c_str(), name.size() + 1);
    h()->nlmsg_len = NLMSG_ALIGN(h()->nlmsg_len) + RTA_ALIGN(a->rta_len);
  }
  nlmsghdr* h() { return reinterpret_cast<nlmsghdr*>(bytes_); }

 private:
  alignas(nlmsghdr) char bytes_[NLMSG_SPACE(sizeof(ifinfomsg)) + RTA_SPACE(32)] = {};  // a name past IFNAMSIZ too
};

std::vector<std::string> link_names(NetlinkSocket& s, NetlinkResult& result) {
  LinkRequest req(NLM_F_REQUEST | NLM_F_DUMP);
  std::vector<std::string> names;
  result = s.exchange(req.h(), [&](const nlmsghdr* m) {
    if (m->nlmsg_type != RTM_NEWLINK) return true;
    int len = static_cast<int>(IFLA_PAYLOAD(m));
    for (auto* a = IFLA_RTA(static_cast<const ifinfomsg*>(NLMSG_DATA(m))); RTA_OK(a, len); a = RTA_NEXT(a, len))
      if (a->rta_type == IFLA_IFNAME)
        names.emplace_back(static_cast<const char*>(RTA_DATA(a)),
                           strnlen(static_cast<const char*>(RTA_DATA(a)), RTA_PAYLOAD(a)));
    return true;
  });
  return names;
}

TEST(NetlinkSocket, DumpsTheLinksHere) {
  NetlinkSocket s(1);
  ASSERT_EQ(s.error(), 0);
  NetlinkResult r;
  const auto names = link_names(s, r);
  ASSERT_TRUE(r.ok()) << std::strerror(r.err);
  EXPECT_EQ(r.end, NetlinkEnd::answered);
  EXPECT_NE(std::find(names.begin(), names.end(), "lo"), names.end());
}

// A request given up at its answer leaves its acknowledgement queued: the next request skips it by its sequence
// number, and ends at its own.
TEST(NetlinkSocket, AnEarlierRequestsAnswersAreSkipped) {
  NetlinkSocket s(1);
  ASSERT_EQ(s.error(), 0);
  for (int given_up : {1, 0}) {
    LinkRequest lo(NLM_F_REQUEST | NLM_F_ACK, "lo");
    int answers = 0;
    const NetlinkResult r = s.exchange(lo.h(), [&](const nlmsghdr* m) {
      if (m->nlmsg_type == RTM_NEWLINK) ++answers;
      return !given_up;
    });
    ASSERT_TRUE(r.ok()) << std::strerror(r.err);
    EXPECT_EQ(answers, 1);
  }
}

TEST(NetlinkSocket, TheKernelsRefusalIsItsErrno) {
  NetlinkSocket s(1);
  ASSERT_EQ(s.error(), 0);
  LinkRequest req(NLM_F_REQUEST | NLM_F_ACK, "cs-none-" + random_hex(3));
  const NetlinkResult r = s.exchange(req.h(), [](const nlmsghdr*) { return true; });
  EXPECT_EQ(r.end, NetlinkEnd::refused);
  EXPECT_EQ(r.err, ENODEV);
}

// A name longer than an interface's fails the kernel's attribute policy: the errno, and its words where it has them.
TEST(NetlinkSocket, TheKernelsWordsComeWithItsRefusal) {
  NetlinkSocket s(1);
  ASSERT_EQ(s.error(), 0);
  LinkRequest req(NLM_F_REQUEST | NLM_F_ACK, std::string(IFNAMSIZ + 4, 'x'));
  const NetlinkResult r = s.exchange(req.h(), [](const nlmsghdr*) { return true; });
  EXPECT_EQ(r.end, NetlinkEnd::refused);
  EXPECT_EQ(r.err, ERANGE);
  if (r.kernel_said.empty()) GTEST_SKIP() << "this kernel gives no words with its errors (before 4.12)";
  EXPECT_EQ(r.kernel_said, "Attribute failed policy validation");
}

// A message without NLM_F_REQUEST is not answered: the receive times out.
TEST(NetlinkSocket, NoAnswerIsATimeout) {
  NetlinkSocket s(1);
  ASSERT_EQ(s.error(), 0);
  LinkRequest req(0);
  const NetlinkResult r = s.exchange(req.h(), [](const nlmsghdr*) { return true; });
  EXPECT_EQ(r.end, NetlinkEnd::not_received);
  EXPECT_EQ(r.err, ETIMEDOUT);
}

// The socket moves with its owner (lab's Rtnl::in_netns opens it on another thread); what it moved from is closed.
TEST(NetlinkSocket, MovesAndLeavesNothingOpenBehind) {
  NetlinkSocket s(1), t(1);
  t = std::move(s);
  LinkRequest req(NLM_F_REQUEST | NLM_F_DUMP);
  const NetlinkResult r = s.exchange(req.h(), [](const nlmsghdr*) { return true; });
  EXPECT_EQ(r.end, NetlinkEnd::not_sent);
  EXPECT_EQ(r.err, EBADF);
  NetlinkResult dumped;
  link_names(t, dumped);
  EXPECT_TRUE(dumped.ok());
}

}  // namespace
}  // namespace coldstart
