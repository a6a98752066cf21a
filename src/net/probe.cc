#include "net/probe.h"

#include <arpa/inet.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <system_error>
#include <thread>

#include "util/clock.h"
#include "util/strings.h"

namespace coldstart::net {
namespace {

double ms_since(int64_t t0) { return static_cast<double>(mono_ns() - t0) / 1e6; }

int timeout_ms(double s) { return s <= 0 ? 0 : static_cast<int>(s * 1000 + 0.5); }

// A numeric address and port as a socket address; false when `address` is not numeric.
bool to_sockaddr(const std::string& address, uint16_t port, sockaddr_storage* out, socklen_t* len) {
  *out = {};
  auto* v4 = reinterpret_cast<sockaddr_in*>(out);
  if (inet_pton(AF_INET, address.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(port);
    *len = sizeof(sockaddr_in);
    return true;
  }
  auto* v6 = reinterpret_cast<sockaddr_in6*>(out);
  if (inet_pton(AF_INET6, address.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(port);
    *len = sizeof(sockaddr_in6);
    return true;
  }
  return false;
}

std::string address_text(const sockaddr_storage& ss, bool with_port) {
  char buf[INET6_ADDRSTRLEN] = {};
  uint16_t port = 0;
  if (ss.ss_family == AF_INET) {
    const auto& a = reinterpret_cast<const sockaddr_in&>(ss);
    inet_ntop(AF_INET, &a.sin_addr, buf, sizeof buf);
    port = ntohs(a.sin_port);
  } else if (ss.ss_family == AF_INET6) {
    const auto& a = reinterpret_cast<const sockaddr_in6&>(ss);
    inet_ntop(AF_INET6, &a.sin6_addr, buf, sizeof buf);
    port = ntohs(a.sin6_port);
  }
  std::string out;
  if (with_port && ss.ss_family == AF_INET6) out += '[';
  out += buf;
  if (with_port && ss.ss_family == AF_INET6) out += ']';
  if (with_port) out.append(":").append(std::to_string(port));
  return out;
}

// Waits for a non-blocking connect() begun at t0 to end, within timeout_s. The outcome is asked of the kernel twice:
// SO_ERROR, then connect() again (EISCONN: connected; EALREADY: still going, so the wake-up was early), so that a
// wake-up without an error is never taken for a connection. The socket stays open.
Connect finish_connect(int fd, int rc, const sockaddr* to, socklen_t to_len, int64_t t0, double timeout_s) {
  Connect c;
  const int64_t deadline = t0 + static_cast<int64_t>(timeout_s * 1e9);
  if (rc != 0 && errno != EINPROGRESS) c.err = errno;
  while (rc != 0 && c.err == 0) {
    const int64_t left_ns = deadline - mono_ns();
    pollfd p{fd, POLLOUT, 0};
    int n = left_ns <= 0 ? 0 : ::poll(&p, 1, static_cast<int>((left_ns + 999'999) / 1'000'000));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      c.err = errno;
      break;
    }
    if (n == 0) {
      c.err = ETIMEDOUT;
      c.timed_out = true;
      break;
    }
    int err = 0;
    socklen_t len = sizeof err;
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
    if (err != 0) {
      c.err = err;
      break;
    }
    if (::connect(fd, to, to_len) == 0 || errno == EISCONN) break;
    if (errno != EALREADY && errno != EINPROGRESS && errno != EINTR) c.err = errno;
  }
  c.ok = c.err == 0;
  c.ms = ms_since(t0);
  if (c.ok) {
    sockaddr_storage local{};
    socklen_t len = sizeof local;
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) == 0) c.local = address_text(local, true);
  }
  return c;
}

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

// Opens a non-blocking TCP socket and connects it; `sock` keeps the descriptor for the caller.
Connect open_connect(const std::string& address, uint16_t port, double timeout_s, const std::string& bind_address,
                     Fd* sock) {
  const int64_t t0 = mono_ns();
  sockaddr_storage to{};
  socklen_t to_len = 0;
  Connect c;
  if (!to_sockaddr(address, port, &to, &to_len)) {
    c.err = EINVAL;
    return c;
  }
  sock->fd = ::socket(to.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (sock->fd < 0) {
    c.err = errno;
    return c;
  }
  if (!bind_address.empty()) {
    sockaddr_storage from{};
    socklen_t from_len = 0;
    if (!to_sockaddr(bind_address, 0, &from, &from_len) ||
        ::bind(sock->fd, reinterpret_cast<sockaddr*>(&from), from_len) != 0) {
      c.err = errno ? errno : EINVAL;
      return c;
    }
  }
  set_recverr(sock->fd, to.ss_family, true);  // who answers a failure, and how: read below
  int rc = ::connect(sock->fd, reinterpret_cast<sockaddr*>(&to), to_len);
  c = finish_connect(sock->fd, rc, reinterpret_cast<sockaddr*>(&to), to_len, t0, timeout_s);
  if (c.ok) set_recverr(sock->fd, to.ss_family, false);  // the connection behaves as any other from here
  if (!c.ok && !c.timed_out) c.icmp = read_error_queue(sock->fd);
  if (c.timed_out) {
    tcp_info info{};
    socklen_t len = sizeof info;
    if (getsockopt(sock->fd, IPPROTO_TCP, TCP_INFO, &info, &len) == 0) {
      c.syn_retries = info.tcpi_retransmits;
      c.retries_in_flight = static_cast<int>(info.tcpi_retrans);
    }
  }
  return c;
}

}  // namespace

std::string Connect::describe() const {
  if (ok) return "connected in " + format_ms(ms) + " ms";
  if (timed_out) return "no answer within " + format_ms(ms) + " ms (timed out)";
  return errno_name(err) + " (" + std::strerror(err) + ", errno " + std::to_string(err) + ") after " + format_ms(ms) +
         " ms" + (icmp.present ? ": " + icmp.describe() : "");
}

bool is_numeric_address(const std::string& host) {
  in6_addr buf;
  return inet_pton(AF_INET, host.c_str(), &buf) == 1 || inet_pton(AF_INET6, host.c_str(), &buf) == 1;
}

bool is_loopback_address(const std::string& address) {
  in_addr v4;
  if (inet_pton(AF_INET, address.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6;
  if (inet_pton(AF_INET6, address.c_str(), &v6) != 1) return false;
  if (IN6_IS_ADDR_LOOPBACK(&v6)) return true;
  return IN6_IS_ADDR_V4MAPPED(&v6) && v6.s6_addr[12] == 127;
}

bool is_fake_ip_address(const std::string& address) {
  in_addr v4;
  if (inet_pton(AF_INET, address.c_str(), &v4) != 1) return false;
  return (ntohl(v4.s_addr) & 0xfffe0000u) == 0xc6120000u;  // 198.18.0.0/15
}

namespace {
// Lookups under way, abandoned ones included: at most kMaxLookups threads wait on the resolver at once, however many
// targets are checked (a resolver that never answers would otherwise keep a thread per target). Never destroyed: an
// abandoned lookup may end after main() has returned.
constexpr int kMaxLookups = 32;
struct Lookups {
  std::mutex mu;
  std::condition_variable cv;
  int live = 0;
};
Lookups& lookups() {
  static Lookups* l = new Lookups;
  return *l;
}
}  // namespace

Resolution resolve_host(const std::string& host, double timeout_s, Lookup how) {
  struct Shared {
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
    Resolution r;
  };
  auto shared = std::make_shared<Shared>();
  const int64_t t0 = mono_ns();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms(timeout_s));
  {
    Lookups& l = lookups();
    std::unique_lock lock(l.mu);
    if (!l.cv.wait_until(lock, deadline, [&] { return l.live < kMaxLookups; })) {
      Resolution r;
      r.timed_out = true;
      r.error = "no answer within " + format_seconds(timeout_s) + " (" + std::to_string(l.live) +
                " earlier lookups still wait on the resolver)";
      r.ms = ms_since(t0);
      return r;
    }
    ++l.live;
  }
  // getaddrinfo has no timeout of its own (the resolver's is 5 s a try, several tries): it runs on a thread of its
  // own, which is left behind when our time is up (it ends by itself; the process does not wait for it). Where no
  // thread can be started (an address-space or process limit), it runs here, bounded by the resolver's own timeouts.
  auto lookup = [shared, host, how] {
    addrinfo hints{}, *res = nullptr;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_family = how == Lookup::ipv6_mapped ? AF_INET6 : AF_UNSPEC;
    hints.ai_flags = how == Lookup::configured ? AI_ADDRCONFIG : how == Lookup::ipv6_mapped ? AI_V4MAPPED | AI_ALL : 0;
    Resolution r;
    r.gai_error = getaddrinfo(host.c_str(), nullptr, &hints, &res);
    if (r.gai_error != 0) r.error = gai_strerror(r.gai_error);
    for (addrinfo* a = res; a; a = a->ai_next) {
      sockaddr_storage ss{};
      std::memcpy(&ss, a->ai_addr, std::min<size_t>(a->ai_addrlen, sizeof ss));
      std::string text = address_text(ss, false);
      bool seen = false;
      for (const auto& s : r.addresses) seen |= s == text;
      if (!seen && !text.empty()) r.addresses.push_back(text);
    }
    if (res) freeaddrinfo(res);
    {
      std::lock_guard lock(shared->mu);
      shared->r = std::move(r);
      shared->done = true;
      shared->cv.notify_all();
    }
    Lookups& l = lookups();
    std::lock_guard slot(l.mu);
    --l.live;
    l.cv.notify_one();
  };
  try {
    std::thread(lookup).detach();
  } catch (const std::system_error&) {
    lookup();
  }
  std::unique_lock lock(shared->mu);
  shared->cv.wait_until(lock, deadline, [&] { return shared->done; });
  Resolution r = shared->done ? shared->r : Resolution{};
  if (!shared->done) {
    r.timed_out = true;
    r.error = "no answer within " + format_seconds(timeout_s);
  }
  r.ms = ms_since(t0);
  return r;
}

Connect tcp_connect(const std::string& address, uint16_t port, double timeout_s, const std::string& bind_address) {
  Fd sock;
  return open_connect(address, port, timeout_s, bind_address, &sock);
}

namespace {
// Reads a proxy's status line on `fd` until `deadline_ns` (CLOCK_MONOTONIC): into t, or why none came (`waited`: what
// the proxy was asked, for the messages).
void read_status_line(int fd, int64_t deadline_ns, const std::string& waited, double timeout_s, Tunnel& t) {
  std::string got;
  while (got.find("\r\n") == std::string::npos && got.size() < 4096) {
    pollfd p{fd, POLLIN, 0};
    const int64_t left = deadline_ns - mono_ns();
    int n = left <= 0 ? 0 : ::poll(&p, 1, static_cast<int>((left + 999'999) / 1'000'000));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      t.error = "the proxy sent no answer " + waited + " within " + format_seconds(timeout_s);
      return;
    }
    char buf[512];
    ssize_t r = ::recv(fd, buf, sizeof buf, 0);
    if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) {
      t.error = "the proxy closed the connection without an answer " + waited;
      t.hung_up = true;
      return;
    }
    if (r > 0) got.append(buf, static_cast<size_t>(r));
  }
  t.status_line = std::string(trim(got.substr(0, got.find("\r\n"))));
  auto parts = split(t.status_line, ' ');
  if (parts.size() >= 2 && parts[0].starts_with("HTTP/")) {
    if (auto code = parse_int(parts[1])) t.status = static_cast<int>(*code);
  }
  if (t.status == 0) t.error = "the proxy's answer is not HTTP: " + t.status_line.substr(0, 80);
}
}  // namespace

Tunnel http_connect(const std::string& proxy_address, uint16_t proxy_port, const std::string& host, uint16_t port,
                    double timeout_s) {
  const int64_t t0 = mono_ns();
  Tunnel t;
  Fd sock;
  t.to_proxy = open_connect(proxy_address, proxy_port, timeout_s, "", &sock);
  if (!t.to_proxy.ok) return t;
  const std::string authority = host_port(host, port);
  const std::string request = "CONNECT " + authority + " HTTP/1.1\r\nHost: " + authority + "\r\n\r\n";
  auto left_ms = [&] { return std::max(0, timeout_ms(timeout_s) - static_cast<int>(ms_since(t0))); };
  size_t sent = 0;
  while (sent < request.size()) {
    ssize_t n = ::send(sock.fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno != EAGAIN && errno != EINTR) {
      t.error = "the proxy closed the connection while the request was sent (" + errno_name(errno) + ")";
      t.hung_up = true;
      return t;
    }
    pollfd p{sock.fd, POLLOUT, 0};
    if (::poll(&p, 1, left_ms()) <= 0) {
      t.error = "the proxy took no request within " + format_seconds(timeout_s);
      return t;
    }
  }
  read_status_line(sock.fd, t0 + static_cast<int64_t>(timeout_s * 1e9), "to CONNECT", timeout_s, t);
  return t;
}

Tunnel proxy_greeting(const std::string& proxy_address, uint16_t proxy_port, double wait_s, double timeout_s) {
  Tunnel t;
  Fd sock;
  t.to_proxy = open_connect(proxy_address, proxy_port, timeout_s, "", &sock);
  if (!t.to_proxy.ok) return t;
  read_status_line(sock.fd, mono_ns() + static_cast<int64_t>(wait_s * 1e9), "before a request", wait_s, t);
  return t;
}

UdpSource udp_source_toward(const std::string& address, uint16_t port) {
  UdpSource u;
  sockaddr_storage to{};
  socklen_t len = 0;
  if (!to_sockaddr(address, port, &to, &len)) {
    u.err = EINVAL;
    return u;
  }
  Fd sock;
  sock.fd = ::socket(to.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (sock.fd < 0 || ::connect(sock.fd, reinterpret_cast<sockaddr*>(&to), len) != 0) {
    u.err = errno;
    return u;
  }
  sockaddr_storage local{};
  socklen_t local_len = sizeof local;
  if (getsockname(sock.fd, reinterpret_cast<sockaddr*>(&local), &local_len) != 0) {
    u.err = errno;
    return u;
  }
  u.address = address_text(local, false);
  return u;
}

// libcurl, loaded at run time (like NCCL and NVML): its few entry points and the option and info numbers of its
// stable ABI (curl/curl.h: CURLOPTTYPE_* and CURLINFO_* bases), declared here so the binary needs no curl headers.
namespace {
constexpr int kOptUrl = 10002, kOptProxy = 10004, kOptCaInfo = 10065, kOptWriteFunction = 20011, kOptNoSignal = 99,
              kOptTimeoutMs = 155, kOptConnectTimeoutMs = 156, kOptFollow = 52, kOptSockoptFunction = 20148,
              kOptSockoptData = 10149;
constexpr int kInfoResponseCode = 0x200000 + 2, kInfoConnectCode = 0x200000 + 22, kInfoPrimaryIp = 0x100000 + 32,
              kInfoAppConnectTime = 0x300000 + 33;
constexpr int kCurlWriteError = 23;

struct Curl {
  void* (*easy_init)() = nullptr;
  int (*easy_setopt)(void*, int, ...) = nullptr;
  int (*easy_perform)(void*) = nullptr;
  int (*easy_getinfo)(void*, int, ...) = nullptr;
  void (*easy_cleanup)(void*) = nullptr;
  const char* (*easy_strerror)(int) = nullptr;
  const char* (*version)() = nullptr;
  int (*global_init)(long) = nullptr;
  std::string problem;
};

const Curl& curl() {
  static const Curl c = [] {
    Curl k;
    void* h = nullptr;
    for (const char* name : {"libcurl.so.4", "libcurl-gnutls.so.4", "libcurl-nss.so.4"})
      if ((h = dlopen(name, RTLD_NOW | RTLD_LOCAL))) break;
    if (!h) {
      k.problem = "libcurl is not on this machine (libcurl.so.4: install libcurl4)";
      return k;
    }
    auto sym = [&](auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(h, name));
    };
    sym(k.easy_init, "curl_easy_init");
    sym(k.easy_setopt, "curl_easy_setopt");
    sym(k.easy_perform, "curl_easy_perform");
    sym(k.easy_getinfo, "curl_easy_getinfo");
    sym(k.easy_cleanup, "curl_easy_cleanup");
    sym(k.easy_strerror, "curl_easy_strerror");
    sym(k.version, "curl_version");
    sym(k.global_init, "curl_global_init");
    if (!k.easy_init || !k.easy_setopt || !k.easy_perform || !k.easy_getinfo || !k.easy_cleanup || !k.easy_strerror ||
        !k.version)
      k.problem = "the libcurl found lacks curl_easy_* entry points";
    return k;
  }();
  return c;
}

// CURLOPT_SOCKOPTFUNCTION: the socket before it connects; its TCP_MAXSEG, when asked for, caps the segments both ways
// (ours, and through the MSS option of our SYN, the server's).
int set_mss(void* mss, int fd, int /*purpose*/) {
  const int v = *static_cast<int*>(mss);
  if (v > 0) ::setsockopt(fd, IPPROTO_TCP, TCP_MAXSEG, &v, sizeof v);
  return 0;  // CURL_SOCKOPT_OK
}

// The body is not ours to read: the first 64 KiB are taken and the transfer ends there.
size_t discard(char*, size_t size, size_t n, void* seen) {
  auto& total = *static_cast<size_t*>(seen);
  total += size * n;
  return total > (64u << 10) ? 0 : size * n;
}
}  // namespace

Fetch http_fetch(const std::string& url, double timeout_s, const std::string& proxy, const std::string& ca_file,
                 int mss) {
  Fetch f;
  const Curl& c = curl();
  if (!c.problem.empty()) {
    f.library = c.problem;
    return f;
  }
  f.library = c.version();
  void* h = c.easy_init();
  if (!h) {
    f.library += " (curl_easy_init failed)";
    return f;
  }
  f.attempted = true;
  const long ms = timeout_ms(timeout_s);
  size_t seen = 0;
  c.easy_setopt(h, kOptUrl, url.c_str());
  c.easy_setopt(h, kOptNoSignal, 1L);
  c.easy_setopt(h, kOptTimeoutMs, ms);
  c.easy_setopt(h, kOptConnectTimeoutMs, ms);
  c.easy_setopt(h, kOptFollow, 0L);
  if (mss > 0) {
    c.easy_setopt(h, kOptSockoptFunction, &set_mss);
    c.easy_setopt(h, kOptSockoptData, &mss);
  }
  c.easy_setopt(h, kOptWriteFunction, &discard);
  c.easy_setopt(h, 10001 /* CURLOPT_WRITEDATA */, &seen);
  if (proxy == "-")
    c.easy_setopt(h, kOptProxy, "");
  else if (!proxy.empty())
    c.easy_setopt(h, kOptProxy, proxy.c_str());
  if (!ca_file.empty()) c.easy_setopt(h, kOptCaInfo, ca_file.c_str());
  const int64_t t0 = mono_ns();
  f.curl_code = c.easy_perform(h);
  f.ms = ms_since(t0);
  long status = 0, connect_status = 0;
  char* ip = nullptr;
  double app = 0;
  c.easy_getinfo(h, kInfoResponseCode, &status);
  c.easy_getinfo(h, kInfoConnectCode, &connect_status);
  c.easy_getinfo(h, kInfoPrimaryIp, &ip);
  c.easy_getinfo(h, kInfoAppConnectTime, &app);
  f.http_status = status;
  f.connect_status = connect_status;
  f.primary_ip = ip ? ip : "";
  f.tls = app > 0;
  if (f.curl_code == kCurlWriteError && status > 0) f.curl_code = 0;  // we stopped reading the body
  if (f.curl_code != 0) f.curl_error = c.easy_strerror(f.curl_code);
  c.easy_cleanup(h);
  return f;
}

}  // namespace coldstart::net
