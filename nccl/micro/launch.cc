#include "micro/launch.h"

#include <poll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "micro/uds.h"

namespace coldstart::micro {
namespace {

std::atomic<int> run_counter{0};

pid_t start_rank(const std::string& program, const RankSpec& spec, const std::string& control) {
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(program.c_str()));
  for (const auto& a : spec.args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = fork();
  if (pid != 0) return pid;
  prctl(PR_SET_PDEATHSIG, SIGKILL);  // a rank never outlives its launcher
  if (!spec.visible_devices.empty()) setenv("CUDA_VISIBLE_DEVICES", spec.visible_devices.c_str(), 1);
  for (const auto& [name, value] : spec.env) setenv(name.c_str(), value.c_str(), 1);
  setenv(kControlEnv, control.c_str(), 1);
  execv(program.c_str(), argv.data());
  std::fprintf(stderr, "cannot start %s: %s\n", program.c_str(), std::strerror(errno));
  _exit(127);
}

void reap(std::vector<pid_t>& pids, RunOutcome& out, bool kill_first, int grace_ms) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(grace_ms);
  for (size_t i = 0; i < pids.size(); ++i) {
    if (pids[i] <= 0) continue;
    if (kill_first) {
      kill(pids[i], SIGKILL);
      out.ranks[i].killed = true;
    }
    int status = 0;
    for (;;) {
      pid_t r = waitpid(pids[i], &status, WNOHANG);
      if (r == pids[i]) break;
      if (r < 0) break;
      if (std::chrono::steady_clock::now() >= deadline) {
        kill(pids[i], SIGKILL);
        out.ranks[i].killed = true;
        waitpid(pids[i], &status, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    if (WIFEXITED(status)) out.ranks[i].exit_code = WEXITSTATUS(status);
    if (WIFSIGNALED(status)) out.ranks[i].signal = WTERMSIG(status);
    pids[i] = 0;
  }
}

}  // namespace

bool RunOutcome::ok() const {
  if (timed_out) return false;
  for (const auto& r : ranks)
    if (!r.reported || !r.error.empty() || r.exit_code != 0) return false;
  return true;
}

std::string RunOutcome::failure() const {
  std::string text;
  if (timed_out) text = "timed out; ";
  for (size_t i = 0; i < ranks.size(); ++i) {
    const auto& r = ranks[i];
    std::string why = r.error;
    if (why.empty() && r.killed) why = timed_out && !r.reported ? "still running at the timeout" : "";
    if (why.empty() && r.killed) continue;  // stopped because another rank failed
    if (why.empty() && r.signal) why = "killed by signal " + std::to_string(r.signal);
    if (why.empty() && !r.reported) why = "exited (code " + std::to_string(r.exit_code) + ") without a result";
    if (why.empty() && r.exit_code != 0) why = "exit code " + std::to_string(r.exit_code);
    if (!why.empty()) text += "rank " + std::to_string(i) + ": " + why + "; ";
  }
  if (text.size() >= 2) text.resize(text.size() - 2);
  return text;
}

RunOutcome run_ranks(const std::string& program, const std::vector<RankSpec>& ranks, int timeout_s) {
  RunOutcome out;
  int world = static_cast<int>(ranks.size());
  out.ranks.resize(world);
  std::string control = abstract_name(getpid(), "control-" + std::to_string(run_counter++));
  std::string error;
  int listener = uds_listen(control, &error);
  if (listener < 0) {
    for (auto& r : out.ranks) r.error = error;
    return out;
  }
  std::vector<pid_t> pids;
  for (const auto& spec : ranks) pids.push_back(start_rank(program, spec, control));

  std::vector<int> rank_of_fd;  // indexed like conns
  std::vector<int> conns;
  std::vector<std::chrono::steady_clock::time_point> exited_at(world);
  std::vector<std::string> shared(world);  // this barrier's strings, by rank
  int arrived = 0, finished = 0;
  bool failed = false;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  while (finished < world && !failed) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      out.timed_out = true;
      break;
    }
    std::vector<pollfd> fds{{listener, POLLIN, 0}};
    for (int c : conns) fds.push_back({c, POLLIN, 0});
    int n = poll(fds.data(), fds.size(), static_cast<int>(std::min<long>(left.count(), 200)));
    if (n < 0 && errno != EINTR) break;
    // A rank that dies before it connects (exec failure, a crash in start-up) shows up only here; one that connected
    // is judged by its socket (its result may still be unread when it exits).
    for (int i = 0; i < world; ++i) {
      int status;
      if (pids[i] > 0 && waitpid(pids[i], &status, WNOHANG) == pids[i]) {
        pids[i] = 0;
        exited_at[i] = std::chrono::steady_clock::now();
        if (WIFEXITED(status)) out.ranks[i].exit_code = WEXITSTATUS(status);
        if (WIFSIGNALED(status)) out.ranks[i].signal = WTERMSIG(status);
      }
      bool connected = std::find(rank_of_fd.begin(), rank_of_fd.end(), i) != rank_of_fd.end();
      if (pids[i] == 0 && !connected && !out.ranks[i].reported && out.ranks[i].error.empty() &&
          std::chrono::steady_clock::now() - exited_at[i] > std::chrono::seconds(1)) {
        out.ranks[i].error = "exited before reporting";
        failed = true;
      }
    }
    if (n <= 0) continue;
    if (fds[0].revents & POLLIN) {
      int c = accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
      if (c >= 0) {
        conns.push_back(c);
        rank_of_fd.push_back(-1);
      }
    }
    for (size_t k = 1; k < fds.size(); ++k) {
      if (!(fds[k].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      size_t i = k - 1;
      int rank = rank_of_fd[i];
      char type;
      std::string payload;
      if (!recv_message(fds[k].fd, &type, &payload)) {
        if (rank >= 0 && !out.ranks[rank].reported) {
          if (out.ranks[rank].error.empty()) out.ranks[rank].error = "lost its connection before reporting";
          failed = true;
        }
        close(conns[i]);
        conns[i] = -1;
        continue;
      }
      if (type == 'H') {
        rank_of_fd[i] = std::atoi(payload.c_str());
      } else if (type == 'B' && rank >= 0) {
        shared[rank] = std::move(payload);
        if (++arrived == world) {
          arrived = 0;
          std::string all;
          for (const auto& item : shared) {
            uint32_t length = static_cast<uint32_t>(item.size());
            all.append(reinterpret_cast<const char*>(&length), 4).append(item);
          }
          for (int c : conns)
            if (c >= 0) send_message(c, 'G', all);
        }
      } else if (type == 'D' && rank >= 0) {
        out.ranks[rank].reported = true;
        out.ranks[rank].result = std::move(payload);
        ++finished;
      } else if (type == 'N' && rank >= 0) {
        out.ranks[rank].notes.push_back(std::move(payload));
      } else if (type == 'F' && rank >= 0) {
        out.ranks[rank].error = payload;
        failed = true;
      }
    }
    for (size_t i = conns.size(); i-- > 0;)
      if (conns[i] < 0) {
        conns.erase(conns.begin() + i);
        rank_of_fd.erase(rank_of_fd.begin() + i);
      }
  }
  bool clean = finished == world && !failed && !out.timed_out;
  reap(pids, out, !clean, clean ? 30000 : 0);
  for (int c : conns) close(c);
  close(listener);
  return out;
}

RankLink::RankLink(int rank) {
  const char* control = std::getenv(kControlEnv);
  std::string error = std::string(kControlEnv) + " is not set: a rank is started by its launcher, not by hand";
  if (control) sock_ = uds_connect(control, 10000, &error);
  if (sock_ < 0 || !send_message(sock_, 'H', std::to_string(rank))) {
    std::fprintf(stderr, "rank %d: %s\n", rank, error.c_str());
    std::exit(1);
  }
}

RankLink::~RankLink() {
  if (sock_ >= 0) close(sock_);
}

std::vector<std::string> RankLink::exchange(const std::string& mine) {
  char type = 0;
  std::string payload;
  if (!send_message(sock_, 'B', mine) || !recv_message(sock_, &type, &payload) || type != 'G') {
    std::fprintf(stderr, "rank: the launcher went away during a barrier\n");
    std::exit(1);
  }
  std::vector<std::string> all;
  for (size_t at = 0; at + 4 <= payload.size();) {
    uint32_t length;
    std::memcpy(&length, payload.data() + at, 4);
    all.push_back(payload.substr(at + 4, length));
    at += 4 + length;
  }
  return all;
}

void RankLink::report(const std::string& result) {
  if (!send_message(sock_, 'D', result)) std::exit(1);
}

void RankLink::note(const std::string& text) {
  if (!send_message(sock_, 'N', text)) std::exit(1);
}

void RankLink::fail(const std::string& error) { send_message(sock_, 'F', error); }

std::string visible_device_for(const std::string& inherited, int index) {
  if (inherited.empty()) return std::to_string(index);
  std::vector<std::string> items;
  size_t start = 0;
  for (;;) {
    size_t comma = inherited.find(',', start);
    items.push_back(inherited.substr(start, comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return index >= 0 && index < static_cast<int>(items.size()) ? items[index] : std::to_string(index);
}

}  // namespace coldstart::micro
