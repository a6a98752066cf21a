#include "coord/client.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "coord/address.h"
#include "util/clock.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/json.h"

namespace coldstart::coord {
using nlohmann::json;

Client::~Client() {
  if (fd_ >= 0) ::close(fd_);
}
Client::Client(Client&& o) noexcept : fd_(o.fd_), reader_(std::move(o.reader_)) { o.fd_ = -1; }
Client& Client::operator=(Client&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = o.fd_;
    reader_ = std::move(o.reader_);
    o.fd_ = -1;
  }
  return *this;
}

void Client::connect(const std::string& host, uint16_t port, const Hello& hello, int timeout_ms) {
  const std::string where = host_port(host, port);
  AddrList res;
  try {
    res = resolve(host, port, false, "coordinator");
  } catch (const InputError& e) {
    throw RuntimeError(e.what());
  }
  int64_t deadline = mono_ns() + int64_t{timeout_ms} * 1'000'000;
  std::string last_error = "no address";
  // The coordinator may not listen yet when an outside launcher starts every rank at once: retry until the deadline.
  while (fd_ < 0) {
    for (addrinfo* a = res.get(); a && fd_ < 0; a = a->ai_next) {
      int fd = ::socket(a->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
      if (fd < 0) continue;
      if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
        fd_ = fd;
      } else {
        last_error = std::strerror(errno);
        ::close(fd);
      }
    }
    if (fd_ >= 0 || mono_ns() > deadline) break;
    ::usleep(20'000);
  }
  if (fd_ < 0) throw RuntimeError("coordinator " + where + ": cannot connect (" + last_error + ")");
  int one = 1;
  setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  send({{"t", "hello"},
        {"v", kProtocolVersion},
        {"token", hello.token},
        {"trial", hello.trial},
        {"rank", hello.rank},
        {"nranks", hello.nranks},
        {"pid", static_cast<int>(::getpid())},
        {"host", hostname()},
        {"mono_ns", mono_ns()},
        {"real_ns", real_ns()}});
  json welcome = recv(timeout_ms);
  if (welcome["t"] != "welcome") throw RuntimeError("coordinator " + where + ": unexpected reply to hello");
}

void Client::send(const json& msg) { send_text(dump_json(msg)); }

void Client::send_text(std::string_view json_text) {
  if (fd_ < 0) throw RuntimeError("coordinator: not connected");
  std::string frame = encode_frame_text(json_text);
  size_t off = 0;
  while (off < frame.size()) {
    ssize_t n = ::send(fd_, frame.data() + off, frame.size() - off, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      throw RuntimeError(std::string("coordinator: connection lost while sending (") + std::strerror(errno) + ")");
    off += static_cast<size_t>(n);
  }
}

json Client::recv(int timeout_ms) {
  int64_t deadline = mono_ns() + int64_t{timeout_ms} * 1'000'000;
  while (true) {
    std::string payload, err;
    auto st = reader_.next(&payload, &err);
    if (st == FrameReader::Status::error) throw RuntimeError("coordinator: bad frame: " + err);
    if (st == FrameReader::Status::frame) {
      json msg;
      if (!parse_message(payload, &msg, &err)) throw RuntimeError("coordinator: " + err);
      if (msg["t"] == "error") throw RuntimeError("coordinator refused: " + msg.value("message", std::string("?")));
      return msg;
    }
    int64_t left_ms = (deadline - mono_ns()) / 1'000'000;
    if (left_ms <= 0) throw RuntimeError("coordinator: no reply within " + std::to_string(timeout_ms) + " ms");
    pollfd p{fd_, POLLIN, 0};
    int rc = ::poll(&p, 1, static_cast<int>(left_ms));
    if (rc < 0 && errno == EINTR) continue;
    if (rc <= 0) continue;
    char buf[8192];
    ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw RuntimeError("coordinator: connection closed");
    reader_.feed(buf, static_cast<size_t>(n));
  }
}

void Client::put(const std::string& key, const std::string& value) {
  send({{"t", "put"}, {"key", key}, {"value", value}});
}

std::string Client::get(const std::string& key, int timeout_ms) {
  send({{"t", "get"}, {"key", key}});
  json msg = recv(timeout_ms);
  if (msg["t"] != "value" || msg.value("key", "") != key)
    throw RuntimeError("coordinator: expected value of '" + key + "'");
  return msg.at("value").get<std::string>();
}

void Client::barrier(const std::string& name, int timeout_ms) {
  send({{"t", "barrier"}, {"name", name}});
  json msg = recv(timeout_ms);
  if (msg["t"] != "barrier_ok" || msg.value("name", "") != name)
    throw RuntimeError("coordinator: expected the end of barrier '" + name + "'");
}

}  // namespace coldstart::coord
