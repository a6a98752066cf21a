// Hostile input to doctor net (issue 41): targets that are no addresses, environment values holding control
// characters, and hundreds of targets under an address-space or thread limit. Each bad input is one InputError line
// (exit status 2) naming what was given; nothing is probed before it is refused, and nothing aborts.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "net/diagnose.h"
#include "net/peers.h"
#include "net/target.h"
#include "net/test_env.h"
#include "util/error.h"

namespace coldstart::net {
namespace {

using test::env_of;

// What an InputError must be: one line without control characters, bounded whatever the input's length.
void expect_one_line(const std::string& what, const std::string& input) {
  EXPECT_LE(what.size(), 1200u) << input.substr(0, 80);
  for (size_t i = 0; i < what.size(); ++i) {
    const auto u = static_cast<unsigned char>(what[i]);
    const bool c1 = u == 0xc2 && i + 1 < what.size() && static_cast<unsigned char>(what[i + 1]) >= 0x80 &&
                    static_cast<unsigned char>(what[i + 1]) <= 0x9f;
    ASSERT_FALSE(u < 0x20 || u == 0x7f || c1) << "a control character at byte " << i << " of: " << what;
  }
}

// The InputError `f` throws ("" when it throws none, a failure).
template <typename F>
std::string input_error(F&& f, const std::string& input) {
  try {
    f();
  } catch (const InputError& e) {
    expect_one_line(e.what(), input);
    return e.what();
  }
  ADD_FAILURE() << "taken: " << input.substr(0, 120);
  return "";
}

TEST(NetHostile, TargetsThatAreNoAddressesAreRefusedInOneLineNamingThem) {
  const std::string huge(100'000, 'a');
  const std::vector<std::string> bad = {
      // IPv6 literals that are not addresses
      "[::g]:80", "[1:2:3:4:5:6:7:8:9]:80", "[fe80::1%]:80", "[]:80", "[::1:80", "::1]:80", "[[::1]]:80",
      "[1.2.3.4]:80", "https://[1:2:3:4:5:6:7:8:9]/", "[:::]:80", "[1::2::3]:80", "[::1]x:80", "[::1]]:80",
      // zone ids: empty, garbage, or a name (not taken: the probes carry no scope)
      "[fe80::1%eth0]:80", "[fe80::1%%]:80", "[fe80::1%e\x1b]:80", "[fe80::1%../../x]:80",
      // ports: none, 0, a sign, blanks, too large, not digits
      "h:", "h:0", "h:+80", "h:-1", "h:-0", "h:0x50", "h:65536", "h:99999999999999999999", "https://h:/",
      "https://h:+443/", "[::1]:0",
      // control characters anywhere, and at the ends (not trimmed away)
      "h:80\n", "\nh:80", "h\x1b[31m:80", "https://h/\x7f", "h\xc2\x85:80", "h\t:80",
      // huge strings: refused by their length, not by a recursion as deep as they are long
      huge, huge + ":80", "[" + huge + "]:80", "https://" + huge + "/", "h:" + huge, std::string(300, 'a') + ":80",
      std::string(50'000, '[') + ":80", std::string(50'000, ':')};
  for (const std::string& t : bad) {
    const std::string what = input_error([&] { parse_target(t); }, t);
    // The target is named (as far as it is shown: 200 bytes, control characters escaped).
    if (t.size() < 100 && t.find_first_of("\n\x1b\x7f\t\xc2") == std::string::npos)
      EXPECT_NE(what.find(t), std::string::npos) << what;
    EXPECT_NE(what.find("give"), std::string::npos) << what;  // what to give instead
  }
  // What they are close to is still taken.
  EXPECT_EQ(parse_target("[::ffff:1.2.3.4]:80").host, "::ffff:1.2.3.4");
  EXPECT_EQ(parse_target("[2001:db8::1]:65535").port, 65535);
  EXPECT_EQ(parse_target("https://[::1]/").port, 443);
  EXPECT_EQ(parse_target(std::string(253, 'a') + ":1").host.size(), 253u);
}

TEST(NetHostile, EnvironmentValuesWithControlCharactersAreNamedInOneLine) {
  // Every variable doctor net reads, with a newline, an escape sequence, a C1 control: one line naming the variable,
  // from the first function that reads it (env_targets, diagnose, run_peers).
  const std::vector<std::string> vars = {"MASTER_ADDR",
                                         "MASTER_PORT",
                                         "RAY_ADDRESS",
                                         "http_proxy",
                                         "HTTPS_PROXY",
                                         "ALL_PROXY",
                                         "NO_PROXY",
                                         "no_proxy",
                                         "grpc_proxy",
                                         "no_grpc_proxy",
                                         "ws_proxy",
                                         "WSS_PROXY",
                                         "NCCL_SOCKET_IFNAME",
                                         "GLOO_SOCKET_IFNAME",
                                         "NCCL_COMM_ID",
                                         "NCCL_SOCKET_FAMILY",
                                         "RAY_grpc_enable_http_proxy"};
  for (const std::string& var : vars)
    for (const std::string& value :
         {std::string("http://p:3128\nINJECTED"), std::string("10.0.0.1\x1b[31m"), std::string("eth0\xc2\x85")}) {
      std::map<std::string, std::string> env = {{var, value}};
      if (var != "MASTER_ADDR") env["MASTER_ADDR"] = "127.0.0.1";
      const std::string where = var + "=" + value;
      std::string what = input_error([&] { env_targets(env_of(env)); }, where);
      EXPECT_TRUE(what.starts_with(var + "=")) << what;
      what = input_error([&] { diagnose({}, HostFacts{}, env_of(env), NetOptions{}); }, where);
      EXPECT_TRUE(what.starts_with(var + "=")) << what;
    }
  // The value is shown escaped, a proxy's password hidden.
  std::string what = input_error(
      [&] {
        env_targets(env_of({{"https_proxy", "http://user:secret@p:3128\nX"}}));
      },
      "https_proxy");
  EXPECT_NE(what.find("https_proxy=http://user:***@p:3128\\nX"), std::string::npos) << what;
  // MASTER_PORT is named for its own fault, not MASTER_ADDR.
  what = input_error([&] { env_targets(env_of({{"MASTER_ADDR", "h"}, {"MASTER_PORT", "x"}})); }, "MASTER_PORT=x");
  EXPECT_TRUE(what.starts_with("MASTER_PORT=x:")) << what;
  what = input_error([&] { env_targets(env_of({{"MASTER_ADDR", "h:1234"}})); }, "MASTER_ADDR=h:1234");
  EXPECT_NE(what.find("MASTER_PORT"), std::string::npos) << what;
  // A 100 kB value is cut in the message, saying its length.
  const std::string huge(100'000, 'a');
  what = input_error([&] { env_targets(env_of({{"MASTER_ADDR", huge}})); }, "MASTER_ADDR=<100 kB>");
  EXPECT_NE(what.find("(100000 bytes)"), std::string::npos) << what;
  // Under --peers the launchers' variables too, before any rank meets another; a token is never shown.
  PeerOptions po;
  po.env = env_of({{"RANK", "0\n1"}, {"WORLD_SIZE", "2"}});
  what = input_error([&] { run_peers(po); }, "RANK");
  EXPECT_TRUE(what.starts_with("RANK=0\\n1:")) << what;
  po.env = env_of({{"RANK", "0"}, {"WORLD_SIZE", "1"}, {"COLDSTART_TOKEN", "s3cret\n"}});
  what = input_error([&] { run_peers(po); }, "COLDSTART_TOKEN");
  EXPECT_EQ(what.find("s3cret"), std::string::npos) << what;
}

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
