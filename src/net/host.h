// What doctor net knows about this process and the machine it runs on, before any probe: its network namespace
// against its parent's and PID 1's, its interfaces, whether it may open an AF_INET socket, the platform (WSL and its
// networking mode, a container), the resolver's configuration and the default route. Read through one seam, a Root:
// "/" on a live system, a recorded fixture folder in tests (WSL's own files cannot be had on Linux CI).
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "model/net.h"

namespace coldstart::net {

// Files are read through it: "/" reads the live system; a fixture folder overlays it, a file present under the folder
// replacing the live one (tests/data/net/wsl-nat/proc/sys/kernel/osrelease stands for /proc/sys/kernel/osrelease), so
// that a test in a real network namespace can be "WSL" while its interfaces and routes stay live. A command's output
// likewise: `dir`/cmd/NAME.txt replaces running NAME (found on PATH, bounded by a timeout). What the recorded system
// lacks is listed in `dir`/.absent, one entry a line ("/.dockerenv", "cmd/wslinfo"): it then reads as missing rather
// than falling through to the live one (a WSL fixture read inside a Docker container must not see /.dockerenv).
class Root {
 public:
  explicit Root(std::string dir = "/");
  bool live() const { return dir_ == "/"; }
  const std::string& dir() const { return dir_; }
  // The fixture's file, else the live one; nothing when missing, unreadable or not a regular file (a FIFO or a device
  // is refused without blocking). At most the first 1 MiB is returned.
  std::optional<std::string> read(const std::string& path) const;
  // The fixture's cmd/NAME.txt (NAME: argv[0]'s last component), else the command's stdout when it is on PATH and
  // exits 0 within timeout_s (run without a shell, stdin and stderr on /dev/null, killed with its process group on
  // timeout; more than 1 MiB of output gives nothing).
  std::optional<std::string> run(const std::vector<std::string>& argv, double timeout_s) const;

 private:
  std::string dir_;
};

// The facts (HostFacts, model/net.h): files through `root`, the rest (socket(), getifaddrs, the namespaces, netlink)
// live.
HostFacts collect_host(const Root& root);

// The parsers collect_host uses, for tests and for recorded files.
ResolverConf parse_resolv_conf(std::string_view text);
std::vector<std::pair<std::string, std::string>> parse_hosts(std::string_view text);
// /proc/net/route (and /proc/net/ipv6_route when IPv4 has no default route).
DefaultRoute parse_default_route(std::string_view proc_net_route, std::string_view proc_net_ipv6_route = {});
// "5.15.167.4-microsoft-standard-WSL2" -> wsl, version "2"; "4.4.0-19041-Microsoft" -> version "1".
void parse_osrelease(std::string_view osrelease, Platform& p);

}  // namespace coldstart::net
