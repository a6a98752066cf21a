// Host facts: files through a Root (live, or a recorded fixture laid over it), the rest live. Reads are bounded and
// never block (a FIFO where a file was expected is refused), commands run without a shell under a timeout. Some 510
// lines: every platform fact (namespace, WSL, container, resolver, interfaces) is read through that one Root.
#include "net/host.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cctype>
#include <cerrno>
#include <cstring>

#include "util/error.h"
#include "util/fs.h"
#include "util/process.h"
#include "util/strings.h"

namespace coldstart::net {
// Named, so that a unity build's other files (their own helpers in anonymous namespaces) cannot clash with these.
namespace host_impl {

void parse_kernel_release(std::string_view osrelease, Platform& p);

namespace {

constexpr size_t kMaxRead = size_t{1} << 20;

// Whitespace-separated fields (spaces and tabs).
std::vector<std::string> fields(std::string_view line) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && std::isspace(static_cast<unsigned char>(line[i]))) ++i;
    size_t start = i;
    while (i < line.size() && !std::isspace(static_cast<unsigned char>(line[i]))) ++i;
    if (i > start) out.emplace_back(line.substr(start, i - start));
  }
  return out;
}

std::vector<std::string_view> lines(std::string_view text) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    out.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

// A regular file's first kMaxRead bytes; nothing when it is missing, unreadable or something else (a FIFO is opened
// with O_NONBLOCK, so that open() itself cannot hang, and refused after fstat).
std::optional<std::string> read_regular(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return std::nullopt;
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return std::nullopt;
  }
  std::string out;
  char buf[16384];
  while (out.size() < kMaxRead) {
    ssize_t n = ::read(fd, buf, std::min(sizeof buf, kMaxRead - out.size()));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

bool exists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

// A failed read as the host's facts keep it: the errno's name, and for a refusal whether we are not root or root was
// refused (a sandbox).
std::string read_error_text(int err) {
  std::string name = errno_name(err);
  if (err == EACCES || err == EPERM) name += ::geteuid() != 0 ? " (not root)" : " (root, yet refused: a sandbox)";
  return name;
}

// readlink(2) of a /proc/PID/ns/net link, or the error as text.
std::string read_ns(const std::string& link, std::string& error) {
  char buf[256];
  ssize_t n = ::readlink(link.c_str(), buf, sizeof buf - 1);
  if (n < 0) {
    error = read_error_text(errno);
    return "";
  }
  return std::string(buf, static_cast<size_t>(n));
}

int prefix_length(const sockaddr* mask) {
  if (!mask) return -1;
  const unsigned char* p = nullptr;
  size_t n = 0;
  if (mask->sa_family == AF_INET) {
    p = reinterpret_cast<const unsigned char*>(&reinterpret_cast<const sockaddr_in*>(mask)->sin_addr);
    n = 4;
  } else if (mask->sa_family == AF_INET6) {
    p = reinterpret_cast<const unsigned char*>(&reinterpret_cast<const sockaddr_in6*>(mask)->sin6_addr);
    n = 16;
  } else {
    return -1;
  }
  int bits = 0;
  for (size_t i = 0; i < n; ++i) bits += std::popcount(static_cast<unsigned>(p[i]));
  return bits;
}

std::vector<Interface> list_interfaces() {
  std::vector<Interface> out;
  ifaddrs* all = nullptr;
  if (::getifaddrs(&all) != 0) return out;
  for (ifaddrs* a = all; a; a = a->ifa_next) {
    if (!a->ifa_name) continue;
    auto it = std::find_if(out.begin(), out.end(), [&](const Interface& i) { return i.name == a->ifa_name; });
    if (it == out.end()) {
      Interface i;
      i.name = a->ifa_name;
      i.index = static_cast<int>(::if_nametoindex(a->ifa_name));
      i.up = a->ifa_flags & IFF_UP;
      i.loopback = a->ifa_flags & IFF_LOOPBACK;
      i.no_carrier = (a->ifa_flags & IFF_UP) && !(a->ifa_flags & IFF_RUNNING);
      out.push_back(std::move(i));
      it = out.end() - 1;
    }
    if (!a->ifa_addr) continue;
    char text[INET6_ADDRSTRLEN] = {};
    if (a->ifa_addr->sa_family == AF_INET) {
      ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(a->ifa_addr)->sin_addr, text, sizeof text);
      if (std::find(it->ipv4.begin(), it->ipv4.end(), text) == it->ipv4.end()) {
        it->ipv4.push_back(text);
        it->ipv4_prefix.push_back(prefix_length(a->ifa_netmask));
      }
    } else if (a->ifa_addr->sa_family == AF_INET6) {
      ::inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(a->ifa_addr)->sin6_addr, text, sizeof text);
      if (std::find(it->ipv6.begin(), it->ipv6.end(), text) == it->ipv6.end()) {
        it->ipv6.push_back(text);
        it->ipv6_prefix.push_back(prefix_length(a->ifa_netmask));
      }
    }
  }
  ::freeifaddrs(all);
  return out;
}

ProcessContext collect_context() {
  ProcessContext c;
  std::string ignored;
  c.netns = read_ns("/proc/self/ns/net", ignored);
  pid_t ppid = ::getppid();
  if (ppid <= 0)
    c.parent_error = "no parent in this PID namespace";
  else
    c.parent_netns = read_ns("/proc/" + std::to_string(ppid) + "/ns/net", c.parent_error);
  c.init_netns = read_ns("/proc/1/ns/net", c.init_error);
  c.interfaces = list_interfaces();
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    c.socket_errno = errno;
  else
    ::close(fd);
  return c;
}

bool known_mode(const std::string& m) {
  static const char* const kModes[] = {"nat", "mirrored", "bridged", "virtioproxy", "consomme", "none", "wsl1"};
  return std::find(std::begin(kModes), std::end(kModes), m) != std::end(kModes);
}

// The container this process runs in, from the files its runtime leaves, most specific first: Kubernetes (pods are
// also Docker or containerd containers), Podman, Docker, then systemd's own note and cgroup names.
void detect_container(const Root& root, Platform& p) {
  auto set = [&](const char* what, const char* evidence) {
    p.container = what;
    p.container_evidence = evidence;
  };
  std::string cgroup = root.read("/proc/1/cgroup").value_or("");
  std::string mountinfo = root.read("/proc/self/mountinfo").value_or("");
  if (cgroup.find("kubepods") != std::string::npos) return set("kubernetes", "/proc/1/cgroup");
  if (mountinfo.find("/kubelet/pods/") != std::string::npos || mountinfo.find("kubernetes.io~") != std::string::npos)
    return set("kubernetes", "/proc/self/mountinfo");
  if (root.read("/run/.containerenv")) return set("podman", "/run/.containerenv");
  if (root.read("/.dockerenv")) return set("docker", "/.dockerenv");
  if (cgroup.find("/docker/") != std::string::npos || cgroup.find("docker-") != std::string::npos)
    return set("docker", "/proc/1/cgroup");
  if (mountinfo.find("/docker/containers/") != std::string::npos) return set("docker", "/proc/self/mountinfo");
  if (auto word = root.read("/run/systemd/container")) {
    std::string w(coldstart::trim(*word));
    if (!w.empty() && w != "wsl") {  // systemd calls WSL a container; here WSL is the platform, not a container
      p.container = w;
      p.container_evidence = "/run/systemd/container";
      return;
    }
  }
  if (cgroup.find("/lxc/") != std::string::npos || cgroup.find("lxc.payload") != std::string::npos)
    return set("lxc", "/proc/1/cgroup");
}

Platform collect_platform(const Root& root, const std::vector<Interface>& ifs, const DefaultRoute& route) {
  Platform p;
  p.osrelease = std::string(coldstart::trim(root.read("/proc/sys/kernel/osrelease").value_or("")));
  parse_kernel_release(p.osrelease, p);
  if (p.wsl) {
    // wslinfo (WSL 2.0+, /usr/bin/wslinfo -> /init) prints the mode and a newline.
    if (auto out = root.run({"wslinfo", "--networking-mode"}, 2.0)) {
      std::string mode = lower(coldstart::trim(*out));
      if (known_mode(mode)) {
        p.wsl_mode = mode;
        p.wsl_mode_source = "wslinfo";
      }
    }
    if (p.wsl_mode.empty() && p.wsl_version == "2" &&
        std::any_of(ifs.begin(), ifs.end(), [](const Interface& i) { return i.name == "loopback0"; })) {
      p.wsl_mode = "mirrored";  // WSL's mirrored mode creates loopback0 (LX_INIT_LOOPBACK_DEVICE_NAME)
      p.wsl_mode_source = "interface loopback0";
    }
    // NAT mode, or WSL 2 whose mode is unknown (no wslinfo: WSL before 2.0, where NAT was the only mode): Windows is
    // the default gateway. doctor net's WSL checks read an unknown mode as NAT too (wsl_nat).
    if (p.wsl_mode == "nat" || (p.wsl_mode.empty() && p.wsl_version == "2")) p.windows_host = route.gateway;
  }
  detect_container(root, p);
  return p;
}

// Host order IPv4 of /proc/net/route's hex fields: the kernel prints the __be32 as a native integer.
std::string ipv4_from_proc_hex(const std::string& hex) {
  if (hex.size() != 8) return "";
  char* end = nullptr;
  unsigned long v = std::strtoul(hex.c_str(), &end, 16);
  if (*end) return "";
  in_addr a{};
  uint32_t v32 = static_cast<uint32_t>(v);
  std::memcpy(&a.s_addr, &v32, 4);
  char text[INET_ADDRSTRLEN] = {};
  ::inet_ntop(AF_INET, &a, text, sizeof text);
  return text;
}

std::string ipv6_from_proc_hex(const std::string& hex) {
  auto bytes = coldstart::unhex(lower(hex));
  if (!bytes || bytes->size() != 16) return "";
  char text[INET6_ADDRSTRLEN] = {};
  ::inet_ntop(AF_INET6, bytes->data(), text, sizeof text);
  return text;
}

}  // namespace

// ---- Root ----

namespace {
bool listed_absent(const std::string& dir, const std::string& entry) {
  auto list = read_regular(dir + "/.absent");
  if (!list) return false;
  for (std::string_view line : lines(*list))
    if (coldstart::trim(line) == entry) return true;
  return false;
}
}  // namespace

std::optional<std::string> read_through(const std::string& dir, const std::string& path) {
  if (dir != "/") {
    if (listed_absent(dir, path)) return std::nullopt;
    std::string mine = dir + (coldstart::starts_with(path, "/") ? "" : "/") + path;
    if (exists(mine)) return read_regular(mine);
  }
  return read_regular(path);
}

std::optional<std::string> run_command(const std::string& dir, const std::vector<std::string>& argv, double timeout_s) {
  if (argv.empty() || argv[0].empty()) return std::nullopt;
  std::string name = argv[0].substr(argv[0].rfind('/') == std::string::npos ? 0 : argv[0].rfind('/') + 1);
  if (dir != "/") {
    if (listed_absent(dir, "cmd/" + name)) return std::nullopt;
    std::string recorded = dir + "/cmd/" + name + ".txt";
    if (exists(recorded)) return read_regular(recorded);
  }
  RunSpec spec;
  spec.argv = argv;
  spec.timeout_s = timeout_s;
  spec.max_output = kMaxRead;
  RunResult r = coldstart::run_command(spec);
  if (!r.ok()) return std::nullopt;  // why (r.why()) is not Root::run's to tell: a command is a hint or nothing
  return std::move(r.output);
}

// ---- parsers ----

ResolverConf parse_resolv(std::string_view text) {
  ResolverConf r;
  for (std::string_view raw : lines(text)) {
    std::string_view line = coldstart::trim(raw);
    if (line.empty()) continue;
    if (line[0] == '#' || line[0] == ';') {
      if (line.find("generated by WSL") != std::string_view::npos) r.wsl_generated = true;
      continue;
    }
    auto f = fields(line);
    if (f.empty()) continue;
    if (f[0] == "nameserver" && f.size() >= 2) {
      r.nameservers.push_back(f[1]);
    } else if (f[0] == "search" || f[0] == "domain") {  // the last of them wins (resolv.conf(5))
      r.search.assign(f.begin() + 1, f.end());
    }
  }
  return r;
}

std::vector<std::pair<std::string, std::string>> parse_hosts_text(std::string_view text) {
  std::vector<std::pair<std::string, std::string>> out;
  for (std::string_view raw : lines(text)) {
    std::string_view line = raw.substr(0, raw.find('#'));
    auto f = fields(line);
    for (size_t i = 1; i < f.size(); ++i) out.emplace_back(f[0], f[i]);
  }
  return out;
}

DefaultRoute parse_route(std::string_view proc_net_route, std::string_view proc_net_ipv6_route) {
  constexpr unsigned kUp = 0x1, kGateway = 0x2, kReject = 0x200;
  DefaultRoute best;
  long best_metric = -1;
  for (std::string_view raw : lines(proc_net_route)) {
    auto f = fields(raw);
    // Iface Destination Gateway Flags RefCnt Use Metric Mask MTU Window IRTT
    if (f.size() < 8 || f[0] == "Iface") continue;
    unsigned flags = static_cast<unsigned>(std::strtoul(f[3].c_str(), nullptr, 16));
    if (f[1] != "00000000" || f[7] != "00000000" || !(flags & kUp) || (flags & kReject)) continue;
    long metric = std::strtol(f[6].c_str(), nullptr, 10);
    if (best_metric >= 0 && metric >= best_metric) continue;
    best_metric = metric;
    best.dev = f[0];
    best.gateway = (flags & kGateway) ? ipv4_from_proc_hex(f[2]) : "";
  }
  if (best_metric >= 0) return best;
  for (std::string_view raw : lines(proc_net_ipv6_route)) {
    auto f = fields(raw);
    // dest dest_plen src src_plen next_hop metric refcnt use flags dev
    if (f.size() < 10 || f[0] != std::string(32, '0') || f[1] != "00") continue;
    unsigned flags = static_cast<unsigned>(std::strtoul(f[8].c_str(), nullptr, 16));
    if (!(flags & kUp) || (flags & kReject)) continue;
    long metric = std::strtol(f[5].c_str(), nullptr, 16);
    if (best_metric >= 0 && metric >= best_metric) continue;
    best_metric = metric;
    best.dev = f[9];
    best.gateway = (flags & kGateway) ? ipv6_from_proc_hex(f[4]) : "";
  }
  return best;
}

void parse_kernel_release(std::string_view osrelease, Platform& p) {
  std::string l = lower(osrelease);
  p.wsl = l.find("microsoft") != std::string::npos;
  if (!p.wsl) {
    p.wsl_version.clear();
    return;
  }
  // WSL2: "5.15.167.4-microsoft-standard-WSL2", earlier "4.19.128-microsoft-standard"; WSL1: "4.4.0-19041-Microsoft".
  p.wsl_version =
      (l.find("wsl2") != std::string::npos || l.find("microsoft-standard") != std::string::npos) ? "2" : "1";
}

HostFacts collect(const Root& root) {
  HostFacts f;
  auto hn = root.read("/proc/sys/kernel/hostname");
  f.hostname = hn ? std::string(coldstart::trim(*hn)) : coldstart::hostname();
  f.context = collect_context();
  f.resolver = parse_resolv(root.read("/etc/resolv.conf").value_or(""));
  f.hosts_file = parse_hosts_text(root.read("/etc/hosts").value_or(""));
  f.default_route =
      parse_route(root.read("/proc/net/route").value_or(""), root.read("/proc/net/ipv6_route").value_or(""));
  f.platform = collect_platform(root, f.context.interfaces, f.default_route);
  return f;
}

}  // namespace host_impl

Root::Root(std::string dir) : dir_(std::move(dir)) {
  while (dir_.size() > 1 && dir_.back() == '/') dir_.pop_back();
  if (dir_.empty()) dir_ = "/";
}

std::optional<std::string> Root::read(const std::string& path) const { return host_impl::read_through(dir_, path); }

std::optional<std::string> Root::run(const std::vector<std::string>& argv, double timeout_s) const {
  return host_impl::run_command(dir_, argv, timeout_s);
}

ResolverConf parse_resolv_conf(std::string_view text) { return host_impl::parse_resolv(text); }

std::vector<std::pair<std::string, std::string>> parse_hosts(std::string_view text) {
  return host_impl::parse_hosts_text(text);
}

DefaultRoute parse_default_route(std::string_view proc_net_route, std::string_view proc_net_ipv6_route) {
  return host_impl::parse_route(proc_net_route, proc_net_ipv6_route);
}

void parse_osrelease(std::string_view osrelease, Platform& p) { host_impl::parse_kernel_release(osrelease, p); }

HostFacts collect_host(const Root& root) { return host_impl::collect(root); }

}  // namespace coldstart::net
