#include "util/process.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "util/error.h"
#include "util/fs.h"

namespace coldstart {

TEST(Process, EnvironmentSetAndUnset) {
  ::setenv("COLDSTART_TEST_KEEP", "1", 1);
  ::setenv("COLDSTART_TEST_DROP", "1", 1);
  auto env = make_env({{"COLDSTART_TEST_NEW", "x"}, {"COLDSTART_TEST_KEEP", "2"}}, {"COLDSTART_TEST_DROP"});
  auto has = [&](const std::string& kv) { return std::find(env.begin(), env.end(), kv) != env.end(); };
  EXPECT_TRUE(has("COLDSTART_TEST_NEW=x"));
  EXPECT_TRUE(has("COLDSTART_TEST_KEEP=2"));
  for (const auto& kv : env) EXPECT_NE(kv.rfind("COLDSTART_TEST_DROP=", 0), 0u);
}

TEST(Process, WaitStatusDescriptions) {
  EXPECT_EQ(describe_wait_status(0), "exit 0");
  EXPECT_EQ(describe_wait_status(3 << 8), "exit 3");
  EXPECT_EQ(describe_wait_status(SIGKILL).rfind("signal 9", 0), 0u);
}

namespace {
// run_command's result names why a command failed.
RunResult run_for(std::vector<std::string> argv, double timeout_s = 5, size_t max_output = 1 << 20) {
  RunSpec s;
  s.argv = std::move(argv);
  s.timeout_s = timeout_s;
  s.max_output = max_output;
  return run_command(s);
}
}  // namespace

TEST(Process, RunCommandSaysWhyItFailed) {
  RunResult ok = run_for({"sh", "-c", "echo out; echo err >&2"});
  EXPECT_TRUE(ok.ok()) << ok.why();
  EXPECT_EQ(ok.output, "out\n");  // stderr on /dev/null
  EXPECT_EQ(ok.why(), "exit 0");

  RunResult missing = run_for({"coldstart-no-such-command"});
  EXPECT_EQ(missing.end, RunEnd::not_found);
  EXPECT_EQ(missing.why(), "not found");
  EXPECT_EQ(run_for({"/nonexistent/coldstart"}).end, RunEnd::not_found);
  EXPECT_EQ(run_for({}).end, RunEnd::not_found);
  TempDir dir("coldstart-run-");
  write_file_atomic(dir.path() + "/plain", "#!/bin/sh\n");
  RunResult plain = run_for({dir.path() + "/plain"});
  EXPECT_EQ(plain.end, RunEnd::not_executable);
  EXPECT_EQ(plain.why(), "not executable");
  EXPECT_EQ(run_for({dir.path()}).end, RunEnd::not_executable);  // a folder
  write_file_atomic(dir.path() + "/garbage", std::string("\x7f") + "ELF not really");
  ::chmod((dir.path() + "/garbage").c_str(), 0755);
  RunResult garbage = run_for({dir.path() + "/garbage"});
  EXPECT_EQ(garbage.end, RunEnd::cannot_start);
  EXPECT_EQ(garbage.why().rfind("cannot start " + dir.path() + "/garbage: ", 0), 0u) << garbage.why();

  RunResult three = run_for({"sh", "-c", "echo partial; exit 3"});
  EXPECT_EQ(three.end, RunEnd::exited);
  EXPECT_EQ(three.exit_status(), 3);
  EXPECT_FALSE(three.ok());
  EXPECT_EQ(three.output, "partial\n");
  EXPECT_EQ(three.why(), "exit 3");

  RunResult signaled = run_for({"sh", "-c", "kill -TERM $$"});
  EXPECT_EQ(signaled.end, RunEnd::signaled);
  EXPECT_EQ(signaled.exit_status(), -1);
  EXPECT_EQ(signaled.why().rfind("signal 15", 0), 0u) << signaled.why();

  auto start = std::chrono::steady_clock::now();
  RunResult slow = run_for({"sleep", "10"}, 0.2);
  EXPECT_EQ(slow.end, RunEnd::timed_out);
  EXPECT_EQ(slow.why(), "no answer in 200 ms: killed");
  // A grandchild that keeps stdout open keeps it running, and is killed with its process group.
  RunResult held = run_for({"sh", "-c", "sleep 10 & echo started"}, 0.3);
  EXPECT_EQ(held.end, RunEnd::timed_out);
  EXPECT_EQ(held.output, "started\n");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(3));

  RunResult lots = run_for({"head", "-c", "5000", "/dev/zero"}, 5, 4096);
  EXPECT_EQ(lots.end, RunEnd::output_cut);
  EXPECT_EQ(lots.output.size(), 4096u);
  EXPECT_EQ(lots.why(), "more than 4 KiB of output: killed");
  EXPECT_TRUE(run_for({"head", "-c", "4096", "/dev/zero"}, 5, 4096).ok());  // the cap itself is fine
}

TEST(Process, RunCommandKeepsTheTailWithStderrAndStops) {
  RunSpec s;
  s.argv = {"sh", "-c", "head -c 5000 /dev/zero | tr '\\0' a; echo; echo last >&2; exit 1"};
  s.max_output = 100;
  s.keep_tail = true;
  s.with_stderr = true;
  RunResult tail = run_command(s);
  EXPECT_EQ(tail.exit_status(), 1) << tail.why();
  EXPECT_EQ(tail.output.size(), 100u);
  EXPECT_EQ(tail.output.substr(tail.output.size() - 6), "\nlast\n");
  EXPECT_EQ(tail.cut_bytes, 5000u + 6 - 100);

  s = RunSpec{};
  s.argv = {"sleep", "10"};
  int asked = 0;
  s.stop = [&] { return ++asked > 3; };
  RunResult stopped = run_command(s);
  EXPECT_EQ(stopped.end, RunEnd::stopped);
  EXPECT_EQ(stopped.why(), "stopped: killed");
}

// bench --nodes starts a rank inside its node: the network namespace it names, and a UTS namespace of its own with
// the node's hostname (the lab's stays as it was). A namespace that is not there is named before anything starts.
TEST(Process, SpawnEntersANetworkNamespaceWithItsOwnHostname) {
  if (::geteuid() != 0) GTEST_SKIP() << "network namespaces need root";
  const TempDir scratch("coldstart-spawn-");
  const std::string ns = "cs-spawn-test-" + std::to_string(::getpid()), out = scratch.path() + "/output";
  ASSERT_EQ(std::system(("ip netns add " + ns).c_str()), 0);
  const std::string here = hostname();
  SpawnSpec s;
  s.argv = {"/bin/sh", "-c", "hostname; sed -n '3,$s/:.*//p' /proc/net/dev | tr -d ' '"};
  s.env = make_env({}, {});
  s.output_path = out;
  s.netns = "/run/netns/" + ns;
  s.hostname = "coldstart-node-9";
  pid_t pid = spawn(s);
  int status = 0;
  ::waitpid(pid, &status, 0);
  std::system(("ip netns del " + ns).c_str());
  EXPECT_EQ(status, 0);
  std::string text = read_file(out);
  EXPECT_EQ(text.substr(0, text.find('\n')), "coldstart-node-9") << text;
  EXPECT_EQ(text.substr(text.find('\n') + 1), "lo\n") << text;  // a fresh namespace: loopback only
  EXPECT_EQ(hostname(), here);

  s.netns = "/run/netns/" + ns + "-not-there";
  try {
    spawn(s);
    ADD_FAILURE() << "spawned into a namespace that is not there";
  } catch (const RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot open network namespace /run/netns/" + ns + "-not-there"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace coldstart
