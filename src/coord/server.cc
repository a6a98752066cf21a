#include "coord/server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "coord/address.h"
#include "util/clock.h"
#include "util/error.h"

namespace coldstart::coord {
namespace {
using nlohmann::json;

bool same_token(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

std::string peer_name(const sockaddr_storage& ss) {
  char buf[INET6_ADDRSTRLEN] = "?";
  if (ss.ss_family == AF_INET)
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in&>(ss).sin_addr, buf, sizeof buf);
  else if (ss.ss_family == AF_INET6)
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6&>(ss).sin6_addr, buf, sizeof buf);
  return buf;
}
}  // namespace

Server::Server(ServerOptions opts) : opts_(std::move(opts)) {
  AddrList addr = resolve(opts_.bind_address, opts_.port, true, "--bind");
  listen_fd_ = ::socket(addr->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0) throw RuntimeError(std::string("coordinator: socket: ") + std::strerror(errno));
  int one = 1;
  setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(listen_fd_, addr->ai_addr, addr->ai_addrlen) != 0 || ::listen(listen_fd_, 4096) != 0) {
    const int e = errno;
    std::string why = std::strerror(e);
    ::close(listen_fd_);
    // An address this host does not have is the user's input; a port taken is the machine's state.
    if (e == EADDRNOTAVAIL)
      throw InputError("--bind " + opts_.bind_address + ": not an address of this host (" + why +
                       "); give one of its addresses, or 0.0.0.0");
    throw RuntimeError("coordinator: cannot listen on " + host_port(opts_.bind_address, opts_.port) + " (" + why + ")");
  }
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&ss), &len);
  port_ = ntohs(ss.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6&>(ss).sin6_port
                                         : reinterpret_cast<sockaddr_in&>(ss).sin_port);
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = listen_fd_;
  epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, listen_fd_, &ev);
}

Server::~Server() {
  for (auto& [fd, c] : conns_) ::close(fd);
  if (listen_fd_ >= 0) ::close(listen_fd_);
  if (epoll_fd_ >= 0) ::close(epoll_fd_);
}

void Server::begin_trial(int64_t trial_id, int nranks) {
  while (!conns_.empty()) close_conn(conns_.begin()->first, "");
  trial_id_ = trial_id;
  nranks_ = nranks;
  ranks_.clear();
  rank_fd_.clear();
  values_.clear();
  waiting_for_value_.clear();
  barriers_.clear();
  refusals_.clear();
  refusal_count_ = 0;
}

const RankSlot& Server::rank(int r) const {
  static const RankSlot never_joined;
  auto it = ranks_.find(r);
  return it == ranks_.end() ? never_joined : it->second;
}

bool Server::all_done() const {
  if (nranks_ <= 0 || ranks_.size() != static_cast<size_t>(nranks_)) return false;
  for (const auto& [r, slot] : ranks_)
    if (!slot.done) return false;
  return true;
}

void Server::note_refusal(const std::string& why) {
  ++refusal_count_;
  if (refusals_.size() < kKeptRefusals) refusals_.push_back(why);
}

void Server::poll(int timeout_ms) {
  if (accept_paused_until_ && mono_ns() >= accept_paused_until_) {  // rested: accept again
    accept_paused_until_ = 0;
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = listen_fd_;
    epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, listen_fd_, &ev);
  }
  epoll_event events[256];
  int n = epoll_wait(epoll_fd_, events, 256, timeout_ms);
  for (int i = 0; i < n; ++i) {
    int fd = events[i].data.fd;
    if (fd == listen_fd_) {
      accept_all();
      continue;
    }
    auto it = conns_.find(fd);
    if (it == conns_.end()) continue;
    if (events[i].events & EPOLLOUT) flush(*it->second);
    if (conns_.count(fd) && (events[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR))) on_readable(*conns_.at(fd));
  }
  expire(mono_ns());
}

void Server::accept_all() {
  while (true) {
    sockaddr_storage ss{};
    socklen_t len = sizeof ss;
    int fd = ::accept4(listen_fd_, reinterpret_cast<sockaddr*>(&ss), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      // Out of descriptors: the listening socket rests for 100 ms instead of waking the loop at once, forever.
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        note_refusal(std::string("cannot accept more connections (") + std::strerror(errno) + "); waiting 100 ms");
        epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, listen_fd_, nullptr);
        accept_paused_until_ = mono_ns() + 100'000'000;
      }
      return;  // EAGAIN: all accepted
    }
    if (pending_ >= kMaxPending) {  // a flood of connections that say nothing: refused at once, counted
      ::close(fd);
      note_refusal("over " + std::to_string(kMaxPending) + " connections without a hello at once, from " +
                   peer_name(ss));
      continue;
    }
    ++pending_;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    auto c = std::make_unique<Conn>();
    c->fd = fd;
    c->opened_ns = mono_ns();
    c->peer = peer_name(ss);
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev);
    conns_[fd] = std::move(c);
  }
}

void Server::on_readable(Conn& c) {
  char buf[16384];
  int fd = c.fd;
  while (true) {
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n > 0) {
      if (!c.reader.has_partial()) c.partial_since_ns = mono_ns();
      c.reader.feed(buf, static_cast<size_t>(n));
      if (c.rank < 0 && c.reader.buffered() > kMaxHelloBytes)  // before the hello: small, or refused
        return refuse(c, "over " + std::to_string(kMaxHelloBytes) + " bytes before a hello, from " + c.peer);
      std::string payload, err;
      while (true) {
        auto st = c.reader.next(&payload, &err);
        if (st == FrameReader::Status::need_more) break;
        if (st == FrameReader::Status::error) return refuse(c, err);
        json msg;
        if (!parse_message(payload, &msg, &err)) return refuse(c, err);
        handle(c, msg);
        if (!conns_.count(fd)) return;  // handling closed it
      }
      if (!c.reader.has_partial()) c.partial_since_ns = 0;
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    if (n < 0 && errno == EINTR) continue;
    close_conn(fd, "connection closed before the result");
    return;
  }
}

void Server::handle(Conn& c, const json& msg) {
  const std::string& t = msg["t"].get_ref<const std::string&>();
  if (c.rank < 0) {
    if (t != "hello") return refuse(c, "first message must be hello, got '" + t + "'");
    return handle_hello(c, msg);
  }
  RankSlot& slot = ranks_[c.rank];
  try {
    if (t == "phase") {
      slot.phase = msg.at("name").get<std::string>();
      slot.in_phase = msg.value("state", "") == "begin";
      slot.events.push_back(msg);
    } else if (t == "put") {
      std::string key = msg.at("key").get<std::string>();
      values_[key] = msg.at("value").get<std::string>();
      for (int r : waiting_for_value_[key])
        if (Conn* w = conn_of_rank(r)) send(*w, {{"t", "value"}, {"key", key}, {"value", values_[key]}});
      waiting_for_value_.erase(key);
    } else if (t == "get") {
      std::string key = msg.at("key").get<std::string>();
      if (auto it = values_.find(key); it != values_.end())
        send(c, {{"t", "value"}, {"key", key}, {"value", it->second}});
      else
        waiting_for_value_[key].insert(c.rank);
    } else if (t == "barrier") {
      std::string name = msg.at("name").get<std::string>();
      auto& arrived = barriers_[name];
      arrived.insert(c.rank);
      if (static_cast<int>(arrived.size()) == nranks_) {
        for (int r : arrived)
          if (Conn* w = conn_of_rank(r)) send(*w, {{"t", "barrier_ok"}, {"name", name}});
        barriers_.erase(name);
      }
    } else if (t == "error") {
      slot.error = msg.value("message", std::string("unspecified error"));
    } else if (t == "result") {
      slot.result = msg.at("result");
      slot.done = true;
    } else {
      return refuse(c, "unknown message type '" + t + "'");
    }
  } catch (const json::exception& e) {
    return refuse(c, "malformed '" + t + "' message: " + e.what());
  }
  if (on_message && (t == "phase" || t == "result" || t == "error")) on_message(c.rank, msg);
}

void Server::handle_hello(Conn& c, const json& msg) {
  if (!same_token(msg.value("token", std::string()), opts_.token)) return refuse(c, "wrong token from " + c.peer);
  int v = msg.value("v", -1);
  if (v != kProtocolVersion)
    return refuse(c, "protocol version " + std::to_string(v) + " from " + c.peer + " (this coordinator speaks " +
                         std::to_string(kProtocolVersion) + "; run the same coldstart build everywhere)");
  int64_t trial = msg.value("trial", int64_t{-2});
  if (trial != trial_id_)
    return refuse(c, "hello for trial " + std::to_string(trial) + " while trial " + std::to_string(trial_id_) +
                         " runs (a stale rank)");
  int rank = msg.value("rank", -1), nranks = msg.value("nranks", -1);
  if (nranks != nranks_)
    return refuse(c, "rank says nranks " + std::to_string(nranks) + ", the trial has " + std::to_string(nranks_));
  if (rank < 0 || rank >= nranks_)
    return refuse(c, "rank " + std::to_string(rank) + " out of range 0.." + std::to_string(nranks_ - 1));
  if (ranks_.count(rank)) return refuse(c, "rank " + std::to_string(rank) + " already joined");
  RankSlot& slot = ranks_[rank];
  c.rank = rank;
  --pending_;
  rank_fd_[rank] = c.fd;
  slot.seen = slot.connected = true;
  slot.pid = msg.value("pid", 0);
  slot.host = msg.value("host", std::string());
  slot.hello_ns = mono_ns();
  int64_t server_real = real_ns();
  slot.clock_offset_ns = msg.value("real_ns", server_real) - server_real;
  send(c, {{"t", "welcome"}, {"mono_ns", slot.hello_ns}, {"real_ns", server_real}});
}

void Server::send(Conn& c, const json& msg) {
  c.out += encode_frame(msg);
  flush(c);
}

void Server::flush(Conn& c) {
  while (!c.out.empty()) {
    ssize_t n = ::send(c.fd, c.out.data(), c.out.size(), MSG_NOSIGNAL);
    if (n > 0) {
      c.out.erase(0, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    return close_conn(c.fd, "connection broke while sending");
  }
  epoll_event ev{};
  ev.events = EPOLLIN | (c.out.empty() ? 0u : static_cast<uint32_t>(EPOLLOUT));
  ev.data.fd = c.fd;
  epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, c.fd, &ev);
}

void Server::refuse(Conn& c, const std::string& why) {
  note_refusal(why);
  std::string frame = encode_frame({{"t", "error"}, {"message", why}});
  ::send(c.fd, frame.data(), frame.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  if (c.rank >= 0) ranks_[c.rank].error = "refused: " + why;
  close_conn(c.fd, "refused: " + why);
}

void Server::close_conn(int fd, const std::string& why) {
  auto it = conns_.find(fd);
  if (it == conns_.end()) return;
  int rank = it->second->rank;
  if (rank < 0) --pending_;
  if (auto s = ranks_.find(rank); rank >= 0 && s != ranks_.end()) {
    RankSlot& slot = s->second;
    slot.connected = false;
    rank_fd_.erase(rank);
    if (!slot.done && slot.error.empty() && !why.empty()) slot.error = why;
  }
  epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
  ::close(fd);
  conns_.erase(it);
}

void Server::expire(int64_t now) {
  std::vector<std::pair<int, std::string>> stale;
  for (auto& [fd, c] : conns_) {
    if (c->rank < 0 && now - c->opened_ns > int64_t{opts_.hello_timeout_ms} * 1'000'000)
      stale.emplace_back(fd, "no hello within " + std::to_string(opts_.hello_timeout_ms) + " ms from " + c->peer);
    else if (c->partial_since_ns && now - c->partial_since_ns > int64_t{opts_.read_timeout_ms} * 1'000'000)
      stale.emplace_back(fd, "message not finished within " + std::to_string(opts_.read_timeout_ms) + " ms");
  }
  for (auto& [fd, why] : stale) {
    note_refusal(why);
    close_conn(fd, why);
  }
}

Server::Conn* Server::conn_of_rank(int rank) {
  auto fd = rank_fd_.find(rank);
  auto it = fd == rank_fd_.end() ? conns_.end() : conns_.find(fd->second);
  return it == conns_.end() ? nullptr : it->second.get();
}

}  // namespace coldstart::coord
