// Hostile input to doctor net (issue 41): hundreds of targets under an address-space or thread limit end in a verdict,
// never in an abort.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "net/diagnose.h"
#include "net/target.h"
#include "net/test_env.h"

namespace coldstart::net {
namespace {

using test::env_of;

// ---- Hundreds of targets under a limit ------------------------------------------------------------------------------

constexpr const char* kChildVariable = "COLDSTART_NET_LIMITED_CHILD";
constexpr int kTargets = 300;

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAsan = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kAsan = true;
#else
constexpr bool kAsan = false;
#endif
#else
constexpr bool kAsan = false;
#endif

// In the limited child: hundreds of targets, numeric and named, each with a proxy some client would take (a second
// probe of its own), checked to a verdict.
void check_hundreds_of_targets() {
  std::vector<Target> targets;
  for (int i = 0; i < kTargets; ++i)
    targets.push_back(parse_target((i % 10 ? "127.0.0.1:" : "localhost:") + std::to_string(20'000 + i)));
  NetOptions opts;
  opts.timeout_s = 0.5;
  NetReport r = diagnose(targets, HostFacts{}, env_of({{"http_proxy", "http://127.0.0.1:1"}}), opts);
  ASSERT_EQ(r.targets.size(), targets.size());
  for (const TargetReport& t : r.targets) EXPECT_FALSE(t.layers.empty()) << t.target.text;
  EXPECT_EQ(r.verdict.status, Status::broken);  // nothing listens there
}

// Runs this test again in a child under `limit`, through exec (a fresh process: no other test's threads), and
// returns how it ended: "exit 0", "exit 1", "signal 6".
std::string run_limited_child(const std::string& mode) {
  const std::string self = std::filesystem::read_symlink("/proc/self/exe");
  const std::string filter = "--gtest_filter=NetHostile.HundredsOfTargetsUnderAMemoryOrThreadLimitGetAVerdict";
  const pid_t pid = fork();
  if (pid == 0) {
    if (mode == "nproc") {  // nobody, allowed a few threads beyond what nobody runs already
      int running = 0;
      for (const auto& e : std::filesystem::directory_iterator("/proc")) {
        struct stat st {};
        if (::stat(e.path().c_str(), &st) == 0 && st.st_uid == 65534) ++running;
      }
      const rlim_t n = static_cast<rlim_t>(running + 6);
      const rlimit lim{n, n};
      if (setgid(65534) != 0 || setuid(65534) != 0 || setrlimit(RLIMIT_NPROC, &lim) != 0) _exit(120);
      setenv("ASAN_OPTIONS", "detect_leaks=0", 1);  // LeakSanitizer's tracer is a thread too
    } else {                                        // 1 GB of address space, as `ulimit -v 1000000`
      const rlimit lim{1'000'000'000, 1'000'000'000};
      if (setrlimit(RLIMIT_AS, &lim) != 0) _exit(120);
    }
    setenv(kChildVariable, mode.c_str(), 1);
    if (!freopen("/dev/null", "w", stdout)) _exit(120);
    execl(self.c_str(), self.c_str(), filter.c_str(), static_cast<char*>(nullptr));
    _exit(121);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFSIGNALED(status)) return "signal " + std::to_string(WTERMSIG(status));
  return "exit " + std::to_string(WEXITSTATUS(status));
}

TEST(NetHostile, HundredsOfTargetsUnderAMemoryOrThreadLimitGetAVerdict) {
  if (std::getenv(kChildVariable)) {
    check_hundreds_of_targets();
    return;
  }
  // A thread per target asked for 300 stacks; where they could not be had, std::thread threw and the run aborted.
  int ran = 0;
  if (!kAsan) {  // ASan reserves terabytes of shadow: no address-space limit lets it start
    EXPECT_EQ(run_limited_child("as"), "exit 0") << "300 targets under RLIMIT_AS of 1 GB";
    ++ran;
  }
  if (geteuid() == 0) {  // RLIMIT_NPROC binds only a user other than root
    EXPECT_EQ(run_limited_child("nproc"), "exit 0") << "300 targets under RLIMIT_NPROC (a few threads)";
    ++ran;
  }
  if (!ran) GTEST_SKIP() << "an ASan build not run as root: neither limit can be set here";
}

}  // namespace
}  // namespace coldstart::net
