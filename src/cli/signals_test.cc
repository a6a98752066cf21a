// The lab under Ctrl-C, SIGTERM and SIGKILL, end to end: every rank is gone within 2 s, nothing is left behind
// (processes, the coordinator's port, temporary files, /dev/shm entries), the finished trials are on disk, and
// `bench --resume` finishes the run without repeating them.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "util/scratch_for_test.h"

namespace coldstart {
namespace {
using nlohmann::json;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// A file under /proc/PID of a process that may exit while it is read: reading it then fails with ESRCH, which
// libstdc++'s filebuf throws; a process gone is simply not there.
std::string slurp_proc(const std::string& path) {
  try {
    return slurp(path);
  } catch (const std::ios_base::failure&) {
    return {};
  }
}

int lines_of(const std::string& path) {
  std::string s = slurp(path);
  return static_cast<int>(std::count(s.begin(), s.end(), '\n'));
}

// Processes whose session is `sid` (bench is started as a session leader; its ranks keep the session).
std::vector<int> session_members(int sid) {
  std::vector<int> out;
  for (const auto& e : fs::directory_iterator("/proc")) {
    std::string name = e.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string stat = slurp_proc(e.path().string() + "/stat");
    auto close = stat.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(stat.substr(close + 2));
    std::string state, ppid, pgrp, session;
    rest >> state >> ppid >> pgrp >> session;
    if (state != "Z" && std::atoi(session.c_str()) == sid) out.push_back(std::stoi(name));
  }
  return out;
}

// TCP ports a process listens on (its socket inodes matched against /proc/net/tcp).
std::set<int> listening_ports(pid_t pid) {
  std::set<std::string> inodes;
  std::error_code ec;
  for (const auto& fd : fs::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ec)) {
    auto target = fs::read_symlink(fd.path(), ec).string();
    if (target.rfind("socket:[", 0) == 0) inodes.insert(target.substr(8, target.size() - 9));
  }
  std::set<int> ports;
  std::istringstream tcp(slurp("/proc/net/tcp"));
  std::string line;
  std::getline(tcp, line);
  while (std::getline(tcp, line)) {
    std::istringstream f(line);
    std::string sl, local, remote, st, queues, tr, retr, uid, timeout, inode;
    f >> sl >> local >> remote >> st >> queues >> tr >> retr >> uid >> timeout >> inode;
    if (st == "0A" && inodes.count(inode)) ports.insert(std::stoi(local.substr(local.find(':') + 1), nullptr, 16));
  }
  return ports;
}

std::set<std::string> shm_entries() {
  std::set<std::string> s;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/dev/shm", ec)) s.insert(e.path().filename());
  return s;
}

struct Lab {
  pid_t pid = -1;
  std::string out;
};

// Starts `coldstart bench --dry-run` with `trials` trials per configuration as the leader of a new session, and
// waits until it has finished `finished_before_return` of them. The tests' work is bounded by these counts, not by
// how fast the machine runs: the lab is stopped long before it could finish.
Lab start_bench(int trials, int finished_before_return) {
  Lab lab;
  lab.out = test_scratch::fresh_path("signals");
  const std::string per_config = std::to_string(trials);
  lab.pid = ::fork();
  if (lab.pid == 0) {
    ::setsid();
    int devnull = ::open("/dev/null", O_WRONLY);
    ::dup2(devnull, 1);
    ::dup2(devnull, 2);
    ::execl(COLDSTART_BIN, COLDSTART_BIN, "bench", "--dry-run", "--gpus", "2", "--trials", per_config.c_str(), "--seed",
            "7", "--out", lab.out.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  auto deadline = Clock::now() + std::chrono::seconds(60);
  while (lines_of(lab.out + "/results.jsonl") < finished_before_return && Clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  return lab;
}

// Sends `sig`, returns the seconds until every process of the lab's session is gone, and the lab's wait status.
std::pair<double, int> stop(const Lab& lab, int sig) {
  auto t0 = Clock::now();
  ::kill(lab.pid, sig);
  int status = 0;
  ::waitpid(lab.pid, &status, 0);
  while (!session_members(lab.pid).empty() && Clock::now() - t0 < std::chrono::seconds(10))
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  return {std::chrono::duration<double>(Clock::now() - t0).count(), status};
}

// Local ports in LISTEN state, from /proc/net/tcp.
std::set<int> listening_now() {
  std::set<int> ports;
  std::istringstream tcp(slurp("/proc/net/tcp"));
  std::string line;
  std::getline(tcp, line);
  while (std::getline(tcp, line)) {
    std::istringstream f(line);
    std::string sl, local, remote, st;
    f >> sl >> local >> remote >> st;
    if (st == "0A") ports.insert(std::stoi(local.substr(local.find(':') + 1), nullptr, 16));
  }
  return ports;
}

void expect_nothing_left(const Lab& lab, const std::set<int>& ports, const std::set<std::string>& shm_before) {
  EXPECT_TRUE(session_members(lab.pid).empty()) << "processes left in the lab's session";
  std::set<int> listening = listening_now();
  for (int p : ports) EXPECT_FALSE(listening.count(p)) << "the coordinator's port " << p << " still listens";
  for (const auto& e : fs::recursive_directory_iterator(lab.out)) EXPECT_NE(e.path().extension(), ".tmp") << e.path();
  for (const auto& e : shm_entries()) EXPECT_TRUE(shm_before.count(e)) << "/dev/shm/" << e << " was left";
}

struct Interrupted {
  Lab lab;
  double seconds;  // from the signal until every process of the lab's session was gone
  int status;      // the lab's wait status
};

// Starts the lab with `trials` per configuration, lets it finish `finished` trials, sends `sig`, and checks that
// nothing is left behind.
Interrupted interrupt(int sig, int trials, int finished) {
  auto shm_before = shm_entries();
  Lab lab = start_bench(trials, finished);
  std::set<int> ports = listening_ports(lab.pid);
  EXPECT_FALSE(ports.empty()) << "the lab's coordinator was not found listening";
  auto [seconds, status] = stop(lab, sig);
  expect_nothing_left(lab, ports, shm_before);
  return {lab, seconds, status};
}

constexpr int kResumedTrials = 10;

TEST(Signals, CtrlCStopsEveryRankWithin2sKeepsFinishedTrialsAndResumeFinishesTheRun) {
  // 10 trials per configuration: enough left to interrupt after 5, and --resume below runs the rest (some 35 trials,
  // not hundreds: the test's time must not grow with the machine's load).
  auto [lab, seconds, status] = interrupt(SIGINT, kResumedTrials, 5);
  EXPECT_LT(seconds, 2.0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 130);

  // Every finished trial is on disk, in results.jsonl and results.json alike.
  json partial = json::parse(slurp(lab.out + "/results.json"));
  int finished = 0;
  for (const auto& t : partial["trials"]) finished += t["status"] != "interrupted";
  EXPECT_GE(finished, 5);
  std::map<int, double> walls;
  for (const auto& t : partial["trials"])
    if (t["status"] != "interrupted") walls[t["index"].get<int>()] = t["wall_ms"].get<double>();

  // --resume runs only what is missing.
  std::string cmd = std::string(COLDSTART_BIN) + " bench --resume " + lab.out + " > /dev/null 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  json done = json::parse(slurp(lab.out + "/results.json"));
  const size_t planned = done["configs"].size() * kResumedTrials;
  ASSERT_EQ(done["trials"].size(), planned);
  std::set<int> indices;
  for (const auto& t : done["trials"]) {
    EXPECT_EQ(t["status"], "ok");
    indices.insert(t["index"].get<int>());
    if (auto it = walls.find(t["index"].get<int>()); it != walls.end()) {
      EXPECT_EQ(t["wall_ms"].get<double>(), it->second) << "trial " << it->first << " ran again";
    }
  }
  EXPECT_EQ(indices.size(), planned);
  EXPECT_EQ(lines_of(lab.out + "/results.jsonl"), static_cast<int>(planned));
  fs::remove_all(lab.out);
}

TEST(Signals, SigtermAndSighupStopEveryRankWithin2s) {
  for (int sig : {SIGTERM, SIGHUP}) {  // a kill, and a closed terminal
    auto [lab, seconds, status] = interrupt(sig, 100, 2);
    EXPECT_LT(seconds, 2.0) << sig;
    ASSERT_TRUE(WIFEXITED(status)) << sig;
    EXPECT_EQ(WEXITSTATUS(status), 130) << sig;
    EXPECT_TRUE(fs::exists(lab.out + "/results.json")) << sig;
    fs::remove_all(lab.out);
  }
}

TEST(Signals, SigkillOfTheLabStillTakesItsRanksDown) {
  auto [lab, seconds, status] = interrupt(SIGKILL, 100, 2);
  EXPECT_TRUE(WIFSIGNALED(status));
  EXPECT_LT(seconds, 2.0);  // the ranks die with their parent (PR_SET_PDEATHSIG)
  // What finished before the kill is on disk: every line of results.jsonl is a whole trial.
  std::istringstream jsonl(slurp(lab.out + "/results.jsonl"));
  int whole = 0;
  for (std::string line; std::getline(jsonl, line);) whole += !json::parse(line, nullptr, false).is_discarded();
  EXPECT_GE(whole, 2);
  fs::remove_all(lab.out);
}

}  // namespace
}  // namespace coldstart
