// The probes doctor net sends, each bounded by a timeout so that a dead network answers in seconds: a name resolved
// (getaddrinfo on a thread of its own, abandoned at the timeout), a TCP connection (non-blocking connect, optionally
// from one source address), an HTTP CONNECT tunnel through a proxy, the UDP "connect" Ray uses to find its node IP,
// and an HTTPS/WSS request made by libcurl (loaded at run time; libcurl follows curl's proxy rules).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "model/net.h"  // errno_name
#include "net/icmp.h"

namespace coldstart::net {

struct Resolution {
  std::vector<std::string> addresses;  // numeric, in getaddrinfo's order, each once
  int gai_error = 0;                   // getaddrinfo's EAI_* code, 0 when it answered
  std::string error;                   // gai_strerror, "timed out after 2 s", "" when it answered
  bool timed_out = false;
  double ms = 0;
};
// How a name is asked (getaddrinfo, SOCK_STREAM): only the families this host has an address in (AI_ADDRCONFIG); every
// address of either family (AF_UNSPEC), as PyTorch's c10d asks a rendezvous name when it does not prefer IPv6; or
// IPv6 with IPv4 mapped (AF_INET6, AI_V4MAPPED | AI_ALL), c10d's first ask by default (net/target_check_path.cc).
enum class Lookup { configured, any_family, ipv6_mapped };
Resolution resolve_host(const std::string& host, double timeout_s, Lookup how = Lookup::configured);

bool is_numeric_address(const std::string& host);
bool is_loopback_address(const std::string& address);  // 127.0.0.0/8, ::1, ::ffff:127.x
bool is_fake_ip_address(const std::string& address);   // 198.18.0.0/15: a proxy's TUN-mode fake-IP range

struct Connect {
  bool ok = false;
  int err = 0;  // errno when it failed (ETIMEDOUT when our timeout ran out)
  bool timed_out = false;
  double ms = 0;
  std::string local;  // the local address:port it used, when connected
  IcmpReport icmp;    // when it failed with an error: what the socket's error queue says, and who sent it
  // When it timed out: TCP_INFO's SYN retransmissions tried, and how many of them are in flight. The kernel counts a
  // retransmission a firewall on this host drops (its send fails) as tried but never in flight.
  int syn_retries = 0;
  int retries_in_flight = 0;
  // Timed out although nothing it retried left this host: its own firewall drops the connection's packets.
  bool dropped_here() const { return timed_out && syn_retries > 0 && retries_in_flight == 0; }
  std::string describe() const;  // "connected in 1.2 ms", "ECONNREFUSED (Connection refused) after 0.3 ms"
};
// `bind_address` (numeric) picks the source address, as NCCL and Gloo do after choosing an interface.
Connect tcp_connect(const std::string& address, uint16_t port, double timeout_s, const std::string& bind_address = "");

// CONNECT host:port through an HTTP proxy: the TCP connection to the proxy, then its status line.
struct Tunnel {
  Connect to_proxy;
  int status = 0;           // the proxy's HTTP status (200: the tunnel is up); 0 when none came
  std::string status_line;  // "HTTP/1.1 403 Filtered"
  std::string error;        // "" or why no status came (timed out, closed, not HTTP)
  bool hung_up = false;     // the proxy took the connection and closed it (or reset it) without an answer
  bool ok() const { return to_proxy.ok && status >= 200 && status < 300; }
  // The proxy took the connection but would not serve it: 403, or it hung up without a word.
  bool refused() const { return to_proxy.ok && (status == 403 || hung_up); }
};
Tunnel http_connect(const std::string& proxy_address, uint16_t proxy_port, const std::string& host, uint16_t port,
                    double timeout_s);
// A connection to a proxy that sends nothing and waits `wait_s` for a word: a proxy that answers (403) or hangs up
// before any request refuses this client at its door (tinyproxy's Allow, mihomo's allow-lan); one that serves the
// client waits for the request (error says so, status 0).
Tunnel proxy_greeting(const std::string& proxy_address, uint16_t proxy_port, double wait_s, double timeout_s);

// The source address the kernel picks for a UDP socket "connected" toward address:port (no packet is sent): how Ray
// finds its node IP (toward 8.8.8.8:53). err is the connect()'s errno (ENETUNREACH where no route leads there).
struct UdpSource {
  std::string address;
  int err = 0;
};
UdpSource udp_source_toward(const std::string& address, uint16_t port);

// An HTTP(S) request by libcurl (dlopen'ed: libcurl.so.4), following libcurl's own proxy rules from the environment,
// unless `proxy` is given ("" = libcurl's choice, "-" = no proxy). The TLS handshake and the HTTP status.
struct Fetch {
  bool attempted = false;   // false: libcurl is not on this machine (`library` says so)
  std::string library;      // "libcurl/7.88.1 OpenSSL/3.0.15 ...", or why it was not loaded
  int curl_code = 0;        // CURLcode; 0 = CURLE_OK
  std::string curl_error;   // curl's message for curl_code
  long http_status = 0;     // the response's status (the last one: after a CONNECT, the server's)
  long connect_status = 0;  // the proxy's answer to CONNECT, when a proxy was used
  std::string primary_ip;   // the address libcurl connected to (the proxy's, through one)
  bool tls = false;         // a TLS handshake was made and verified
  double ms = 0;
};
// `ca_file` ("" for the system's): the tests' own CA. `mss` > 0 caps the TCP segments both ways at that many bytes
// (TCP_MAXSEG before the connect: the server learns it from our SYN): the same request in small packets.
Fetch http_fetch(const std::string& url, double timeout_s, const std::string& proxy, const std::string& ca_file,
                 int mss = 0);

}  // namespace coldstart::net
