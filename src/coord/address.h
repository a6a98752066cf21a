// Addresses for the coordinator: one resolver (getaddrinfo) for the server's bind, the client's connect and the
// address the ranks are told; HOST:PORT text in both directions ("[::1]:29500" for IPv6).
#pragma once
#include <netdb.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "util/strings.h"

namespace coldstart::coord {

struct AddrInfoFree {
  void operator()(addrinfo* a) const { freeaddrinfo(a); }
};
using AddrList = std::unique_ptr<addrinfo, AddrInfoFree>;

// Numeric addresses only when `numeric` (a --bind address must not need DNS). Throws InputError naming `what`.
AddrList resolve(const std::string& host, uint16_t port, bool numeric, const std::string& what);

// "HOST:PORT", with IPv6 hosts in brackets (util/strings.h's, the one formatter).
using coldstart::host_port;
// The inverse of host_port: "10.0.0.5:29500", "[::1]:29500", "node-3:29500". Throws InputError naming `what`.
std::pair<std::string, uint16_t> parse_host_port(const std::string& text, const std::string& what);

bool is_wildcard(const std::string& address);  // 0.0.0.0 or ::

// The address ranks are told to reach a coordinator bound to `bind`: `advertise` when given; the bind address when
// it is a specific one; for a wildcard bind, this host's address on the route toward `toward` (the host the ranks
// run on, e.g. a Ray cluster's head) or loopback when the ranks are local (`toward` empty).
std::string advertised_address(const std::string& bind, const std::string& advertise, const std::string& toward);

}  // namespace coldstart::coord
