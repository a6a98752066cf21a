#include "lab/delay_line.h"

#include <arpa/inet.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <queue>

#include "util/error.h"

namespace coldstart::lab {
namespace {

uint64_t now_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// A packet on its way: when it leaves, to which port, and its bytes.
struct InFlight {
  uint64_t due_ns;
  uint64_t order;  // arrival order: packets due at once leave in the order they came
  size_t port;
  std::vector<uint8_t> bytes;
  bool operator>(const InFlight& o) const { return due_ns != o.due_ns ? due_ns > o.due_ns : order > o.order; }
};

// The IPv4 destination of a packet (network order), or 0 when it is not an IPv4 packet.
uint32_t ipv4_destination(const uint8_t* p, size_t n) {
  if (n < 20 || (p[0] >> 4) != 4) return 0;
  uint32_t dst = 0;
  std::memcpy(&dst, p + 16, sizeof dst);
  return dst;
}

}  // namespace

DelayLine::DelayLine(uint64_t latency_ns, uint64_t rate_bits_per_s)
    : latency_ns_(latency_ns), rate_bits_per_s_(rate_bits_per_s) {}

DelayLine::~DelayLine() { stop(); }

void DelayLine::add_port(int tun_fd, const std::string& ipv4_address) {
  in_addr a{};
  if (::inet_pton(AF_INET, ipv4_address.c_str(), &a) != 1)
    throw RuntimeError("delay line: " + ipv4_address + " is not an IPv4 address");
  ports_.push_back({tun_fd, a.s_addr});
}

void DelayLine::start() {
  stop_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (stop_fd_ < 0) throw RuntimeError(std::string("delay line: eventfd: ") + std::strerror(errno));
  thread_ = std::thread([this] { run(); });
}

void DelayLine::stop() noexcept {
  if (thread_.joinable()) {
    const uint64_t one = 1;
    [[maybe_unused]] ssize_t w = ::write(stop_fd_, &one, sizeof one);
    thread_.join();
  }
  if (stop_fd_ >= 0) ::close(stop_fd_);
  stop_fd_ = -1;
}

void DelayLine::run() {
  std::priority_queue<InFlight, std::vector<InFlight>, std::greater<>> queue;
  uint64_t queued_bytes = 0, order = 0;
  std::vector<pollfd> fds;
  for (const Port& p : ports_) fds.push_back({p.fd, POLLIN, 0});
  fds.push_back({stop_fd_, POLLIN, 0});
  std::vector<uint8_t> buf(65536);
  for (;;) {
    // Wait for a packet, the stop, or the next departure, whichever comes first.
    timespec wait{}, *timeout = nullptr;
    if (!queue.empty()) {
      const uint64_t now = now_ns(), due = queue.top().due_ns;
      const uint64_t left = due > now ? due - now : 0;
      wait = {static_cast<time_t>(left / 1'000'000'000ull), static_cast<long>(left % 1'000'000'000ull)};
      timeout = &wait;
    }
    if (::ppoll(fds.data(), fds.size(), timeout, nullptr) < 0 && errno != EINTR) return;
    if (fds.back().revents) return;
    for (size_t i = 0; i + 1 < fds.size(); ++i) {
      if (!(fds[i].revents & POLLIN)) continue;
      for (;;) {
        const ssize_t n = ::read(fds[i].fd, buf.data(), buf.size());
        if (n <= 0) break;
        const uint32_t dst = ipv4_destination(buf.data(), static_cast<size_t>(n));
        auto to = std::find_if(ports_.begin(), ports_.end(), [&](const Port& p) { return dst && p.address == dst; });
        if (to == ports_.end() || queued_bytes + static_cast<uint64_t>(n) > kMaxQueuedBytes) {
          ++dropped_;
          continue;
        }
        uint64_t due = now_ns() + latency_ns_;
        if (rate_bits_per_s_ > 0) {
          // the packet's bytes at the link's rate, behind those already on their way to the same node
          const uint64_t on_wire = static_cast<uint64_t>(n) * 8 * 1'000'000'000ull / rate_bits_per_s_;
          due = std::max(due, to->busy_until_ns + latency_ns_) + on_wire;
          to->busy_until_ns = due - latency_ns_;
        }
        queued_bytes += static_cast<uint64_t>(n);
        queue.push({due, order++, static_cast<size_t>(to - ports_.begin()), {buf.begin(), buf.begin() + n}});
      }
    }
    for (const uint64_t now = now_ns(); !queue.empty() && queue.top().due_ns <= now; queue.pop()) {
      const InFlight& p = queue.top();
      queued_bytes -= p.bytes.size();
      // A full TUN queue (the node not reading) drops the packet, as a full device queue would.
      if (::write(ports_[p.port].fd, p.bytes.data(), p.bytes.size()) < 0)
        ++dropped_;
      else
        ++forwarded_;
    }
  }
}

}  // namespace coldstart::lab
