#include "lab/rtnl.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <linux/if_link.h>
#include <linux/if_tun.h>
#include <linux/netlink.h>
#include <linux/pkt_sched.h>
#include <linux/rtnetlink.h>
#include <linux/veth.h>
#include <net/if.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "model/net.h"

namespace coldstart::lab {
// Named, so that a unity build's other files (their own helpers in anonymous namespaces) cannot clash with these.
namespace rtnl_impl {
namespace {

constexpr const char* kNetnsDir = "/run/netns";

// A request being written: the nlmsghdr, its fixed header, then attributes (nested ones closed by end()).
class Message {
 public:
  Message(uint16_t type, uint16_t flags) {
    nlmsghdr h{};
    h.nlmsg_type = type;
    h.nlmsg_flags = static_cast<uint16_t>(NLM_F_REQUEST | flags);
    put(&h, sizeof h);
  }
  template <class T>
  void fixed(const T& t) {
    put(&t, sizeof t);
  }
  void attr(uint16_t type, const void* data, size_t len) {
    rtattr a{};
    a.rta_type = type;
    a.rta_len = static_cast<uint16_t>(RTA_LENGTH(len));
    put(&a, sizeof a);
    put(data, len);
  }
  void attr_str(uint16_t type, const std::string& s) { attr(type, s.c_str(), s.size() + 1); }
  void attr_u32(uint16_t type, uint32_t v) { attr(type, &v, sizeof v); }
  size_t begin(uint16_t type) {
    const size_t at = buf_.size();
    attr(type, nullptr, 0);
    return at;
  }
  void end(size_t at) {
    const auto len = static_cast<uint16_t>(buf_.size() - at);
    std::memcpy(buf_.data() + at + offsetof(rtattr, rta_len), &len, sizeof len);
  }
  std::vector<uint8_t>& bytes() {
    const auto len = static_cast<uint32_t>(buf_.size());
    std::memcpy(buf_.data() + offsetof(nlmsghdr, nlmsg_len), &len, sizeof len);
    return buf_;
  }

 private:
  void put(const void* data, size_t len) {
    const size_t at = buf_.size();
    buf_.resize(at + NLMSG_ALIGN(len));
    if (len) std::memcpy(buf_.data() + at, data, len);
  }
  std::vector<uint8_t> buf_;
};

// Each attribute of a message's payload past its fixed header `skip`: (type without flags, data, length).
template <class F>
void each_attr(const nlmsghdr* h, size_t skip, F&& f) {
  if (h->nlmsg_len < NLMSG_LENGTH(skip)) return;
  auto* a = reinterpret_cast<const rtattr*>(reinterpret_cast<const char*>(NLMSG_DATA(h)) + NLMSG_ALIGN(skip));
  int len = static_cast<int>(h->nlmsg_len - NLMSG_LENGTH(NLMSG_ALIGN(skip)));
  for (; RTA_OK(a, len); a = RTA_NEXT(a, len))
    f(static_cast<uint16_t>(a->rta_type & NLA_TYPE_MASK), RTA_DATA(a), RTA_PAYLOAD(a));
}

std::string ipv4_text(const void* data, size_t len) {
  if (len < 4) return "";
  char text[INET_ADDRSTRLEN] = {};
  ::inet_ntop(AF_INET, data, text, sizeof text);
  return text;
}

constexpr int kTimeoutS = 5;  // each receive's bound: a kernel that never answers is an error, not a hang

// Runs f on a thread of its own that first entered the namespace ns_fd refers to (setns moves only the calling
// thread, so the lab's own threads stay where they are); the errno of setns, or 0.
template <class F>
int in_thread(int ns_fd, F&& f) {
  int err = 0;
  std::thread([&] {
    if (ns_fd >= 0 && ::setns(ns_fd, CLONE_NEWNET) != 0) {
      err = errno;
      return;
    }
    f();
  }).join();
  return err;
}

// /run/netns a mount point of its own, shared, as `ip netns add` makes it.
void share_netns_dir() {
  if (::mkdir(kNetnsDir, 0755) != 0 && errno != EEXIST) throw RtnlError(fmt::format("creating {}", kNetnsDir), errno);
  bool made_mount = false;
  while (::mount("", kNetnsDir, "none", MS_SHARED | MS_REC, nullptr) != 0) {
    if (errno != EINVAL || made_mount) throw RtnlError(fmt::format("making {} a shared mount", kNetnsDir), errno);
    if (::mount(kNetnsDir, kNetnsDir, "none", MS_BIND | MS_REC, nullptr) != 0)
      throw RtnlError(fmt::format("bind-mounting {} onto itself", kNetnsDir), errno);
    made_mount = true;
  }
}

}  // namespace
}  // namespace rtnl_impl

RtnlError::RtnlError(const std::string& operation, int e, const std::string& kernel_said)
    : RuntimeError(operation + ": " + net::errno_text(e) + (kernel_said.empty() ? "" : ": " + kernel_said)), err(e) {}

uint32_t psched_ticks(uint64_t ns, const std::string& psched_text) {
  // tc_core_init: t2us / us2t * clock_res / 1e6 ticks per us; a clock of 1 GHz advertises t2us as 1000 for old tools.
  unsigned t2us = 1000, us2t = 64, clock_res = 1000000;
  if (std::sscanf(psched_text.c_str(), "%x %x %x", &t2us, &us2t, &clock_res) != 3 || us2t == 0 || t2us == 0) {
    t2us = 1000;
    us2t = 64;
    clock_res = 1000000;
  }
  if (clock_res == 1000000000) t2us = us2t;
  const double tick_in_usec = static_cast<double>(t2us) / us2t * (static_cast<double>(clock_res) / 1e6);
  const double ticks = static_cast<double>(ns) / 1000.0 * tick_in_usec;
  return ticks >= 4294967295.0 ? 0xffffffffu : static_cast<uint32_t>(ticks);
}

std::vector<uint8_t> netem_options(const Netem& netem, const std::string& psched_text) {
  rtnl_impl::Message m(0, 0);
  const size_t header = m.bytes().size();
  tc_netem_qopt q{};
  q.limit = netem.limit;
  q.latency = psched_ticks(netem.latency_ns, psched_text);
  m.fixed(q);
  if (netem.latency_ns > 0) {
    const int64_t ns = static_cast<int64_t>(netem.latency_ns);
    m.attr(TCA_NETEM_LATENCY64, &ns, sizeof ns);  // exact, where the kernel reads it (4.15+); ticks before
  }
  if (netem.rate_bytes_per_s > 0) {
    tc_netem_rate r{};
    if (netem.rate_bytes_per_s >= (uint64_t{1} << 32)) {
      r.rate = ~0u;
      m.attr(TCA_NETEM_RATE64, &netem.rate_bytes_per_s, sizeof netem.rate_bytes_per_s);
    } else {
      r.rate = static_cast<uint32_t>(netem.rate_bytes_per_s);
    }
    m.attr(TCA_NETEM_RATE, &r, sizeof r);
  }
  const auto& b = m.bytes();
  return {b.begin() + static_cast<std::ptrdiff_t>(header), b.end()};
}

Rtnl::Rtnl() : socket_(rtnl_impl::kTimeoutS) {
  if (socket_.error()) throw RtnlError("opening a NETLINK_ROUTE socket", socket_.error());
}

Rtnl Rtnl::in_netns(int ns_fd, const std::string& ns_name) {
  std::optional<NetlinkSocket> socket;
  if (int e = rtnl_impl::in_thread(ns_fd, [&] { socket.emplace(rtnl_impl::kTimeoutS); }); e != 0)
    throw RtnlError("entering network namespace " + ns_name + " (setns)", e);
  if (socket->error())
    throw RtnlError("opening a NETLINK_ROUTE socket in network namespace " + ns_name, socket->error());
  return Rtnl(std::move(*socket));
}

void Rtnl::request(std::vector<uint8_t>& msg, const std::string& operation,
                   const std::function<void(const nlmsghdr*)>& on_reply) {
  auto* h = reinterpret_cast<nlmsghdr*>(msg.data());
  if ((h->nlmsg_flags & NLM_F_DUMP) != NLM_F_DUMP) h->nlmsg_flags |= NLM_F_ACK;
  const NetlinkResult r = socket_.exchange(h, [&](const nlmsghdr* reply) {
    if (on_reply) on_reply(reply);
    return true;
  });
  switch (r.end) {
    case NetlinkEnd::answered: return;
    case NetlinkEnd::not_sent: throw RtnlError(operation + " (sending)", r.err);
    case NetlinkEnd::not_received:
      throw RtnlError(operation + (r.err == ETIMEDOUT ? fmt::format(" (no answer in {} s)", rtnl_impl::kTimeoutS)
                                                      : std::string(" (receiving)")),
                      r.err);
    case NetlinkEnd::short_error: throw RtnlError(operation + " (a short answer)", r.err);
    case NetlinkEnd::refused: throw RtnlError(operation, r.err, r.kernel_said);
  }
}

int Rtnl::link_index(const std::string& name) {
  rtnl_impl::Message m(RTM_GETLINK, 0);
  ifinfomsg i{};
  i.ifi_family = AF_UNSPEC;
  m.fixed(i);
  m.attr_str(IFLA_IFNAME, name);
  int index = 0;
  try {
    request(m.bytes(), "looking up interface " + name + " (RTM_GETLINK)", [&](const nlmsghdr* h) {
      if (h->nlmsg_type == RTM_NEWLINK) index = static_cast<const ifinfomsg*>(NLMSG_DATA(h))->ifi_index;
    });
  } catch (const RtnlError& e) {
    if (e.err == ENODEV) return 0;
    throw;
  }
  return index;
}

std::vector<std::pair<int, std::string>> Rtnl::links() {
  rtnl_impl::Message m(RTM_GETLINK, NLM_F_DUMP);
  ifinfomsg i{};
  i.ifi_family = AF_UNSPEC;
  m.fixed(i);
  std::vector<std::pair<int, std::string>> out;
  request(m.bytes(), "listing interfaces (RTM_GETLINK)", [&](const nlmsghdr* h) {
    if (h->nlmsg_type != RTM_NEWLINK) return;
    const int index = static_cast<const ifinfomsg*>(NLMSG_DATA(h))->ifi_index;
    rtnl_impl::each_attr(h, sizeof(ifinfomsg), [&](uint16_t type, const void* data, size_t size) {
      if (type == IFLA_IFNAME)
        out.emplace_back(index,
                         std::string(static_cast<const char*>(data), strnlen(static_cast<const char*>(data), size)));
    });
  });
  return out;
}

std::vector<std::string> Rtnl::ipv4_addresses() {
  rtnl_impl::Message m(RTM_GETADDR, NLM_F_DUMP);
  ifaddrmsg a{};
  a.ifa_family = AF_INET;
  m.fixed(a);
  std::vector<std::string> out;
  request(m.bytes(), "listing addresses (RTM_GETADDR)", [&](const nlmsghdr* h) {
    if (h->nlmsg_type != RTM_NEWADDR) return;
    rtnl_impl::each_attr(h, sizeof(ifaddrmsg), [&](uint16_t type, const void* data, size_t size) {
      if (type == IFA_LOCAL || type == IFA_ADDRESS) out.push_back(rtnl_impl::ipv4_text(data, size));
    });
  });
  return out;
}

std::vector<std::string> Rtnl::ipv4_routes() {
  rtnl_impl::Message m(RTM_GETROUTE, NLM_F_DUMP);
  rtmsg r{};
  r.rtm_family = AF_INET;
  m.fixed(r);
  std::vector<std::string> out;
  request(m.bytes(), "listing routes (RTM_GETROUTE)", [&](const nlmsghdr* h) {
    if (h->nlmsg_type != RTM_NEWROUTE) return;
    const auto* rt = static_cast<const rtmsg*>(NLMSG_DATA(h));
    std::string dst = "0.0.0.0";
    rtnl_impl::each_attr(h, sizeof(rtmsg), [&](uint16_t type, const void* data, size_t size) {
      if (type == RTA_DST) dst = rtnl_impl::ipv4_text(data, size);
    });
    out.push_back(fmt::format("{}/{}", dst, rt->rtm_dst_len));
  });
  return out;
}

void Rtnl::add_bridge(const std::string& name) {
  rtnl_impl::Message m(RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL);
  ifinfomsg i{};
  i.ifi_family = AF_UNSPEC;
  m.fixed(i);
  m.attr_str(IFLA_IFNAME, name);
  const size_t info = m.begin(IFLA_LINKINFO);
  m.attr_str(IFLA_INFO_KIND, "bridge");
  m.end(info);
  request(m.bytes(), "creating bridge " + name + " (RTM_NEWLINK)");
}

void Rtnl::add_veth(const std::string& name, const std::string& peer, int peer_ns_fd) {
  rtnl_impl::Message m(RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL);
  ifinfomsg i{};
  i.ifi_family = AF_UNSPEC;
  m.fixed(i);
  m.attr_str(IFLA_IFNAME, name);
  const size_t info = m.begin(IFLA_LINKINFO);
  m.attr_str(IFLA_INFO_KIND, "veth");
  const size_t data = m.begin(IFLA_INFO_DATA);
  const size_t peer_info = m.begin(VETH_INFO_PEER);
  m.fixed(i);
  m.attr_str(IFLA_IFNAME, peer);
  if (peer_ns_fd >= 0) m.attr_u32(IFLA_NET_NS_FD, static_cast<uint32_t>(peer_ns_fd));
  m.end(peer_info);
  m.end(data);
  m.end(info);
  request(m.bytes(), fmt::format("creating veth pair {} and {} (RTM_NEWLINK)", name, peer));
}

void Rtnl::set_master(const std::string& name, int index, int master_index) {
  rtnl_impl::Message m(RTM_NEWLINK, 0);
  ifinfomsg i{};
  i.ifi_family = AF_UNSPEC;
  i.ifi_index = index;
  m.fixed(i);
  m.attr_u32(IFLA_MASTER, static_cast<uint32_t>(master_index));
  request(m.bytes(), fmt::format("attaching {} to its bridge (RTM_NEWLINK, IFLA_MASTER)", name));
}

void Rtnl::set_up(const std::string& name, int index) {
  rtnl_impl::Message m(RTM_NEWLINK, 0);
  ifinfomsg i{};
  i.ifi_family = AF_UNSPEC;
  i.ifi_index = index;
  i.ifi_flags = IFF_UP;
  i.ifi_change = IFF_UP;
  m.fixed(i);
  request(m.bytes(), fmt::format("setting {} up (RTM_NEWLINK)", name));
}

void Rtnl::add_ipv4_address(const std::string& name, int index, const std::string& address, int prefix_len) {
  in_addr a{};
  if (::inet_pton(AF_INET, address.c_str(), &a) != 1)
    throw RtnlError(fmt::format("adding address {} to {}", address, name), EINVAL, "not an IPv4 address");
  rtnl_impl::Message m(RTM_NEWADDR, NLM_F_CREATE | NLM_F_EXCL);
  ifaddrmsg ia{};
  ia.ifa_family = AF_INET;
  ia.ifa_prefixlen = static_cast<uint8_t>(prefix_len);
  ia.ifa_scope = RT_SCOPE_UNIVERSE;
  ia.ifa_index = static_cast<uint32_t>(index);
  m.fixed(ia);
  m.attr(IFA_LOCAL, &a, sizeof a);
  m.attr(IFA_ADDRESS, &a, sizeof a);
  in_addr brd = a;
  const uint32_t host_mask = prefix_len >= 32 ? 0 : (0xffffffffu >> prefix_len);
  brd.s_addr = a.s_addr | htonl(host_mask);
  m.attr(IFA_BROADCAST, &brd, sizeof brd);
  request(m.bytes(), fmt::format("adding address {}/{} to {} (RTM_NEWADDR)", address, prefix_len, name));
}

void Rtnl::add_netem(const std::string& name, int index, const Netem& netem) {
  std::ifstream f("/proc/net/psched");
  std::stringstream psched;
  psched << f.rdbuf();
  rtnl_impl::Message m(RTM_NEWQDISC, NLM_F_CREATE | NLM_F_EXCL);
  tcmsg t{};
  t.tcm_family = AF_UNSPEC;
  t.tcm_ifindex = index;
  t.tcm_handle = 0;
  t.tcm_parent = TC_H_ROOT;
  m.fixed(t);
  m.attr_str(TCA_KIND, "netem");
  const std::vector<uint8_t> options = netem_options(netem, psched.str());
  m.attr(TCA_OPTIONS, options.data(), options.size());
  request(m.bytes(), fmt::format("adding netem as the root qdisc of {} (RTM_NEWQDISC)", name));
}

int Rtnl::delete_link(const std::string& name) {
  rtnl_impl::Message m(RTM_DELLINK, 0);
  ifinfomsg i{};
  i.ifi_family = AF_UNSPEC;
  m.fixed(i);
  m.attr_str(IFLA_IFNAME, name);
  try {
    request(m.bytes(), "deleting " + name + " (RTM_DELLINK)");
  } catch (const RtnlError& e) {
    return e.err;
  }
  return 0;
}

Netns create_netns(const std::string& name) {
  Netns ns;
  const std::string path = std::string(rtnl_impl::kNetnsDir) + "/" + name;
  bool can_bind = true;
  try {
    rtnl_impl::share_netns_dir();
  } catch (const RtnlError& e) {
    if (e.err != EPERM && e.err != EACCES && e.err != EROFS) throw;
    can_bind = false;
  }
  if (can_bind) {
    const int f = ::open(path.c_str(), O_RDONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0);
    if (f < 0) {
      if (errno != EPERM && errno != EACCES && errno != EROFS) throw RtnlError("creating " + path, errno);
      can_bind = false;
    } else {
      ::close(f);
    }
  }
  int err = 0, mount_err = 0;
  const char* step = "";
  rtnl_impl::in_thread(-1, [&] {
    if (::unshare(CLONE_NEWNET) != 0) {
      err = errno;
      step = "unshare(CLONE_NEWNET)";
      return;
    }
    const std::string self = fmt::format("/proc/self/task/{}/ns/net", static_cast<long>(::syscall(SYS_gettid)));
    ns.fd = ::open(self.c_str(), O_RDONLY | O_CLOEXEC);
    if (ns.fd < 0) {
      err = errno;
      step = "opening the new namespace";
      return;
    }
    if (can_bind) {
      if (::mount(self.c_str(), path.c_str(), "none", MS_BIND, nullptr) == 0)
        ns.bound = true;
      else
        mount_err = errno;
    }
  });
  if (!ns.bound && can_bind) ::unlink(path.c_str());
  if (err != 0) {
    if (ns.fd >= 0) ::close(ns.fd);
    throw RtnlError(fmt::format("creating network namespace {} ({})", name, step), err);
  }
  if (mount_err != 0 && mount_err != EPERM && mount_err != EACCES && mount_err != EROFS) {
    ::close(ns.fd);
    throw RtnlError(fmt::format("binding network namespace {} to {}", name, path), mount_err);
  }
  ns.path = ns.bound ? path : fmt::format("/proc/{}/fd/{}", static_cast<long>(::getpid()), ns.fd);
  return ns;
}

bool remove_netns(const std::string& name) {
  const std::string path = std::string(rtnl_impl::kNetnsDir) + "/" + name;
  ::umount2(path.c_str(), MNT_DETACH);
  return ::unlink(path.c_str()) == 0;
}

std::vector<std::string> list_netns() {
  std::vector<std::string> out;
  DIR* d = ::opendir(rtnl_impl::kNetnsDir);
  if (!d) return out;
  while (const dirent* e = ::readdir(d)) {
    const std::string n = e->d_name;
    if (n != "." && n != "..") out.push_back(n);
  }
  ::closedir(d);
  return out;
}

int open_tun(int ns_fd, const std::string& ns_name, const std::string& name) {
  int fd = -1, err = 0;
  const int entered = rtnl_impl::in_thread(ns_fd, [&] {
    fd = ::open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
      err = errno;
      return;
    }
    ifreq req{};
    req.ifr_flags = IFF_TUN | IFF_NO_PI;
    std::snprintf(req.ifr_name, sizeof req.ifr_name, "%s", name.c_str());
    if (::ioctl(fd, TUNSETIFF, &req) != 0) {
      err = errno;
      ::close(fd);
      fd = -1;
    }
  });
  if (entered != 0) throw RtnlError("entering network namespace " + ns_name + " (setns)", entered);
  if (fd < 0)
    throw RtnlError(fmt::format("making TUN device {} in {} ({})", name, ns_name,
                                err == ENOENT ? "/dev/net/tun is missing" : "/dev/net/tun, TUNSETIFF"),
                    err);
  return fd;
}

}  // namespace coldstart::lab
