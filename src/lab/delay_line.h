// bench --link where the kernel has no netem: coldstart's own delay line between the nodes. Each node (and the lab,
// whose address the coordinator listens on) has a TUN device instead of a veth on a bridge; a thread of the lab reads
// every IPv4 packet a node sends, holds it for the link's latency (and, with a rate, for its bytes at that rate behind
// the packets before it to the same node), and writes it into the TUN of the node that has its destination address.
// A packet is delayed once from node to node, as netem on the bridge's ends delays it: a round trip twice.
//
// What it adds of its own: a read, a queue and a write in user space per packet (tens of microseconds, which the
// lab's probe of a connect between two nodes includes), and no loss. Packets to an address no port has, and what is
// not IPv4, are dropped; a queue past kMaxQueuedBytes drops what comes next, as a full netem queue would.
#pragma once
#include <atomic>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

namespace coldstart::lab {

class DelayLine {
 public:
  DelayLine(uint64_t latency_ns, uint64_t rate_bits_per_s);
  ~DelayLine();  // stops the thread; the ports' fds stay the caller's
  DelayLine(const DelayLine&) = delete;
  DelayLine& operator=(const DelayLine&) = delete;

  // A TUN fd (non-blocking) whose device has `ipv4_address`: packets to that address are written there. Before start.
  void add_port(int tun_fd, const std::string& ipv4_address);
  void start();
  void stop() noexcept;

  // Packets forwarded and dropped so far (for the lab's description and the tests).
  uint64_t forwarded() const { return forwarded_.load(); }
  uint64_t dropped() const { return dropped_.load(); }

  static constexpr uint64_t kMaxQueuedBytes = 256ull << 20;

 private:
  struct Port {
    int fd;
    uint32_t address;            // network order
    uint64_t busy_until_ns = 0;  // with a rate: when the last packet queued to it has left
  };
  void run();

  uint64_t latency_ns_, rate_bits_per_s_;
  std::vector<Port> ports_;
  int stop_fd_ = -1;  // an eventfd
  std::thread thread_;
  std::atomic<uint64_t> forwarded_{0}, dropped_{0};
};

}  // namespace coldstart::lab
