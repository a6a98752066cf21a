#include "coord/address.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "util/error.h"
#include "util/strings.h"

namespace coldstart::coord {

AddrList resolve(const std::string& host, uint16_t port, bool numeric, const std::string& what) {
  addrinfo hints{}, *res = nullptr;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = numeric ? AI_NUMERICHOST : 0;
  if (int rc = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res); rc != 0 || !res)
    throw InputError(what + " " + host + ": " +
                     (numeric ? std::string("not an IP address; give e.g. 127.0.0.1, 10.0.0.5 or ::1")
                              : std::string("cannot resolve (") + gai_strerror(rc) + ")"));
  return AddrList(res);
}

std::pair<std::string, uint16_t> parse_host_port(const std::string& text, const std::string& what) {
  auto colon = text.rfind(':');
  int64_t port = 0;  // 0: none or malformed
  if (colon != std::string::npos)
    if (auto p = parse_int(text.substr(colon + 1))) port = *p;
  std::string host = colon == std::string::npos ? "" : text.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  if (port <= 0 || port > 65535 || host.empty())
    throw InputError(what + " " + text + ": expected HOST:PORT (e.g. 10.0.0.5:29500 or [::1]:29500)");
  return {host, static_cast<uint16_t>(port)};
}

bool is_wildcard(const std::string& address) { return address == "0.0.0.0" || address == "::"; }

std::string advertised_address(const std::string& bind, const std::string& advertise, const std::string& toward) {
  if (!advertise.empty()) return advertise;
  if (!is_wildcard(bind)) return bind;
  const bool v6 = bind == "::";
  if (toward.empty()) return v6 ? "::1" : "127.0.0.1";
  // The kernel's choice of source address for a datagram toward the ranks' host (nothing is sent).
  AddrList to = resolve(toward, 9, false, "--advertise: the ranks' host");
  int fd = ::socket(to->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  sockaddr_storage local{};
  socklen_t len = sizeof local;
  bool ok = fd >= 0 && ::connect(fd, to->ai_addr, to->ai_addrlen) == 0 &&
            getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) == 0;
  if (fd >= 0) ::close(fd);
  char buf[INET6_ADDRSTRLEN] = {};
  if (ok && local.ss_family == AF_INET)
    inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in&>(local).sin_addr, buf, sizeof buf);
  else if (ok && local.ss_family == AF_INET6)
    inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6&>(local).sin6_addr, buf, sizeof buf);
  if (!*buf)
    throw InputError("--bind " + bind + ": no route from this host toward " + toward +
                     "; give the address the ranks should reach with --advertise HOST");
  return buf;
}

}  // namespace coldstart::coord
