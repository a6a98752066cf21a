// doctor net --peers: the ranks meet at a coordinator that rank 0 hosts (coord::Server, as `coldstart worker` does
// under an outside launcher), swap the endpoints they listen on, connect to each other all at once, and hand rank 0
// their rows. The meeting, the listener, the all-at-once connects and the matrix are one protocol read top to bottom
// (some 600 lines); apart, each would only make sense beside the others.
#include "net/peers.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <set>
#include <system_error>
#include <thread>
#include <tuple>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "coord/address.h"
#include "coord/client.h"
#include "coord/server.h"
#include "launch/external.h"
#include "net/host.h"
#include "net/ifselect.h"
#include "net/netlink.h"
#include "util/clock.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/json.h"
#include "util/strings.h"

namespace coldstart::net {
namespace {
using nlohmann::json;

// Connects of one rank at once: all of them up to this many peers (one wave of timeouts), then waves.
constexpr size_t kMaxParallelConnects = 256;

const char* process_env(const char* k) { return std::getenv(k); }

// ---- This rank's endpoint ---------------------------------------------------------------------------------------

// The interface holding `address` ("" when none does).
std::string interface_of(const std::string& address) {
  ifaddrs* all = nullptr;
  if (getifaddrs(&all) != 0) return "";
  std::string found;
  for (ifaddrs* a = all; a && found.empty(); a = a->ifa_next) {
    if (!a->ifa_addr || (a->ifa_addr->sa_family != AF_INET && a->ifa_addr->sa_family != AF_INET6)) continue;
    char buf[NI_MAXHOST] = {};
    socklen_t len = a->ifa_addr->sa_family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
    if (getnameinfo(a->ifa_addr, len, buf, sizeof buf, nullptr, 0, NI_NUMERICHOST) != 0) continue;
    std::string text = buf;
    if (auto pct = text.find('%'); pct != std::string::npos) text.resize(pct);  // fe80::1%eth0
    if (text == address) found = a->ifa_name;
  }
  freeifaddrs(all);
  return found;
}

PeerEndpoint choose_endpoint(int rank, const PeerOptions& opts, const GetEnv& env) {
  PeerEndpoint e;
  e.rank = rank;
  e.host = hostname();
  if (!opts.address.empty() && !is_numeric_address(opts.address))
    throw InputError("--peers-address " + shown(opts.address) +
                     ": not a numeric address; give an address of this host");
  HostFacts facts = collect_host(Root("/"));
  const IfChoice gloo = gloo_choice(facts.context.interfaces, env, facts);
  if (!gloo.interfaces.empty()) e.gloo_interface = gloo.interfaces.front();
  e.gloo_address = gloo.address;
  e.gloo_problem = gloo.problem;
  if (!opts.address.empty()) {
    e.address = opts.address;
    e.interface = interface_of(opts.address);
    return e;
  }
  IfChoice choice = nccl_choice(facts.context.interfaces, env);
  if (!choice.interfaces.empty()) e.interface = choice.interfaces.front();
  e.address = choice.address;
  if (!e.address.empty())
    e.caveat = choice.problem;  // loopback, a bridge: fine while every rank is on this host
  else
    e.problem = !choice.problem.empty() ? choice.problem
                : e.interface.empty()   ? "NCCL finds no interface (" + choice.rule + ")"
                                        : "NCCL picks " + e.interface + ", which has no address";
  return e;
}

// Where this rank listens while its peers connect: every connection is accepted and closed at once (the handshake is
// what counts; the kernel completes it even before accept).
class Listener {
 public:
  Listener() = default;
  Listener(const Listener&) = delete;
  Listener& operator=(const Listener&) = delete;
  ~Listener() { close(); }

  // Listens on address, any port; the port, or 0 with *error saying why.
  int open(const std::string& address, std::string* error) {
    addrinfo hints{}, *res = nullptr;
    hints.ai_flags = AI_NUMERICHOST | AI_PASSIVE;
    hints.ai_socktype = SOCK_STREAM;
    if (int rc = getaddrinfo(address.c_str(), "0", &hints, &res); rc != 0 || !res) {
      *error = "cannot listen on " + address + " (" + gai_strerror(rc) + ")";
      return 0;
    }
    fd_ = ::socket(res->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    bool ok = fd_ >= 0 && ::bind(fd_, res->ai_addr, res->ai_addrlen) == 0 && ::listen(fd_, SOMAXCONN) == 0;
    const int e = errno;
    freeaddrinfo(res);
    sockaddr_storage ss{};
    socklen_t len = sizeof ss;
    if (ok) ok = getsockname(fd_, reinterpret_cast<sockaddr*>(&ss), &len) == 0;
    stop_fd_ = ok ? eventfd(0, EFD_CLOEXEC) : -1;
    if (!ok || stop_fd_ < 0) {
      *error = fmt::format("cannot listen on {} ({}: {})", address, errno_name(ok ? errno : e),
                           std::strerror(ok ? errno : e));
      close();
      return 0;
    }
    try {
      thread_ = std::thread([this] { serve(); });
    } catch (const std::system_error& e) {  // no thread to be had (an address-space or process limit)
      *error = fmt::format("cannot start the listener's thread on {} ({})", address, e.what());
      close();
      return 0;
    }
    const auto* v4 = reinterpret_cast<const sockaddr_in*>(&ss);
    const auto* v6 = reinterpret_cast<const sockaddr_in6*>(&ss);
    return ntohs(ss.ss_family == AF_INET6 ? v6->sin6_port : v4->sin_port);
  }

  void close() {
    if (thread_.joinable()) {
      uint64_t one = 1;
      while (::write(stop_fd_, &one, sizeof one) < 0 && errno == EINTR) {
      }
      thread_.join();
    }
    if (fd_ >= 0) ::close(fd_);
    if (stop_fd_ >= 0) ::close(stop_fd_);
    fd_ = stop_fd_ = -1;
  }

 private:
  void serve() {
    pollfd p[2] = {{fd_, POLLIN, 0}, {stop_fd_, POLLIN, 0}};
    while (true) {
      int n = ::poll(p, 2, -1);
      if (n < 0 && errno != EINTR) return;
      if (p[1].revents) return;
      if (!(p[0].revents & POLLIN)) continue;
      int c;
      while ((c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC)) >= 0) ::close(c);
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) ::usleep(10'000);  // no spin
    }
  }

  int fd_ = -1;
  int stop_fd_ = -1;
  std::thread thread_;
};

// ---- The meeting point --------------------------------------------------------------------------------------------

struct Meeting {
  std::string host;  // where rank 0's coordinator is reached
  uint16_t port = 0;
  std::string origin;  // what named the host, for messages
  std::string bind;    // rank 0: where its coordinator listens
  std::string token;
};

Meeting meeting_point(const launch::ExternalRank& who, const PeerOptions& opts, const GetEnv& env) {
  Meeting m;
  m.host = who.coord_host;
  int port = who.coord_port;
  m.origin = who.launcher + "'s rank-0 host";
  if (!opts.coord.empty()) {
    // The same forms as a HOST:PORT target, checked the same way (a bad one named in one line, shown()).
    Target t;
    try {
      t = parse_target(opts.coord, "--coord");
    } catch (const InputError&) {
      throw InputError("--coord " + shown(opts.coord) +
                       ": expected HOST:PORT (e.g. 10.0.0.5:29500 or [::1]:29500), rank 0's host and a free port");
    }
    if (t.url())
      throw InputError("--coord " + shown(opts.coord) + ": expected HOST:PORT without a scheme (e.g. 10.0.0.5:29500)");
    m.host = t.host;
    port = t.port;
    m.origin = "--coord";
  }
  if (m.host.empty()) {
    if (who.local_world > 0 && who.local_world == who.world) {
      m.host = "127.0.0.1";  // one node
      m.origin = "one node";
    } else {
      throw InputError("doctor net --peers: " + who.launcher +
                       " does not say where rank 0 runs; give --coord HOST:PORT (rank 0's host and a free port, the "
                       "same on every rank)");
    }
  }
  if (port == 0) {
    if (const char* p = env("COLDSTART_COORD_PORT"); p && *p) {
      auto v = parse_int(p);
      if (!v || *v <= 0 || *v > 65535)
        throw InputError("COLDSTART_COORD_PORT=" + shown(p) +
                         ": not a port; set COLDSTART_COORD_PORT to a port from 1 to 65535, the same on every rank");
      port = static_cast<int>(*v);
    } else {
      port = launch::derived_port(who.job_id);
    }
  }
  m.port = static_cast<uint16_t>(port);
  m.token = launch::external_token(who, env);
  // A loopback host stays loopback; a numeric address must be rank 0's own; a name listens on every address, since it
  // may resolve to 127.0.1.1 on rank 0's host (Debian's /etc/hosts) while the others reach it by its real address.
  if (m.host == "localhost")
    m.bind = "127.0.0.1";
  else if (is_numeric_address(m.host))
    m.bind = m.host;
  else
    m.bind = "0.0.0.0";
  return m;
}

// Rank 0's coordinator, served on a thread of its own while rank 0 is a rank like the others.
class HostedCoordinator {
 public:
  HostedCoordinator(const Meeting& m, int world)
      : server_(coord::ServerOptions{m.bind, m.port, m.token, 10'000, 10'000}) {
    server_.begin_trial(0, world);
    try {
      thread_ = std::thread([this] { serve(); });
    } catch (const std::system_error& e) {  // no thread to be had (an address-space or process limit)
      throw RuntimeError(
          fmt::format("rank 0 cannot start its coordinator's thread ({}); raise the limit on this "
                      "process's memory or threads (ulimit -v, ulimit -u)",
                      e.what()));
    }
  }
  HostedCoordinator(const HostedCoordinator&) = delete;
  HostedCoordinator& operator=(const HostedCoordinator&) = delete;
  ~HostedCoordinator() { stop(false); }

  // Stops serving; with `linger`, only once every rank has hung up (at most 2 s), so that the last replies reach them.
  void stop(bool linger) {
    if (!thread_.joinable()) return;
    linger_ = linger;
    stop_ = true;
    thread_.join();
  }
  // After stop(): who is missing: the ranks that never said hello, and those that hung up early.
  std::string missing(double wait_s) const {
    std::vector<int> never;
    std::string out;
    for (int r = 0; r < server_.nranks(); ++r)
      if (!server_.joined().count(r)) never.push_back(r);
    if (!never.empty())
      out = fmt::format("; {} {} never joined within {} (started? the same launcher variables?)",
                        never.size() == 1 ? "rank" : "ranks", format_ranks(never), format_seconds(wait_s));
    for (const auto& [r, slot] : server_.joined())
      if (!slot.connected) out += fmt::format("; rank {} left ({})", r, slot.error.empty() ? "hung up" : slot.error);
    return out;
  }

 private:
  void serve() {
    try {
      while (!stop_) server_.poll(20);
      const int64_t until = mono_ns() + 2'000'000'000;
      auto anyone = [&] {
        for (const auto& [r, s] : server_.joined())
          if (s.connected) return true;
        return false;
      };
      while (linger_ && anyone() && mono_ns() < until) server_.poll(20);
    } catch (const std::exception&) {  // the ranks see their connections close and say so
    }
  }

  coord::Server server_;
  std::thread thread_;
  std::atomic<bool> stop_{false}, linger_{false};
};

// Joins the coordinator: first a bounded TCP connect to it, retried until wait_s (the coordinator's own connect would
// block for minutes on a path that drops packets), then the hello.
coord::Client meet_at(const Meeting& m, const launch::ExternalRank& who, double wait_s) {
  const int64_t deadline = mono_ns() + static_cast<int64_t>(wait_s * 1e9);
  auto left_s = [&] { return static_cast<double>(deadline - mono_ns()) / 1e9; };
  std::string address = m.host;
  if (!is_numeric_address(address)) {
    Resolution r = resolve_host(m.host, std::min(5.0, wait_s));
    if (r.addresses.empty())
      throw RuntimeError(fmt::format("rank {}: rank 0's host {} ({}) does not resolve: {}", who.rank, m.host, m.origin,
                                     r.error.empty() ? "no address" : r.error));
    address = r.addresses.front();
  }
  const std::string where = coord::host_port(address, m.port);
  Connect c;
  while (true) {
    c = tcp_connect(address, m.port, std::clamp(left_s(), 0.05, 2.0));
    if (c.ok || left_s() <= 0) break;
    ::usleep(50'000);
  }
  if (!c.ok) {
    const bool never = c.err == ECONNREFUSED;
    throw RuntimeError(
        fmt::format("rank {}: cannot reach rank 0's coordinator at {} ({} {}) within {}: {}{}", who.rank, where,
                    m.origin, m.host, format_seconds(wait_s), c.describe(),
                    never ? " (nothing listening: did rank 0 start, with the same COLDSTART_COORD_PORT / --coord?)"
                          : fmt::format(" ({} layer)", name(layer_of_connect_error(c.err)))));
  }
  coord::Client client;
  client.connect(address, m.port, coord::Hello{m.token, 0, who.rank, who.world},
                 static_cast<int>(std::max(left_s(), 1.0) * 1000));
  return client;
}

// ---- The probes -----------------------------------------------------------------------------------------------------

std::vector<PeerCell> probe_row(const std::vector<PeerEndpoint>& eps, int me, double timeout_s) {
  std::vector<PeerCell> row(eps.size());
  std::vector<int> targets;
  for (int to = 0; to < static_cast<int>(eps.size()); ++to) {
    if (to == me) continue;
    if (auto pre = pair_precheck(eps[static_cast<size_t>(me)], eps[static_cast<size_t>(to)]))
      row[static_cast<size_t>(to)] = *pre;
    else
      targets.push_back(to);
  }
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next++) < targets.size();) {
      const PeerEndpoint& to = eps[static_cast<size_t>(targets[i])];
      PeerCell cell = peer_cell(
          tcp_connect(to.address, static_cast<uint16_t>(to.port), timeout_s, eps[static_cast<size_t>(me)].address),
          to.address);
      if (!cell.ok) refine_on_link(cell, to.address);
      row[static_cast<size_t>(to.rank)] = cell;
    }
  };
  std::vector<std::thread> pool;
  pool.reserve(std::min(targets.size(), kMaxParallelConnects));  // growing it could throw with threads running
  for (size_t i = 0; i < std::min(targets.size(), kMaxParallelConnects); ++i) {
    try {
      pool.emplace_back(work);
    } catch (const std::system_error&) {  // out of threads: the ones running do the rest
      break;
    }
  }
  if (pool.empty()) work();
  for (auto& t : pool) t.join();
  return row;
}

}  // namespace

void note_cross_host_problems(std::vector<PeerEndpoint>& eps) {
  std::set<std::string> hosts;
  for (const auto& e : eps) hosts.insert(e.host);
  if (hosts.size() < 2) return;
  for (auto& e : eps) {
    if (!e.problem.empty()) continue;
    if (!e.caveat.empty())
      e.problem = e.caveat;
    else if (is_loopback_address(e.address))
      e.problem = fmt::format(
          "listens on {}{}, a loopback address, while the ranks run on {} hosts; set NCCL_SOCKET_IFNAME to an "
          "interface the hosts reach each other on",
          e.address, e.interface.empty() ? "" : " (" + e.interface + ")", hosts.size());
  }
}

std::optional<PeerCell> pair_precheck(const PeerEndpoint& from, const PeerEndpoint& to) {
  auto fail = [](Layer l, std::string why) {
    PeerCell c;
    c.layer = l;
    c.why = std::move(why);
    return std::optional<PeerCell>(std::move(c));
  };
  if (from.address.empty())
    return fail(Layer::context, fmt::format("rank {} has no address to connect from: {}", from.rank, from.problem));
  if (to.address.empty() || to.port == 0)
    return fail(Layer::context, fmt::format("rank {} has no address to listen on: {}", to.rank, to.problem));
  if (from.host != to.host && is_loopback_address(to.address))
    return fail(Layer::route,
                fmt::format("peer advertised a loopback address ({}) from another host ({})", to.address, to.host));
  if (from.host != to.host && is_loopback_address(from.address))
    return fail(Layer::route, fmt::format("this rank would connect from a loopback address ({}) to another host ({})",
                                          from.address, to.host));
  return std::nullopt;
}

void refine_on_link(PeerCell& cell, const std::string& peer_address) {
  if (cell.layer != Layer::forward && cell.layer != Layer::next_hop) return;
  const Route route = route_to(peer_address);
  if (!route.ok() || !route.gateway.empty()) return;  // through a gateway: the errno's layer stands
  const Neighbour n = neighbour(peer_address, route.ifindex);
  if (n.found && !n.resolved()) {
    cell.layer = Layer::next_hop;
    cell.why = errno_name(cell.err) + ": the peer, on-link on " + route.dev + ", does not answer ARP (" + n.state + ")";
  } else if (n.found) {
    cell.layer = Layer::transport;
    cell.why =
        errno_name(cell.err) +
        fmt::format(" after {:.1f} s: the peer, on-link on {}, answers ARP but not ", cell.ms / 1000, route.dev) +
        "the connection: a firewall on it or between drops it";
  }
}

PeerCell peer_cell(const Connect& c, const std::string& peer_address) {
  PeerCell cell;
  cell.ok = c.ok;
  cell.err = c.err;
  cell.ms = c.ms;
  if (c.ok) return cell;
  cell.layer = layer_of_connect_error(c.err);
  const std::string err = errno_name(c.err);
  switch (c.err) {
    case ETIMEDOUT:
      cell.why = fmt::format("ETIMEDOUT after {:.1f} s: dropped beyond the first hop", c.ms / 1000);
      break;
    case ECONNREFUSED: cell.why = "ECONNREFUSED: nothing listening"; break;
    case EHOSTUNREACH:
      cell.why = "EHOSTUNREACH: no ARP/NDP answer from the next hop, or a reject from beyond it";
      break;
    case ENETUNREACH: cell.why = "ENETUNREACH: no route toward the peer's address"; break;
    case EPERM:
    case EACCES: cell.why = err + ": refused inside this host (a firewall's output rule, a sandbox)"; break;
    case ECONNRESET: cell.why = "ECONNRESET: reset during the handshake"; break;
    case EADDRNOTAVAIL:
      cell.layer = Layer::context;
      cell.why = "EADDRNOTAVAIL: this rank's own address cannot be bound";
      break;
    default: cell.why = err + ": " + std::strerror(c.err); break;
  }
  const IcmpKind kind = c.icmp.kind();
  if (c.dropped_here()) {
    cell.layer = Layer::transport;
    cell.why = fmt::format(
        "ETIMEDOUT after {:.1f} s: the SYN's retransmissions never left this host (TCP_INFO): its "
        "own output rules drop them",
        c.ms / 1000);
  } else if (kind == IcmpKind::prohibited || kind == IcmpKind::port_unreachable) {
    const bool peer = !peer_address.empty() && c.icmp.from == peer_address;
    cell.layer = peer ? Layer::transport : Layer::forward;
    cell.why = err + ": " + c.icmp.describe() +
               (peer ? ": the peer's own firewall rejects the port" : ": a firewall there rejects it");
  } else if (kind != IcmpKind::none) {
    cell.why += " (" + c.icmp.describe() + ")";
  }
  return cell;
}

namespace {

// run_peers' steps, in their order.

// This rank in its launcher's job, with the options checked; nothing is opened yet.
launch::ExternalRank this_rank(const PeerOptions& opts, const GetEnv& env) {
  check_environment(env, true);
  auto who = launch::detect_launcher(env);
  if (!who)
    throw InputError(fmt::format(
        "doctor net --peers: no launcher in the environment ({}); start it on every rank with one of those launchers, "
        "e.g. torchrun --nnodes N --nproc-per-node 1 ... coldstart doctor net --peers",
        launch::kLauncherVariables));
  if (!(opts.timeout_s > 0 && opts.timeout_s <= 600))
    throw InputError(fmt::format("doctor net --timeout {}: give seconds from 0 to 600", opts.timeout_s));
  if (!(opts.wait_s > 0 && opts.wait_s <= 86'400))
    throw InputError(fmt::format("doctor net --peers wait {}: give seconds from 0 to 86400", opts.wait_s));
  return *who;
}

// This rank's endpoint, listening on NCCL's choice (or --peers-address) when it has an address.
PeerEndpoint listen_on_endpoint(int me, const PeerOptions& opts, const GetEnv& env, Listener& listener) {
  PeerEndpoint self = choose_endpoint(me, opts, env);
  if (!self.address.empty()) {
    std::string error;
    self.port = listener.open(self.address, &error);
    if (!self.port && !opts.address.empty())
      throw InputError("--peers-address " + shown(opts.address) + ": " + error + "; give an address of this host");
    if (!self.port) self.problem = error;
  }
  if (opts.advertise_port) self.port = opts.advertise_port;
  return self;
}

// Rank 0's coordinator, where the ranks meet.
std::unique_ptr<HostedCoordinator> host_meeting(const Meeting& meet, int world) {
  try {
    return std::make_unique<HostedCoordinator>(meet, world);
  } catch (const InputError& e) {
    throw InputError(fmt::format(
        "doctor net --peers: rank 0 cannot host the coordinator on {} ({} {}): {}; is rank 0 on the host the "
        "launcher names? (else give --coord HOST:PORT)",
        coord::host_port(meet.bind, meet.port), meet.origin, meet.host, e.what()));
  } catch (const RuntimeError& e) {
    throw RuntimeError(std::string("doctor net --peers: ") + e.what() +
                       "; give every rank a free port with COLDSTART_COORD_PORT=PORT or --coord HOST:PORT");
  }
}

// Puts this rank's endpoint, and once every rank has, takes them all (by rank).
std::vector<PeerEndpoint> swap_endpoints(coord::Client& client, const PeerEndpoint& self, int world, int wait_ms) {
  client.put(fmt::format("peer/{}", self.rank), dump_json(to_json(self)));
  client.barrier("peers/endpoints", wait_ms);
  std::vector<PeerEndpoint> eps;
  for (int r = 0; r < world; ++r) {
    std::string key = fmt::format("peer/{}", r);
    const std::string text = client.get(key, wait_ms);
    try {
      eps.push_back(peer_endpoint_from_text(text, key));
    } catch (const InputError& e) {
      throw RuntimeError(
          fmt::format("rank {}'s endpoint is malformed ({}); run the same coldstart build everywhere", r, e.what()));
    }
  }
  return eps;
}

// How long a rank waits for every row: the wait, and a timeout for each wave of connects.
int rows_wait_ms(const PeerOptions& opts, int world) {
  const size_t waves = (static_cast<size_t>(std::max(world - 1, 1)) + kMaxParallelConnects - 1) / kMaxParallelConnects;
  return static_cast<int>(
      std::min(opts.wait_s * 1000 + static_cast<double>(waves) * opts.timeout_s * 1000, static_cast<double>(INT_MAX)));
}

// Rank 0: every rank's row, into the matrix.
void gather_rows(coord::Client& client, PeerMatrix& m, int wait_ms) {
  for (int r = 0; r < m.world; ++r) {
    std::string key = fmt::format("row/{}", r);
    const std::string text = client.get(key, wait_ms);
    try {
      m.cells[static_cast<size_t>(r)] = peer_row_from_text(text, r, m.world, key);
    } catch (const InputError& e) {
      throw RuntimeError(
          fmt::format("rank {}'s row is malformed ({}); run the same coldstart build everywhere", r, e.what()));
    }
  }
}

}  // namespace

PeerMatrix run_peers(const PeerOptions& opts) {
  const GetEnv env = opts.env ? opts.env : GetEnv(process_env);
  const launch::ExternalRank who = this_rank(opts, env);
  const int me = who.rank, world = who.world;
  const Meeting meet = meeting_point(who, opts, env);
  Listener listener;
  const PeerEndpoint self = listen_on_endpoint(me, opts, env, listener);
  std::unique_ptr<HostedCoordinator> hosted = me == 0 ? host_meeting(meet, world) : nullptr;

  const int wait_ms = static_cast<int>(opts.wait_s * 1000);
  const char* step = "joining";
  try {
    coord::Client client = meet_at(meet, who, opts.wait_s);
    step = "swapping endpoints";
    PeerMatrix m;
    m.world = world;
    m.rank = me;
    m.endpoints = swap_endpoints(client, self, world, wait_ms);
    note_cross_host_problems(m.endpoints);

    step = "connecting";
    std::vector<PeerCell> row = probe_row(m.endpoints, me, opts.timeout_s);
    client.put(fmt::format("row/{}", me), dump_json(row_to_json(row, me)));
    client.barrier("peers/rows", rows_wait_ms(opts, world));  // every rank has probed: nobody connects here any more
    listener.close();

    step = "gathering rows";
    m.cells.resize(static_cast<size_t>(world));
    if (me == 0)
      gather_rows(client, m, wait_ms);
    else
      m.cells[static_cast<size_t>(me)] = std::move(row);
    client.barrier("peers/done", wait_ms);  // nobody leaves before rank 0 has gathered
    client = coord::Client();
    if (hosted) hosted->stop(true);
    return m;
  } catch (const RuntimeError& e) {
    std::string missing;
    if (hosted) {
      hosted->stop(false);
      missing = hosted->missing(opts.wait_s);
    }
    throw RuntimeError(fmt::format("doctor net --peers: rank {} while {}: {}{}", me, step, e.what(), missing));
  }
}

}  // namespace coldstart::net
