#include "launch/trial.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "util/clock.h"
#include "util/fs.h"
#include "util/random.h"

namespace coldstart::launch {
namespace {

SpawnSpec sh(const std::string& script, const std::string& log = "") {
  return {{"/bin/sh", "-c", script}, make_env({}, {}), log};
}

struct Fixture {
  coord::Server server{{"127.0.0.1", 0, random_hex(16)}};
};
}  // namespace

TEST(Trial, RealDryRunWorkersFinishOk) {
  Fixture f;
  TrialLaunch l;
  l.trial_id = 11;
  for (int r = 0; r < 4; ++r)
    l.ranks.push_back(
        {{COLDSTART_BIN, "worker", "--rank", std::to_string(r), "--nranks", "4", "--trial", "11", "--coord",
          "127.0.0.1:" + std::to_string(f.server.port()), "--dry-run"},
         make_env({{"COLDSTART_TOKEN", f.server.token()}, {"CUDA_VISIBLE_DEVICES", std::to_string(r)}}, {}),
         ""});
  TrialRun run = run_trial(f.server, l);
  EXPECT_EQ(run.status, TrialStatus::ok) << run.message;
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(run.exits[static_cast<size_t>(r)].how, "exit 0");
    const auto& slot = f.server.rank(r);
    EXPECT_TRUE(slot.done);
    EXPECT_EQ(slot.result["cuda_visible_devices"], std::to_string(r));
    // Its process start is the lab's own reading before fork, in nanoseconds, not /proc's 10 ms tick below it.
    int64_t started = -1;
    for (const auto& p : slot.result["phases"])
      if (p["name"] == "process_start") started = p["start_ns"].get<int64_t>();
    EXPECT_GE(started, run.t0_ns) << "rank " << r;
    EXPECT_LE(started, run.exits[static_cast<size_t>(r)].spawned_ns) << "rank " << r;
  }
}

TEST(Trial, ProcessStartIsTheLabsReadingWhereProcAgreesAndProcsElsewhere) {
  ::unsetenv(kSpawnEnv);
  std::string source;
  const int64_t proc = process_start_mono_ns(&source);
  ASSERT_GT(proc, 0);
  EXPECT_EQ(source, "proc");
  // A reading 3 ms after /proc's, within a tick of it: this process's. It must lie in the past (a reading from the
  // future is no spawn's), and ctest starts this test within a millisecond of the process: wait for it.
  while (mono_ns() < proc + 3'000'000) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ::setenv(kSpawnEnv, std::to_string(proc + 3'000'000).c_str(), 1);
  EXPECT_EQ(process_start_mono_ns(&source), proc + 3'000'000);
  EXPECT_EQ(source, "lab");
  // An ancestor's, or not a number: /proc's own, read anew: the two clocks' offset is read again, and a thread
  // preempted between the two readings (a loaded machine) moves it; a tick is the promise, the spawn 10 s away.
  ::setenv(kSpawnEnv, std::to_string(proc - 10'000'000'000).c_str(), 1);
  EXPECT_NEAR(static_cast<double>(process_start_mono_ns(&source)), static_cast<double>(proc), 2e7);
  EXPECT_EQ(source, "proc");
  ::setenv(kSpawnEnv, "soon", 1);
  EXPECT_NEAR(static_cast<double>(process_start_mono_ns()), static_cast<double>(proc), 2e7);
  ::unsetenv(kSpawnEnv);
}

TEST(Trial, ACrashIsAnErrorNamingTheRankAndSignal) {
  Fixture f;
  TrialLaunch l;
  l.ranks = {sh("kill -SEGV $$")};
  TrialRun run = run_trial(f.server, l);
  EXPECT_EQ(run.status, TrialStatus::error);
  EXPECT_NE(run.message.find("rank 0 signal 11"), std::string::npos) << run.message;
}

TEST(Trial, GarbageOutputAndNoResultIsAnError) {
  Fixture f;
  const TempDir scratch("coldstart-trial-");
  const std::string& dir = scratch.path();
  TrialLaunch l;
  l.ranks = {sh("echo '\\x00 garbage {{{'; exit 0", dir + "/rank-0.log")};
  TrialRun run = run_trial(f.server, l);
  EXPECT_EQ(run.status, TrialStatus::error);
  EXPECT_NE(run.message.find("ended without a result"), std::string::npos) << run.message;
  EXPECT_NE(read_file(dir + "/rank-0.log").find("garbage"), std::string::npos);  // output kept for the user
}

TEST(Trial, GarbageToTheCoordinatorIsRefusedAndTheWatchdogEndsTheTrial) {
  Fixture f;
  TrialLaunch l;
  l.timeout_s = 1;
  std::string port = std::to_string(f.server.port());
  l.ranks = {{{"/bin/bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/" + port + "; printf 'GARBAGE!' >&3; sleep 30"},
              make_env({}, {}),
              ""}};
  TrialRun run = run_trial(f.server, l);
  EXPECT_EQ(run.status, TrialStatus::hang);
  EXPECT_FALSE(f.server.refusals().empty());
}

TEST(Trial, WatchdogKillsHangingRanksAndTheirChildren) {
  Fixture f;
  TrialLaunch l;
  l.timeout_s = 0.5;
  l.ranks = {sh("sleep 30 & sleep 30"), sh("sleep 30")};
  int64_t t0 = mono_ns();
  TrialRun run = run_trial(f.server, l);
  double took = ns_to_ms(mono_ns() - t0);
  EXPECT_EQ(run.status, TrialStatus::hang);
  EXPECT_LT(took, 5000);
  EXPECT_NE(run.message.find("timeout"), std::string::npos);
  for (const auto& e : run.exits) {
    EXPECT_EQ(e.how, "stopped by the lab");
    EXPECT_FALSE(group_alive(e.pid)) << "process group " << e.pid << " survived";
    EXPECT_NE(::kill(e.pid, 0), 0);
  }
}

TEST(Trial, OneFailureStopsTheOthersAfterTheGrace) {
  Fixture f;
  TrialLaunch l;
  l.timeout_s = 60;
  l.failure_grace_s = 0.2;
  l.ranks = {sh("exit 3"), sh("sleep 30")};
  int64_t t0 = mono_ns();
  TrialRun run = run_trial(f.server, l);
  EXPECT_LT(ns_to_ms(mono_ns() - t0), 5000);
  EXPECT_EQ(run.status, TrialStatus::error);
  EXPECT_NE(run.message.find("rank 0 exit 3"), std::string::npos) << run.message;
  EXPECT_EQ(run.exits[1].how, "stopped by the lab");
  EXPECT_FALSE(group_alive(run.exits[1].pid));
}

TEST(Trial, ACommandThatCannotStartIsAnErrorAndNothingIsLeft) {
  Fixture f;
  TrialLaunch l;
  l.ranks = {sh("sleep 30"), {{"/nonexistent/coldstart"}, make_env({}, {}), ""}};
  TrialRun run = run_trial(f.server, l);
  EXPECT_EQ(run.status, TrialStatus::error);
  EXPECT_NE(run.message.find("cannot start /nonexistent/coldstart"), std::string::npos) << run.message;
  EXPECT_EQ(run.exits[1].how, "not started");
  EXPECT_FALSE(group_alive(run.exits[0].pid));
}

}  // namespace coldstart::launch
