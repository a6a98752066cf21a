#include "util/clock.h"

#include <time.h>
#include <unistd.h>

#include <cstdlib>
#include <ctime>
#include <fstream>
#include <sstream>
#include <string>

namespace coldstart {
namespace {
int64_t now(clockid_t id) {
  timespec ts{};
  clock_gettime(id, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}
}  // namespace

int64_t mono_ns() { return now(CLOCK_MONOTONIC); }
int64_t real_ns() { return now(CLOCK_REALTIME); }

std::string format_now(const char* strftime_format, bool utc) {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  if (utc)
    gmtime_r(&t, &tm);
  else
    localtime_r(&t, &tm);
  char buf[128];
  size_t n = std::strftime(buf, sizeof buf, strftime_format, &tm);
  return std::string(buf, n);
}

namespace {

// From /proc/self/stat, in clock ticks; 0 when it cannot be read. *tick_ns: the tick.
int64_t proc_start_mono_ns(int64_t* tick_ns) {
  std::ifstream in("/proc/self/stat");
  std::string line;
  if (!std::getline(in, line)) return 0;
  // The command name (field 2) may hold spaces and parentheses; fields after the last ')' are plain.
  auto close = line.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream rest(line.substr(close + 2));
  std::string field;
  // Field 3 is the first after ')'; starttime is field 22.
  for (int i = 3; i < 22; ++i) rest >> field;
  long long start_ticks = 0;
  if (!(rest >> start_ticks)) return 0;
  long hz = sysconf(_SC_CLK_TCK);
  if (hz <= 0) return 0;
  *tick_ns = 1'000'000'000 / hz;
  // starttime counts from boot on CLOCK_BOOTTIME; shift it onto CLOCK_MONOTONIC.
  int64_t start_boot = start_ticks * *tick_ns;
  return start_boot - (now(CLOCK_BOOTTIME) - now(CLOCK_MONOTONIC));
}

}  // namespace

int64_t process_start_mono_ns(std::string* source) {
  int64_t tick = 0;
  const int64_t proc = proc_start_mono_ns(&tick);
  if (source) *source = proc > 0 ? "proc" : "";
  if (const char* env = std::getenv(kSpawnEnv)) {
    char* end = nullptr;
    const long long spawned = std::strtoll(env, &end, 10);
    // The lab read its clock before fork(); /proc rounds the fork down to a tick. Two ticks apart at most, or the
    // variable is not about this process.
    if (end && *end == '\0' && spawned > 0 && spawned <= now(CLOCK_MONOTONIC) &&
        (proc == 0 || std::llabs(spawned - proc) <= 2 * tick)) {
      if (source) *source = "lab";
      return spawned;
    }
  }
  return proc;
}

}  // namespace coldstart
