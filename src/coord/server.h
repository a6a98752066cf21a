// The coordinator: the one channel between the ranks of a trial and whoever runs it (the lab, or rank 0 when an
// outside launcher started the ranks). It checks each rank's hello (token, protocol version, trial, rank range,
// duplicates), hands out values put by one rank (the NCCL unique id), runs named barriers, and keeps each rank's
// streamed phase events and final result. Single-threaded: the owner calls poll() in its own loop.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "coord/wire.h"

namespace coldstart::coord {

struct RankSlot {
  bool connected = false;  // hello accepted and the connection still open
  bool seen = false;       // hello was accepted at some point
  bool done = false;       // result received
  int pid = 0;
  std::string host;
  int64_t hello_ns = 0;         // server's CLOCK_MONOTONIC at hello
  int64_t clock_offset_ns = 0;  // rank's CLOCK_REALTIME minus server's, estimated at hello
  std::string phase;            // the phase it is in (begun, not ended), or the last it ended
  bool in_phase = false;
  nlohmann::json events = nlohmann::json::array();  // phase events as received
  nlohmann::json result;                            // the rank's final message, when done
  std::string error;                                // an error the rank reported, or how its connection ended
};

struct ServerOptions {
  std::string bind_address = "127.0.0.1";
  uint16_t port = 0;  // 0: any free port
  std::string token;
  int hello_timeout_ms = 10'000;  // a connection must say hello within this
  int read_timeout_ms = 10'000;   // a frame begun must be finished within this
};

class Server {
 public:
  explicit Server(ServerOptions opts);  // binds and listens; throws RuntimeError naming the address
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  uint16_t port() const { return port_; }
  const std::string& token() const { return opts_.token; }

  // Starts a new trial: closes every connection of the previous one and forgets its values and barriers.
  void begin_trial(int64_t trial_id, int nranks);
  // Handles whatever I/O is ready, waiting up to timeout_ms for the first of it.
  void poll(int timeout_ms);

  int nranks() const { return nranks_; }
  // Rank r's slot; a rank that never said hello has an empty one. Slots exist for the ranks that joined only, so
  // memory grows with them, not with the world a trial declares.
  const RankSlot& rank(int r) const;
  const std::map<int, RankSlot>& joined() const { return ranks_; }
  bool all_done() const;  // every declared rank has reported
  // Connections refused and why ("wrong token from 127.0.0.1", "rank 3 already joined", ...): the first kKeptRefusals
  // as said, and how many in all.
  const std::vector<std::string>& refusals() const { return refusals_; }
  uint64_t refusal_count() const { return refusal_count_; }
  static constexpr size_t kKeptRefusals = 32;
  static constexpr size_t kMaxPending = 512;          // connections that have not said hello yet, at once
  static constexpr size_t kMaxHelloBytes = 64 << 10;  // what a connection may send before its hello is accepted
  // Called for each phase event and result as it arrives (for progress lines).
  std::function<void(int rank, const nlohmann::json& msg)> on_message;

 private:
  struct Conn {
    int fd = -1;
    int rank = -1;
    int64_t opened_ns = 0;
    int64_t partial_since_ns = 0;
    FrameReader reader;
    std::string out;
    std::string peer;
  };
  void accept_all();
  void on_readable(Conn& c);
  void handle(Conn& c, const nlohmann::json& msg);
  void handle_hello(Conn& c, const nlohmann::json& msg);
  void send(Conn& c, const nlohmann::json& msg);
  void flush(Conn& c);
  void refuse(Conn& c, const std::string& why);
  void close_conn(int fd, const std::string& why);
  void expire(int64_t now);
  void note_refusal(const std::string& why);
  Conn* conn_of_rank(int rank);

  ServerOptions opts_;
  int listen_fd_ = -1;
  int epoll_fd_ = -1;
  uint16_t port_ = 0;
  int64_t trial_id_ = -1;
  int nranks_ = 0;
  std::map<int, std::unique_ptr<Conn>> conns_;
  size_t pending_ = 0;               // connections without an accepted hello
  int64_t accept_paused_until_ = 0;  // out of file descriptors: the listening socket rests until then
  std::map<int, RankSlot> ranks_;    // the ranks that joined
  std::map<int, int> rank_fd_;       // the open connection of each joined rank
  std::map<std::string, std::string> values_;
  std::map<std::string, std::set<int>> waiting_for_value_;
  std::map<std::string, std::set<int>> barriers_;
  std::vector<std::string> refusals_;
  uint64_t refusal_count_ = 0;
};

}  // namespace coldstart::coord
