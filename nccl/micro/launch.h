// Starts the ranks of one run as child processes of this program (fork + exec of the program itself), each with its
// own CUDA_VISIBLE_DEVICES, and serves them over one Unix socket: barriers, a result per rank, a failure per rank. A
// run ends when every rank has reported, when one fails (the others are killed), or at the timeout (all are killed).
#pragma once
#include <string>
#include <utility>
#include <vector>

namespace coldstart::micro {

struct RankSpec {
  std::vector<std::string> args;                         // argv[1..] of the rank
  std::string visible_devices;                           // CUDA_VISIBLE_DEVICES; empty leaves it as it is
  std::vector<std::pair<std::string, std::string>> env;  // more variables set in the rank
};

struct RankOutcome {
  bool reported = false;           // sent its result
  std::string result;              // what it sent
  std::vector<std::string> notes;  // what it sent on the way (kept when the run fails later)
  std::string error;               // why it failed, when it did
  int exit_code = -1;              // -1: killed or never reaped
  int signal = 0;
  bool killed = false;  // by the launcher, after another rank failed or at the timeout
};

struct RunOutcome {
  std::vector<RankOutcome> ranks;
  bool timed_out = false;
  bool ok() const;
  std::string failure() const;  // one line: which ranks failed and why; empty when ok
};

// The environment variable through which a rank finds its launcher's socket.
constexpr const char* kControlEnv = "COLDSTART_MICRO_CONTROL";

RunOutcome run_ranks(const std::string& program, const std::vector<RankSpec>& ranks, int timeout_s);

// The rank's side of the socket. Every call exits the process with a message if the launcher has gone away.
class RankLink {
 public:
  explicit RankLink(int rank);
  ~RankLink();
  void barrier() { exchange(""); }
  // A barrier that carries one string from each rank: every rank gets all of them, in rank order.
  std::vector<std::string> exchange(const std::string& mine);
  void report(const std::string& result);  // the rank's result, once, at the end
  void note(const std::string& text);      // a partial result, kept by the launcher even if the run fails later
  void fail(const std::string& error);     // the rank's failure, once
 private:
  int sock_ = -1;
};

// The visible-device list for the launcher's own CUDA_VISIBLE_DEVICES: "2,3" with index 1 -> "3"; unset -> "1".
std::string visible_device_for(const std::string& inherited, int index);

}  // namespace coldstart::micro
