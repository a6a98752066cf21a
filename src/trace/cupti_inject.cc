// libcoldstart_cupti.so: loaded into any CUDA process by the driver through CUDA_INJECTION64_PATH. It subscribes to
// CUPTI's driver- and runtime-API callbacks for the calls that matter to start-up (context creation, module and
// library loading, cuMem*, cuIpc*, peer queries, launches, synchronisation) and records, per call, its thread, start
// and duration on CLOCK_MONOTONIC. Records go to a fixed-size array (COLDSTART_TRACE_MAX calls, default 1,048,576;
// 24 bytes each) and are written at exit or on SIGTERM/SIGINT to $COLDSTART_TRACE_DIR/cupti.<host>.<pid>.tsv.
//
// It must never crash or hang its host: CUPTI is loaded with dlopen, every failure is said once (stderr and the file)
// and recording is then off; nothing here throws; the callback takes no lock.
#include <cupti.h>
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>

#include "trace/trace_names.h"
#include "util/dl.h"

namespace {

struct Record {
  uint32_t name;  // index into the name table: domain * kMaxCbid + cbid
  uint32_t tid;
  int64_t start_ns;
  int64_t dur_ns;
};

constexpr uint32_t kMaxCbid = 4096;  // larger than any CUPTI callback id of either domain
constexpr uint32_t kMaxThreads = 1024;

// A thread's name, taken at its first recorded call: NCCL's threads (named when NCCL_SET_THREAD_NAME=1) are gone by
// the time the file is written.
struct ThreadName {
  std::atomic<uint32_t> tid{0};
  char name[16];
};

struct State {
  Record* records = nullptr;
  uint64_t capacity = 0;
  std::atomic<uint64_t> next{0};
  std::atomic<uint8_t> decided[2 * kMaxCbid];  // 0 unknown, 1 record, 2 skip (by function name, first call)
  const char* names[2 * kMaxCbid];
  std::string dir;
  std::string problem;  // why recording is off, when it is
  std::atomic<bool> written{false};
  int64_t mono_anchor = 0, real_anchor = 0;
  long gmtoff = 0;
  CUpti_SubscriberHandle subscriber = nullptr;
  ThreadName threads[kMaxThreads];
  std::atomic<uint32_t> nthreads{0};
};
State* g = nullptr;

int64_t now_ns(clockid_t c) {
  timespec ts{};
  clock_gettime(c, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

uint32_t current_tid() {
  thread_local uint32_t tid = 0;
  if (tid == 0) {
    tid = static_cast<uint32_t>(syscall(SYS_gettid));
    uint32_t slot = g->nthreads.fetch_add(1, std::memory_order_relaxed);
    if (slot < kMaxThreads) {
      pthread_getname_np(pthread_self(), g->threads[slot].name, sizeof g->threads[slot].name);
      g->threads[slot].tid.store(tid, std::memory_order_release);
    }
  }
  return tid;
}

void CUPTIAPI on_callback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
  if (!g || cbid >= kMaxCbid) return;
  uint32_t slot = (domain == CUPTI_CB_DOMAIN_RUNTIME_API ? kMaxCbid : 0) + cbid;
  const auto* cb = static_cast<const CUpti_CallbackData*>(data);
  uint8_t d = g->decided[slot].load(std::memory_order_relaxed);
  if (d == 0) {
    bool want = cb->functionName && coldstart::trace::recorded_call(cb->functionName);
    if (want) g->names[slot] = cb->functionName;  // CUPTI's strings live as long as the process
    d = want ? 1 : 2;
    g->decided[slot].store(d, std::memory_order_relaxed);
  }
  if (d != 1) return;
  if (cb->callbackSite == CUPTI_API_ENTER) {
    *cb->correlationData = static_cast<uint64_t>(now_ns(CLOCK_MONOTONIC));
    return;
  }
  int64_t end = now_ns(CLOCK_MONOTONIC);
  int64_t start = static_cast<int64_t>(*cb->correlationData);
  uint64_t i = g->next.fetch_add(1, std::memory_order_relaxed);
  if (i >= g->capacity) return;  // counted as dropped when written
  g->records[i] = {slot, current_tid(), start, end - start};
}

std::string thread_name(uint32_t tid) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/self/task/%u/comm", tid);
  FILE* f = std::fopen(path, "r");
  if (!f) return "";
  char buf[64] = {};
  size_t n = std::fread(buf, 1, sizeof buf - 1, f);
  std::fclose(f);
  while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r')) buf[--n] = 0;
  for (size_t i = 0; i < n; ++i)
    if (buf[i] == '\t') buf[i] = ' ';
  return buf;
}

void write_out() {
  if (!g || g->written.exchange(true)) return;
  char host[256] = "unknown";
  gethostname(host, sizeof host - 1);
  std::string path = g->dir + "/cupti." + host + "." + std::to_string(getpid()) + ".tsv";
  FILE* f = std::fopen(path.c_str(), "w");
  if (!f) {
    std::fprintf(stderr, "coldstart cupti: cannot write %s\n", path.c_str());
    return;
  }
  std::fprintf(f, "# coldstart.cupti/1\npid\t%d\nhost\t%s\nmono_anchor_ns\t%lld\nreal_anchor_ns\t%lld\ngmtoff_s\t%ld\n",
               getpid(), host, static_cast<long long>(g->mono_anchor), static_cast<long long>(g->real_anchor),
               g->gmtoff);
  if (!g->problem.empty()) std::fprintf(f, "error\t%s\n", g->problem.c_str());
  uint64_t n = g->next.load();
  uint64_t kept = n < g->capacity ? n : g->capacity;
  if (n > kept) std::fprintf(f, "dropped\t%llu\n", static_cast<unsigned long long>(n - kept));
  // Thread names as taken at each thread's first call (NCCL names its threads when NCCL_SET_THREAD_NAME=1).
  uint32_t nthreads = std::min<uint32_t>(g->nthreads.load(), kMaxThreads);
  for (uint32_t k = 0; k < nthreads; ++k) {
    uint32_t tid = g->threads[k].tid.load(std::memory_order_acquire);
    if (!tid) continue;
    std::string name = g->threads[k].name[0] ? std::string(g->threads[k].name) : thread_name(tid);
    for (char& c : name)
      if (c == '\t' || c == '\n') c = ' ';
    std::fprintf(f, "thread\t%u\t%s\n", tid, name.c_str());
  }
  for (uint64_t i = 0; i < kept; ++i) {
    const Record& r = g->records[i];
    const char* name = g->names[r.name] ? g->names[r.name] : "?";
    std::fprintf(f, "call\t%s\t%u\t%lld\t%lld\n", name, r.tid, static_cast<long long>(r.start_ns),
                 static_cast<long long>(r.dur_ns));
  }
  std::fclose(f);
}

struct sigaction g_old_term, g_old_int;

void on_signal(int sig) {
  write_out();
  sigaction(sig, sig == SIGTERM ? &g_old_term : &g_old_int, nullptr);
  raise(sig);
}

void say_once(const std::string& why) {
  g->problem = why;
  std::fprintf(stderr, "coldstart cupti: %s; this process is not traced\n", why.c_str());
}

void* open_cupti() {
  if (const char* p = std::getenv("COLDSTART_CUPTI_LIB"); p && *p) return dlopen(p, RTLD_NOW | RTLD_LOCAL);
  for (const char* name : {"libcupti.so.13", "libcupti.so.12", "libcupti.so", "/usr/local/cuda/lib64/libcupti.so",
                           "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so"})
    if (void* h = dlopen(name, RTLD_NOW | RTLD_LOCAL)) return h;
  return nullptr;
}

}  // namespace

// Called by the CUDA driver when this library is named by CUDA_INJECTION64_PATH. Returns 1 (success) whatever happens:
// a tracing problem must not fail the host's CUDA initialisation.
extern "C" __attribute__((visibility("default"))) int InitializeInjection(void) {
  if (g) return 1;
  g = new (std::nothrow) State();
  if (!g) return 1;
  const char* dir = std::getenv("COLDSTART_TRACE_DIR");
  g->dir = dir && *dir ? dir : ".";
  g->mono_anchor = now_ns(CLOCK_MONOTONIC);
  g->real_anchor = now_ns(CLOCK_REALTIME);
  time_t t = static_cast<time_t>(g->real_anchor / 1000000000);
  tm local{};
  localtime_r(&t, &local);
  g->gmtoff = local.tm_gmtoff;
  std::atexit(write_out);

  uint64_t cap = 1u << 20;
  if (const char* m = std::getenv("COLDSTART_TRACE_MAX"); m && *m) cap = std::strtoull(m, nullptr, 10);
  g->records = static_cast<Record*>(std::calloc(cap ? cap : 1, sizeof(Record)));
  g->capacity = g->records ? cap : 0;

  void* h = open_cupti();
  using Subscribe = CUptiResult (*)(CUpti_SubscriberHandle*, CUpti_CallbackFunc, void*);
  using EnableDomain = CUptiResult (*)(uint32_t, CUpti_SubscriberHandle, CUpti_CallbackDomain);
  using ResultString = CUptiResult (*)(CUptiResult, const char**);
  using EnableCallback = CUptiResult (*)(uint32_t, CUpti_SubscriberHandle, CUpti_CallbackDomain, CUpti_CallbackId);
  using CallbackName = CUptiResult (*)(CUpti_CallbackDomain, uint32_t, const char**);
  EnableCallback enable_callback = nullptr;
  CallbackName callback_name = nullptr;
  Subscribe subscribe = nullptr;
  EnableDomain enable_domain = nullptr;
  ResultString result_string = nullptr;
  if (!h) {
    say_once("CUPTI is unavailable (libcupti could not be loaded; set COLDSTART_CUPTI_LIB to its path)");
  } else if (!coldstart::bind_symbol(h, "cuptiSubscribe", &subscribe) ||
             !coldstart::bind_symbol(h, "cuptiEnableDomain", &enable_domain)) {
    say_once("CUPTI is unavailable (the library lacks cuptiSubscribe/cuptiEnableDomain)");
  } else {
    coldstart::bind_symbol(h, "cuptiGetResultString", &result_string);
    CUptiResult rc = subscribe(&g->subscriber, on_callback, nullptr);
    if (rc != CUPTI_SUCCESS) {
      const char* text = "?";
      if (result_string) result_string(rc, &text);
      say_once(rc == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED
                   ? std::string("CUPTI is already taken by another profiler or tool")
                   : std::string("cuptiSubscribe failed: ") + text);
    } else if (coldstart::bind_symbol(h, "cuptiGetCallbackName", &callback_name) &&
               coldstart::bind_symbol(h, "cuptiEnableCallback", &enable_callback)) {
      // Only the calls we record get a callback: every other driver call of the host runs at full speed.
      // COLDSTART_TRACE_CALLS measures the tracer's own cost: "none" subscribes and enables nothing (what CUPTI's
      // presence costs), "no-kernel-loading" leaves out module/library loads and kernel lookups.
      const char* which = std::getenv("COLDSTART_TRACE_CALLS");
      std::string_view calls = which && *which ? which : "all";
      int enabled = 0;
      for (auto [domain, size] : {std::pair{CUPTI_CB_DOMAIN_DRIVER_API, uint32_t{CUPTI_DRIVER_TRACE_CBID_SIZE}},
                                  std::pair{CUPTI_CB_DOMAIN_RUNTIME_API, uint32_t{CUPTI_RUNTIME_TRACE_CBID_SIZE}}})
        for (uint32_t cbid = 1; cbid < size && cbid < kMaxCbid; ++cbid) {
          const char* name = nullptr;
          if (callback_name(domain, cbid, &name) != CUPTI_SUCCESS || !name) continue;
          if (!coldstart::trace::recorded_call(name) || calls == "none") continue;
          if (calls == "no-kernel-loading" &&
              coldstart::trace::category_of(name) == coldstart::trace::Category::kernel_loading)
            continue;
          if (enable_callback(1, g->subscriber, domain, cbid) == CUPTI_SUCCESS) ++enabled;
        }
      if (enabled == 0 && calls != "none") say_once("CUPTI enabled none of the recorded calls");
    } else if (enable_domain(1, g->subscriber, CUPTI_CB_DOMAIN_DRIVER_API) != CUPTI_SUCCESS ||
               enable_domain(1, g->subscriber, CUPTI_CB_DOMAIN_RUNTIME_API) != CUPTI_SUCCESS) {
      say_once("CUPTI refused the API callback domains");
    }
  }
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, &g_old_term);
  sigaction(SIGINT, &sa, &g_old_int);
  return 1;
}
