// The merger on per-process files recorded by libcoldstart_cupti.so on 2x H200 (one isolated, cuMem-on bench trial),
// and the injection library itself when CUPTI cannot be had.
#include "trace/merge.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <utility>

#include "util/error.h"
#include "util/fs.h"

namespace coldstart::trace {
namespace {
const std::string kDir = std::string(COLDSTART_SOURCE_DIR) + "/tests/data/trace-h200x2-isolated";

// From the start of a process's first recorded call to the end of its last.
std::pair<int64_t, int64_t> span_of(const ProcessTrace& t) {
  int64_t lo = INT64_MAX, hi = 0;
  for (const auto& c : t.calls) {
    lo = std::min(lo, c.start_ns);
    hi = std::max(hi, c.start_ns + c.dur_ns);
  }
  return {lo, hi};
}
}  // namespace

TEST(TraceFiles, ReadHeaderThreadsAndCalls) {
  auto traces = read_trace_dir(kDir);
  ASSERT_EQ(traces.size(), 2u);
  const ProcessTrace& t = traces[0];
  EXPECT_EQ(t.pid, 604);
  EXPECT_EQ(t.host, "vm");
  EXPECT_GT(t.mono_anchor_ns, 0);
  EXPECT_GT(t.real_anchor_ns, 0);
  EXPECT_TRUE(t.error.empty());
  EXPECT_EQ(t.dropped, 0u);
  EXPECT_GT(t.calls.size(), 2000u);
  bool uds = false;
  for (const auto& [tid, name] : t.threads) uds |= name.rfind("NCCL UDS", 0) == 0;
  EXPECT_TRUE(uds) << "NCCL's Unix-socket service thread is named";
}

TEST(TraceFiles, NotACuptiFileIsAnInputErrorNamingIt) {
  EXPECT_THROW(read_process_trace(kDir + "/nccl.rank-0.log"), InputError);
  EXPECT_THROW(read_process_trace("/nonexistent/cupti.x.1.tsv"), InputError);
}

TEST(TraceBudget, LazyConnectionCallsAfterNcclInit) {
  auto traces = read_trace_dir(kDir);
  auto logs = read_nccl_logs(kDir);
  auto b = budgets(traces, logs);
  ASSERT_EQ(b.size(), 2u);
  for (const auto& p : b) {
    EXPECT_GE(p.rank, 0);
    EXPECT_TRUE(p.connection_after_init);
    EXPECT_TRUE(p.nccl_init_ms.count("total"));
    // 24 channels, each a send and a receive buffer shared with the peer: 48 exports and 48 imports per process.
    EXPECT_EQ(p.connection.at("export").count, 48);
    EXPECT_EQ(p.connection.at("import").count, 48);
    EXPECT_EQ(p.connection.at("set_access").count, 96);
    EXPECT_GT(p.connection.at("export").ms, p.connection.at("import").ms);
    EXPECT_GT(p.context.count, 0);
    EXPECT_GT(p.kernel_loading.ms, 0);
    EXPECT_GT(p.first_launch_ms, 0);
  }
  EXPECT_EQ(b[0].rank, 0);
  std::string text = render_budgets(b);
  EXPECT_NE(text.find("connection calls after NCCL init (lazy)"), std::string::npos);
  EXPECT_EQ(budgets_json(b)["processes"][1]["connection"]["export"]["count"], 48);
}

TEST(TraceAttribution, CallsOfOneThreadNeverAddUpToMoreThanTheWindow) {
  auto traces = read_trace_dir(kDir);
  const ProcessTrace& t = traces[1];
  const auto [lo, hi] = span_of(t);
  // Per thread, top-level calls are disjoint, so their clipped sum fits in any window.
  std::map<uint32_t, std::vector<const Call*>> by_thread;
  for (const auto& c : t.calls) by_thread[c.tid].push_back(&c);
  for (auto& [tid, calls] : by_thread) {
    std::sort(calls.begin(), calls.end(), [](auto* a, auto* b) { return a->start_ns < b->start_ns; });
    int64_t end = 0;
    for (const Call* c : calls) {
      // Either nested in the previous top-level call or after it: never a partial overlap.
      if (c->start_ns < end) {
        EXPECT_LE(c->start_ns + c->dur_ns, end) << c->name;
      }
      end = std::max(end, c->start_ns + c->dur_ns);
    }
  }
  Attribution all = attribute(traces, lo, hi, t.pid);
  EXPECT_EQ(all.at("export").count, 48);
  Attribution none = attribute(traces, lo, hi, -1);
  EXPECT_TRUE(none.empty());
  Attribution peers = attribute_others(traces, lo, hi, t.pid);
  EXPECT_GT(peers.at("export").count, 0);
  Attribution half = attribute(traces, lo, lo + (hi - lo) / 2, t.pid);
  double half_ms = 0, all_ms = 0;
  for (const auto& [k, v] : half) half_ms += v.ms;
  for (const auto& [k, v] : all) all_ms += v.ms;
  EXPECT_LT(half_ms, all_ms);
}

// bench --trace: a rank's phases split into the CUDA calls of its process that fall in each (clipped to the phase);
// its first collective also gets its peers' calls; a rank whose process left no trace gets nothing.
TEST(TraceAttribution, EachRanksPhasesGetTheCallsOfItsProcessInThem) {
  auto traces = read_trace_dir(kDir);
  const ProcessTrace& t = traces[0];
  const auto [lo, hi] = span_of(t);
  const int64_t t0 = lo - 1'000'000;  // the trial began 1 ms before the process's first call
  const double mid_ms = static_cast<double>((lo + hi) / 2 - t0) / 1e6, end_ms = static_cast<double>(hi - t0) / 1e6;
  std::vector<RankResult> ranks(2);
  ranks[0].pid = t.pid;
  ranks[1].pid = 99999;  // not traced
  for (auto& r : ranks)
    r.phases = {
        {"cuda_context", 1.0, mid_ms - 1.0}, {"comm_init", mid_ms, end_ms - mid_ms}, {"first_enqueue", 1.0, end_ms}};
  attribute_phases(traces, t0, ranks);

  const Attribution all = attribute(traces, lo, hi, t.pid);
  ASSERT_EQ(ranks[0].phase_calls.size(), 2u);
  EXPECT_EQ(ranks[0].first_collective_calls.at("export").count, all.at("export").count);
  EXPECT_GT(ranks[0].first_collective_peer_calls.at("export").count, 0);
  double split_ms = 0, all_ms = 0;
  for (const auto& [phase, by_category] : ranks[0].phase_calls)
    for (const auto& [category, tally] : by_category) split_ms += tally.ms;
  for (const auto& [category, tally] : all) all_ms += tally.ms;
  EXPECT_NEAR(split_ms, all_ms, 1e-3) << "the two phases tile the process's calls";
  EXPECT_GT(ranks[0].phase_calls.at("cuda_context").at("context").count, 0)
      << "the process starts by making its context";
  int kernel_loads = 0;
  for (const auto& [phase, by_category] : ranks[0].phase_calls)
    if (auto it = by_category.find("kernel_loading"); it != by_category.end()) kernel_loads += it->second.count;
  EXPECT_GE(kernel_loads, all.at("kernel_loading").count);
  EXPECT_TRUE(ranks[1].phase_calls.empty());
  EXPECT_TRUE(ranks[1].first_collective_calls.empty());
}

TEST(TracePerfetto, EventsAreWellFormed) {
  auto traces = read_trace_dir(kDir);
  auto logs = read_nccl_logs(kDir);
  nlohmann::json j = perfetto(traces, logs);
  ASSERT_TRUE(j.contains("traceEvents"));
  int complete = 0, meta = 0, nccl = 0;
  for (const auto& e : j["traceEvents"]) {
    std::string ph = e.at("ph");
    ASSERT_TRUE(e.contains("pid") && e.contains("name"));
    if (ph == "X") {
      ++complete;
      EXPECT_GE(e.at("ts").get<double>(), 0);
      EXPECT_GE(e.at("dur").get<double>(), 0);
      nccl += e.value("cat", "") == "nccl";
    } else if (ph == "M") {
      ++meta;
    } else {
      EXPECT_EQ(ph, "i");
    }
  }
  EXPECT_GT(complete, 4000);
  EXPECT_GE(meta, 2 + 4);  // two processes, at least two threads each
  EXPECT_EQ(nccl, 2);      // each process's NCCL init span, from its log
}

TEST(Injection, WithoutCuptiItSaysSoOnceWritesItsFileAndTheProgramGoesOn) {
  const TempDir scratch("coldstart-inject-");
  const std::string& dir = scratch.path();
  int err[2];
  ASSERT_EQ(pipe(err), 0);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(err[1], 2);
    setenv("COLDSTART_TRACE_DIR", dir.c_str(), 1);
    setenv("COLDSTART_CUPTI_LIB", "/nonexistent/libcupti.so", 1);
    void* h = dlopen(COLDSTART_CUPTI_SO, RTLD_NOW | RTLD_LOCAL);
    if (!h) _exit(10);
    auto init = reinterpret_cast<int (*)()>(dlsym(h, "InitializeInjection"));
    if (!init || init() != 1 || init() != 1) _exit(11);  // a second call is harmless
    exit(0);                                             // atexit writes the file
  }
  close(err[1]);
  std::string text;
  char buf[512];
  ssize_t n;
  while ((n = read(err[0], buf, sizeof buf)) > 0) text.append(buf, static_cast<size_t>(n));
  close(err[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1) << text;
  EXPECT_NE(text.find("CUPTI is unavailable"), std::string::npos) << text;
  auto traces = read_trace_dir(dir);
  ASSERT_EQ(traces.size(), 1u);
  EXPECT_EQ(traces[0].pid, pid);
  EXPECT_NE(traces[0].error.find("CUPTI is unavailable"), std::string::npos);
  EXPECT_TRUE(traces[0].calls.empty());
  EXPECT_NE(render_budgets(budgets(traces, {})).find("not traced: CUPTI is unavailable"), std::string::npos);
}

}  // namespace coldstart::trace

namespace coldstart::trace {

TEST(Injection, OnSigtermItWritesItsFileAndTheProcessStillEndsBySigterm) {
  const TempDir scratch("coldstart-inject-");
  const std::string& dir = scratch.path();
  pid_t pid = fork();
  if (pid == 0) {
    int devnull = open("/dev/null", O_WRONLY);
    dup2(devnull, 2);
    // The host's own SIGTERM disposition is what the tracer hands the signal back to: here, the default (this test
    // binary may have installed a handler of its own in an earlier test).
    signal(SIGTERM, SIG_DFL);
    setenv("COLDSTART_TRACE_DIR", dir.c_str(), 1);
    setenv("COLDSTART_CUPTI_LIB", "/nonexistent/libcupti.so", 1);
    void* h = dlopen(COLDSTART_CUPTI_SO, RTLD_NOW | RTLD_LOCAL);
    auto init = h ? reinterpret_cast<int (*)()>(dlsym(h, "InitializeInjection")) : nullptr;
    if (!init) _exit(10);
    init();
    raise(SIGTERM);
    _exit(11);  // not reached: the handler writes, then SIGTERM's previous disposition ends the process
  }
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status)) << status;
  EXPECT_EQ(WTERMSIG(status), SIGTERM);
  auto traces = read_trace_dir(dir);
  ASSERT_EQ(traces.size(), 1u);
  EXPECT_EQ(traces[0].pid, pid);
}

}  // namespace coldstart::trace
