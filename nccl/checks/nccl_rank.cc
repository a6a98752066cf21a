#include "checks/nccl_rank.h"

#include <cuda_runtime_api.h>
#include <dirent.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <thread>

#include "gpu/nccl.h"
#include "micro/args.h"
#include "micro/expected.h"
#include "micro/launch.h"

namespace coldstart::micro {
namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

// What a communicator can leak besides GPU memory: the process's open file descriptors (cuMem exports and imports
// pass through them) and its threads (each communicator starts proxy threads).
struct ProcessCounts {
  long fds = 0, threads = 0;
};
ProcessCounts process_counts() {
  ProcessCounts c;
  if (DIR* dir = opendir("/proc/self/fd")) {
    while (dirent* e = readdir(dir))
      if (e->d_name[0] != '.') ++c.fds;
    closedir(dir);
    --c.fds;  // the directory's own descriptor
  }
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("Threads:", 0) == 0) c.threads = std::atol(line.c_str() + 8);
  return c;
}

// Least-squares slope of ys over their indices (per iteration); 0 for fewer than two points.
double slope(const std::vector<double>& ys) {
  double n = static_cast<double>(ys.size());
  if (ys.size() < 2) return 0;
  double mx = (n - 1) / 2, my = 0;
  for (double y : ys) my += y / n;
  double num = 0, den = 0;
  for (size_t i = 0; i < ys.size(); ++i) {
    num += (static_cast<double>(i) - mx) * (ys[i] - my);
    den += (static_cast<double>(i) - mx) * (static_cast<double>(i) - mx);
  }
  return num / den;
}

// Ends the rank when a step makes no progress for the timeout: a hang fails instead of blocking.
class Watchdog {
 public:
  Watchdog(int rank, int timeout_s, RankLink* link) : rank_(rank), timeout_s_(timeout_s), link_(link) {
    thread_ = std::thread([this] { watch(); });
  }
  ~Watchdog() {
    stop_ = true;
    thread_.join();
  }
  void step(const std::string& what) {
    std::lock_guard<std::mutex> lock(mutex_);
    what_ = what;
    notes_.clear();
    last_ = Clock::now();
  }
  // What failed inside the step without ending it (one thread of several failed, the others still wait): named in
  // the report should the step hang, so that a hang is not mistaken for one without a cause.
  void note(const std::string& what) {
    std::lock_guard<std::mutex> lock(mutex_);
    notes_.push_back(what);
  }

 private:
  void watch() {
    while (!stop_) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      std::lock_guard<std::mutex> lock(mutex_);
      if (Clock::now() - last_ < std::chrono::seconds(timeout_s_)) continue;
      std::string line = "no progress for " + std::to_string(timeout_s_) + " s in " + what_;
      for (size_t i = 0; i < notes_.size(); ++i) line += (i ? "; " : " (failed before: ") + notes_[i];
      line += notes_.empty() ? ": hung" : "): hung";
      std::fprintf(stderr, "nccl_check rank %d: %s\n", rank_, line.c_str());
      link_->fail(line);
      std::fflush(nullptr);
      _exit(3);
    }
  }
  int rank_, timeout_s_;
  RankLink* link_;
  std::mutex mutex_;
  std::string what_ = "start-up";
  std::vector<std::string> notes_;
  Clock::time_point last_ = Clock::now();
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

struct Failure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class Rank {
 public:
  explicit Rank(const NcclRankConfig& c) : c_(c), link_(c.rank) {}
  int run();

 private:
  void cuda(cudaError_t e, const char* what) {
    if (e != cudaSuccess) throw Failure(std::string(what) + ": " + cudaGetErrorString(e));
  }
  void check_nccl(nccl::Result r, const char* what, nccl::Comm comm) {
    if (r == nccl::Success) return;
    std::string text = std::string(what) + ": " + lib_.fn.GetErrorString(r);
    if (lib_.fn.GetLastError) text += std::string(" (") + lib_.fn.GetLastError(comm) + ")";
    throw Failure(text);
  }
  nccl::Comm init_comm(const std::string& label);
  void destroy(nccl::Comm comm);
  void launch(const std::string& collective, const Shape& s, nccl::Comm comm, int rank, int world);
  bool check(nccl::Comm comm, int rank, int world, const std::string& label, int iteration,
             const std::string& collective, uint64_t bytes, int size_index);
  void verdict(const std::string& name, bool ok, const std::string& detail, nlohmann::json entry);
  void checks_on(nccl::Comm comm, int rank, int world, const std::string& label, int iteration,
                 const std::vector<uint64_t>& sizes);
  void split_checks(nccl::Comm parent, int share);
  void abort_check();
  void abort_first_check();
  void concurrent_check(nccl::Comm parent);
  void suspend_check(nccl::Comm comm);
  size_t free_bytes();

  NcclRankConfig c_;
  RankLink link_;
  nccl::Library lib_;
  cudaStream_t stream_ = nullptr;
  float *send_ = nullptr, *recv_ = nullptr;
  std::vector<float> host_;
  nlohmann::json result_, checks_ = nlohmann::json::array();
  Watchdog* watchdog_ = nullptr;
};

nccl::Comm Rank::init_comm(const std::string& label) {
  watchdog_->step("ncclCommInitRankConfig (" + label + ")");
  nccl::UniqueId id{};
  if (c_.rank == 0) check_nccl(lib_.fn.GetUniqueId(&id), "ncclGetUniqueId", nullptr);
  auto all = link_.exchange(c_.rank == 0 ? std::string(id.internal, sizeof id.internal) : "");
  std::memcpy(id.internal, all[0].data(), sizeof id.internal);
  nccl::Config config = nccl::default_config();
  nccl::Comm comm = nullptr;
  check_nccl(lib_.fn.CommInitRankConfig(&comm, c_.world, id, c_.rank, &config), "ncclCommInitRankConfig", nullptr);
  return comm;
}

void Rank::destroy(nccl::Comm comm) {
  watchdog_->step("ncclCommFinalize/ncclCommDestroy");
  if (lib_.fn.CommFinalize) check_nccl(lib_.fn.CommFinalize(comm), "ncclCommFinalize", comm);
  check_nccl(lib_.fn.CommDestroy(comm), "ncclCommDestroy", nullptr);
}

void Rank::launch(const std::string& collective, const Shape& s, nccl::Comm comm, int rank, int world) {
  const auto& f = lib_.fn;
  nccl::Result r = nccl::Success;
  if (collective == "all_reduce") r = f.AllReduce(send_, recv_, s.chunk, nccl::Float32, nccl::Sum, comm, stream_);
  if (collective == "all_gather") r = f.AllGather(send_, recv_, s.chunk, nccl::Float32, comm, stream_);
  if (collective == "reduce_scatter")
    r = f.ReduceScatter(send_, recv_, s.chunk, nccl::Float32, nccl::Sum, comm, stream_);
  if (collective == "broadcast") r = f.Broadcast(send_, recv_, s.chunk, nccl::Float32, s.root, comm, stream_);
  if (collective == "sendrecv" || collective == "all_to_all") {
    check_nccl(f.GroupStart(), "ncclGroupStart", comm);
    if (collective == "sendrecv") {
      check_nccl(f.Send(send_, s.chunk, nccl::Float32, (rank + 1) % world, comm, stream_), "ncclSend", comm);
      check_nccl(f.Recv(recv_, s.chunk, nccl::Float32, (rank + world - 1) % world, comm, stream_), "ncclRecv", comm);
    } else {
      for (int p = 0; p < world; ++p) {
        check_nccl(f.Send(send_ + p * s.chunk, s.chunk, nccl::Float32, p, comm, stream_), "ncclSend", comm);
        check_nccl(f.Recv(recv_ + p * s.chunk, s.chunk, nccl::Float32, p, comm, stream_), "ncclRecv", comm);
      }
    }
    r = f.GroupEnd();
  }
  check_nccl(r, ("nccl " + collective).c_str(), comm);
}

// Every rank takes part in every verdict (the launcher's exchange), so rank 0 prints each check once with the first
// failing rank's detail.
void Rank::verdict(const std::string& name, bool ok, const std::string& detail, nlohmann::json entry) {
  auto all = link_.exchange(ok ? "" : "rank " + std::to_string(c_.rank) + " " + detail);
  std::string first;
  for (const auto& d : all)
    if (first.empty()) first = d;
  if (c_.rank == 0) {
    std::printf("%s %s%s%s\n", first.empty() ? "PASS" : "FAIL", name.c_str(), first.empty() ? "" : ": ", first.c_str());
    std::fflush(stdout);
    nlohmann::json merged = entry;
    merged["name"] = name;
    merged["ok"] = first.empty();
    if (!first.empty()) merged["detail"] = first;
    link_.note(merged.dump());
  }
  entry["name"] = name;
  entry["ok"] = ok;
  if (!ok) entry["detail"] = detail;
  checks_.push_back(std::move(entry));
}

bool Rank::check(nccl::Comm comm, int rank, int world, const std::string& label, int iteration,
                 const std::string& collective, uint64_t bytes, int size_index) {
  std::string name =
      collective + " " + format_size(bytes) + " comm " + label +
      (c_.repeat > 1 ? " repeat " + std::to_string(iteration + 1) + "/" + std::to_string(c_.repeat) : "");
  watchdog_->step(name);
  Shape s = shape_for(collective, bytes, world, size_index % world);
  for (size_t i = 0; i < s.send_count; ++i) host_[i] = input_value(rank, i);
  cuda(cudaMemcpyAsync(send_, host_.data(), s.send_count * sizeof(float), cudaMemcpyHostToDevice, stream_),
       "cudaMemcpyAsync");
  cuda(cudaMemsetAsync(recv_, 0xff, s.recv_count * sizeof(float), stream_), "cudaMemsetAsync");  // NaN
  cuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
  auto t0 = Clock::now();
  launch(collective, s, comm, rank, world);
  cuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
  double ms = ms_since(t0);
  nccl::Result async = nccl::Success;
  check_nccl(lib_.fn.CommGetAsyncError(comm, &async), "ncclCommGetAsyncError", comm);
  check_nccl(async, "the communicator's asynchronous error", comm);
  cuda(cudaMemcpyAsync(host_.data(), recv_, s.recv_count * sizeof(float), cudaMemcpyDeviceToHost, stream_),
       "cudaMemcpyAsync");
  cuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
  std::string detail;
  size_t wrong = 0;
  for (size_t i = 0; i < s.recv_count; ++i) {
    float want = expected_value(s, world, rank, i);
    if (host_[i] == want) continue;
    if (wrong++ == 0) {
      char text[160];
      std::snprintf(text, sizeof text, "index %zu: got %g, expected %g", i, static_cast<double>(host_[i]),
                    static_cast<double>(want));
      detail = text;
    }
  }
  if (wrong) detail += " (" + std::to_string(wrong) + " of " + std::to_string(s.recv_count) + " elements wrong)";
  verdict(name, wrong == 0, detail,
          {{"check", "collective"},
           {"collective", collective},
           {"bytes", bytes},
           {"count", s.recv_count},
           {"comm", label},
           {"iteration", iteration},
           {"ms", ms}});
  return wrong == 0;
}

void Rank::checks_on(nccl::Comm comm, int rank, int world, const std::string& label, int iteration,
                     const std::vector<uint64_t>& sizes) {
  for (size_t k = 0; k < sizes.size(); ++k)
    for (const auto& collective : c_.collectives)
      check(comm, rank, world, label, iteration, collective, sizes[k], static_cast<int>(k));
}

void Rank::split_checks(nccl::Comm parent, int share) {
  // Two halves (even and odd ranks) from 4 ranks on; below that one child holding every rank.
  bool halves = c_.world >= 4;
  int color = halves ? c_.rank % 2 : 0;
  int child_world = halves ? (c_.world - color + 1) / 2 : c_.world;
  int child_rank = halves ? c_.rank / 2 : c_.rank;
  std::string label = "split" + std::to_string(share) + (halves ? "-halves" : "");
  watchdog_->step("ncclCommSplit (" + label + ")");
  nccl::Config config = nccl::default_config();
  config.splitShare = share;
  nccl::Comm child = nullptr;
  check_nccl(lib_.fn.CommSplit(parent, color, c_.rank, &child, &config), "ncclCommSplit", parent);
  checks_on(child, child_rank, child_world, label, 0, c_.sizes);
  destroy(child);
  // The parent must still work once its child is gone (with splitShare 1 they shared resources).
  std::vector<uint64_t> ends{c_.sizes.front(), c_.sizes.back()};
  for (size_t k = 0; k < ends.size(); ++k)
    check(parent, c_.rank, c_.world, "world after " + label + " destroyed", 0, "all_reduce", ends[k],
          static_cast<int>(k));
}

void Rank::abort_check() {
  nccl::Comm comm = init_comm("abort");
  uint64_t bytes = std::min<uint64_t>(c_.sizes.back(), 1ull << 20);
  check(comm, c_.rank, c_.world, "abort", 0, "all_reduce", bytes, 0);  // connected before the abort
  watchdog_->step("an all_reduce that rank " + std::to_string(c_.world - 1) + " never joins");
  bool participant = c_.rank != c_.world - 1;
  Shape s = shape_for("all_reduce", bytes, c_.world, 0);
  if (participant) launch("all_reduce", s, comm, c_.rank, c_.world);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  bool in_flight = !participant || cudaStreamQuery(stream_) == cudaErrorNotReady;
  link_.barrier();
  watchdog_->step("ncclCommAbort with an all_reduce in flight");
  auto t0 = Clock::now();
  nccl::Result aborted = lib_.fn.CommAbort(comm);
  double abort_ms = ms_since(t0);
  cudaError_t drained = cudaStreamSynchronize(stream_);
  cudaError_t usable = cudaMemsetAsync(recv_, 0, 4, stream_);
  if (usable == cudaSuccess) usable = cudaStreamSynchronize(stream_);
  std::string detail;
  if (!in_flight)
    detail = "the all_reduce finished without rank " + std::to_string(c_.world - 1) + ": nothing to abort";
  if (aborted != nccl::Success) detail = std::string("ncclCommAbort: ") + lib_.fn.GetErrorString(aborted);
  if (usable != cudaSuccess)
    detail = std::string("the GPU is not usable after the abort: ") + cudaGetErrorString(usable);
  verdict("abort with an all_reduce in flight", detail.empty(), detail,
          {{"check", "abort"},
           {"in_flight", in_flight},
           {"participant", participant},
           {"abort_ms", abort_ms},
           {"stream_after_abort", cudaGetErrorString(drained)}});
}

/* ncclCommAbort from another thread while the communicator's first all_reduce connects (the connection waits for a
 * rank that never joins), as a launcher's watchdog does: the all_reduce must return, the GPU stay usable, and the
 * GPU's memory, fds and threads come back to what they were before the communicator. */
void Rank::abort_first_check() {
  link_.barrier();
  size_t free_before = free_bytes();
  ProcessCounts counts_before = process_counts();
  nccl::Comm comm = init_comm("abort in the first collective");
  bool participant = c_.rank != c_.world - 1;
  uint64_t bytes = std::min<uint64_t>(c_.sizes.back(), 1ull << 20);
  Shape s = shape_for("all_reduce", bytes, c_.world, 0);
  watchdog_->step("a first all_reduce that rank " + std::to_string(c_.world - 1) + " never joins, then ncclCommAbort");
  std::atomic<bool> abort_started{false};
  nccl::Result aborted = nccl::Success;
  double abort_ms = 0;
  std::thread aborter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(1000));
    abort_started = true;
    auto t0 = Clock::now();
    aborted = lib_.fn.CommAbort(comm);
    abort_ms = ms_since(t0);
  });
  nccl::Result launched = nccl::Success;
  bool returned_before_abort = false;
  if (participant) {
    launched = lib_.fn.AllReduce(send_, recv_, s.chunk, nccl::Float32, nccl::Sum, comm, stream_);
    returned_before_abort = !abort_started;
  }
  aborter.join();
  // The kernel, where one was launched, stops on the abort flag; bounded by the watchdog
  while (cudaStreamQuery(stream_) == cudaErrorNotReady) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  cudaError_t usable = cudaMemsetAsync(recv_, 0, 4, stream_);
  if (usable == cudaSuccess) usable = cudaStreamSynchronize(stream_);
  link_.barrier();  // every rank's communicator is gone
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  size_t free_after = free_bytes();
  ProcessCounts counts_after = process_counts();
  long long fell = static_cast<long long>(free_before) - static_cast<long long>(free_after);
  std::string detail;
  if (aborted != nccl::Success) detail = std::string("ncclCommAbort: ") + lib_.fn.GetErrorString(aborted);
  if (usable != cudaSuccess)
    detail = std::string("the GPU is not usable after the abort: ") + cudaGetErrorString(usable);
  if (fell > static_cast<long long>(c_.leak_tolerance))
    detail = "the GPU's free memory fell by " + std::to_string(fell >> 20) + " MiB over the aborted communicator";
  if (counts_after.fds > counts_before.fds + 2)
    detail = "open fds " + std::to_string(counts_before.fds) + " -> " + std::to_string(counts_after.fds);
  if (counts_after.threads > counts_before.threads)
    detail = "threads " + std::to_string(counts_before.threads) + " -> " + std::to_string(counts_after.threads);
  verdict("abort from another thread in the first all_reduce", detail.empty(), detail,
          {{"check", "abort-first"},
           {"participant", participant},
           {"returned_before_abort", returned_before_abort},
           {"all_reduce_result", participant ? lib_.fn.GetErrorString(launched) : "not called"},
           {"abort_ms", abort_ms},
           {"fell_mib", fell / double(1 << 20)},
           {"fds", {counts_before.fds, counts_after.fds}},
           {"threads", {counts_before.threads, counts_after.threads}}});
}

/* Communicators that connect at once: CONCURRENT children of the world (ncclCommSplit, made in turn, connecting
 * lazily), each running its first all_reduce in a thread of its own, with buffers and a stream of its own. Every
 * element of every child's result is checked. */
void Rank::concurrent_check(nccl::Comm parent) {
  int n = c_.concurrent;
  std::vector<nccl::Comm> children(n, nullptr);
  for (int k = 0; k < n; ++k) {
    watchdog_->step("ncclCommSplit (concurrent child " + std::to_string(k) + ")");
    nccl::Config config = nccl::default_config();
    check_nccl(lib_.fn.CommSplit(parent, 0, c_.rank, &children[k], &config), "ncclCommSplit", parent);
  }
  uint64_t bytes = std::min<uint64_t>(c_.sizes.back(), 16ull << 20);
  Shape s = shape_for("all_reduce", bytes, c_.world, 0);
  std::vector<std::string> errors(n);
  std::vector<double> ms(n, 0);
  watchdog_->step(std::to_string(n) + " children's first all_reduce at once, one thread each");
  link_.barrier();
  std::vector<std::thread> threads;
  for (int k = 0; k < n; ++k) {
    threads.emplace_back([&, k] {
      cudaSetDevice(c_.device);
      cudaStream_t stream = nullptr;
      float *send = nullptr, *recv = nullptr;
      std::vector<float> host(s.send_count);
      auto fail = [&](const std::string& what) {
        errors[k] = what;
        watchdog_->note("child " + std::to_string(k) + ": " + what);
      };
      if (cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess ||
          cudaMalloc(reinterpret_cast<void**>(&send), s.send_count * sizeof(float)) != cudaSuccess ||
          cudaMalloc(reinterpret_cast<void**>(&recv), s.recv_count * sizeof(float)) != cudaSuccess)
        return fail("stream or buffers");
      for (size_t i = 0; i < s.send_count; ++i) host[i] = input_value(c_.rank, i);
      cudaMemcpy(send, host.data(), s.send_count * sizeof(float), cudaMemcpyHostToDevice);
      auto t0 = Clock::now();
      nccl::Result r = lib_.fn.AllReduce(send, recv, s.chunk, nccl::Float32, nccl::Sum, children[k], stream);
      if (r != nccl::Success) return fail(std::string("ncclAllReduce: ") + lib_.fn.GetErrorString(r));
      if (cudaStreamSynchronize(stream) != cudaSuccess) return fail("cudaStreamSynchronize");
      ms[k] = ms_since(t0);
      host.resize(s.recv_count);
      cudaMemcpy(host.data(), recv, s.recv_count * sizeof(float), cudaMemcpyDeviceToHost);
      size_t wrong = 0;
      for (size_t i = 0; i < s.recv_count; ++i) wrong += host[i] != expected_value(s, c_.world, c_.rank, i);
      if (wrong) fail(std::to_string(wrong) + " of " + std::to_string(s.recv_count) + " elements wrong");
      cudaFree(send);
      cudaFree(recv);
      cudaStreamDestroy(stream);
    });
  }
  for (auto& t : threads) t.join();
  std::string detail;
  for (int k = 0; k < n && detail.empty(); ++k)
    if (!errors[k].empty()) detail = "child " + std::to_string(k) + ": " + errors[k];
  verdict(std::to_string(n) + " communicators connecting at once (threads)", detail.empty(), detail,
          {{"check", "concurrent"}, {"children", n}, {"bytes", bytes}, {"first_all_reduce_ms", ms}});
  for (auto child : children) destroy(child);
}

// The memory manager (NCCL 2.30) releases a connected communicator's buffers and imports on suspend and remakes them on
// resume: the GPU's free memory must rise while suspended, and every collective must still be right afterwards.
void Rank::suspend_check(nccl::Comm comm) {
  link_.barrier();
  size_t before = free_bytes();
  watchdog_->step("ncclCommSuspend (NCCL_SUSPEND_MEM)");
  check_nccl(lib_.fn.CommSuspend(comm, nccl::kSuspendMem), "ncclCommSuspend", comm);
  link_.barrier();  // every rank has released before the memory is read
  size_t suspended = free_bytes();
  watchdog_->step("ncclCommResume");
  check_nccl(lib_.fn.CommResume(comm), "ncclCommResume", comm);
  link_.barrier();
  size_t resumed = free_bytes();
  long long released = static_cast<long long>(suspended) - static_cast<long long>(before);
  std::string detail = "the GPU's free memory rose by " + std::to_string(released >> 20) + " MiB while suspended";
  verdict("memory released by ncclCommSuspend", released > 0, detail,
          {{"check", "suspend"},
           {"free_before", before},
           {"free_suspended", suspended},
           {"free_resumed", resumed},
           {"released_mib", released / double(1 << 20)}});
  std::vector<uint64_t> sizes{c_.sizes.front(), std::min<uint64_t>(c_.sizes.back(), 64ull << 20)};
  checks_on(comm, c_.rank, c_.world, "world after suspend and resume", 0, sizes);
}

size_t Rank::free_bytes() {
  size_t free = 0, total = 0;
  cuda(cudaMemGetInfo(&free, &total), "cudaMemGetInfo");
  return free;
}

int Rank::run() {
  std::string error;
  int code = 1;
  Watchdog watchdog(c_.rank, c_.timeout_s, &link_);
  watchdog_ = &watchdog;
  try {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
      code = 2;
      throw Failure("no CUDA device");
    }
    cuda(cudaSetDevice(c_.device), "cudaSetDevice");
    cuda(cudaFree(nullptr), "cudaFree (creating the context)");
    lib_ = nccl::load(c_.nccl_lib);
    if (c_.abort && !lib_.fn.CommAbort) throw Failure(lib_.path + " has no ncclCommAbort: --abort needs it");
    if (c_.suspend && !lib_.fn.CommSuspend)
      throw Failure(lib_.path + " has no ncclCommSuspend (NCCL 2.30+): --suspend needs it");
    cudaDeviceProp prop{};
    cuda(cudaGetDeviceProperties(&prop, c_.device), "cudaGetDeviceProperties");
    char bus[32] = {};
    cudaDeviceGetPCIBusId(bus, sizeof bus, c_.device);
    const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
    result_["device"] = {
        {"name", prop.name}, {"pci_bus_id", bus}, {"visible", visible ? visible : ""}, {"index", c_.device}};
    result_["nccl"] = {{"version", lib_.version_string()}, {"path", lib_.path}};
    size_t elements = std::max<size_t>(c_.sizes.back() / sizeof(float), c_.world);
    cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
    cuda(cudaMalloc(reinterpret_cast<void**>(&send_), elements * sizeof(float)), "cudaMalloc (send buffer)");
    cuda(cudaMalloc(reinterpret_cast<void**>(&recv_), elements * sizeof(float)), "cudaMalloc (receive buffer)");
    host_.resize(elements);
    link_.barrier();
    size_t before = free_bytes();
    std::vector<size_t> after;
    std::vector<double> after_fds, after_threads, after_mib;
    for (int it = 0; it < c_.repeat; ++it) {
      nccl::Comm comm = init_comm("world");
      std::vector<uint64_t> sizes = c_.sizes;
      if (it > 0) sizes = {c_.sizes.front(), std::min<uint64_t>(c_.sizes.back(), 1ull << 20)};
      checks_on(comm, c_.rank, c_.world, "world", it, sizes);
      if (it == 0 && c_.suspend) suspend_check(comm);
      if (it == 0)
        for (int share : c_.split_share) split_checks(comm, share);
      if (it == 0 && c_.concurrent > 0) concurrent_check(comm);
      destroy(comm);
      link_.barrier();  // every rank's communicator is gone before the GPU's memory is read
      after.push_back(free_bytes());
      ProcessCounts counts = process_counts();
      after_fds.push_back(static_cast<double>(counts.fds));
      after_threads.push_back(static_cast<double>(counts.threads));
      after_mib.push_back(-static_cast<double>(after.back()) / double(1 << 20));
    }
    if (c_.repeat > 1) {
      long long growth = 0;
      for (size_t k = 1; k < after.size(); ++k)
        growth = std::max(growth, static_cast<long long>(after[0]) - static_cast<long long>(after[k]));
      long long kept = static_cast<long long>(before) - static_cast<long long>(after[0]);
      std::string detail = "the GPU's free memory fell by " + std::to_string(growth >> 20) + " MiB after " +
                           std::to_string(c_.repeat) + " communicators (tolerance " +
                           std::to_string(c_.leak_tolerance >> 20) + " MiB)";
      verdict("memory given back over " + std::to_string(c_.repeat) + " init and destroy",
              growth <= static_cast<long long>(c_.leak_tolerance), detail,
              {{"check", "memory"},
               {"free_before", before},
               {"free_after_each_destroy", after},
               {"kept_after_first_mib", kept / double(1 << 20)},
               {"growth_mib", growth / double(1 << 20)},
               {"used_mib_slope_per_iteration", slope(after_mib)}});
      // The first communicator keeps what a process makes once (the proxy's listening socket, CUDA's own files):
      // from there on, the counts must not grow. A slope under 1/repeat is less than one leaked over the loop.
      auto flat = [&](const char* what, const std::vector<double>& ys) {
        std::vector<double> rest(ys.begin() + 1, ys.end());
        double s = slope(rest), rise = *std::max_element(rest.begin(), rest.end()) - ys[0];
        char text[200];
        std::snprintf(text, sizeof text,
                      "%s after each destroy: %.0f after the first, at most %.0f more later, "
                      "slope %.4f per iteration over %d",
                      what, ys[0], rise, s, c_.repeat);
        verdict(std::string(what) + " flat over " + std::to_string(c_.repeat) + " init and destroy",
                s * c_.repeat < 1 && rise <= 2, text,
                {{"check", what}, {"after_each_destroy", ys}, {"slope_per_iteration", s}, {"rise", rise}});
      };
      flat("open fds", after_fds);
      flat("threads", after_threads);
    }
    if (c_.abort_first) abort_first_check();
    if (c_.abort) abort_check();
    if (!c_.abort) {
      cudaFree(send_);
      cudaFree(recv_);
      cudaStreamDestroy(stream_);
    }
  } catch (const std::exception& e) {
    error = e.what();
  }
  if (!error.empty()) {
    std::fprintf(stderr, "nccl_check rank %d/%d (CUDA_VISIBLE_DEVICES=%s, device %d): %s\n", c_.rank, c_.world,
                 std::getenv("CUDA_VISIBLE_DEVICES") ? std::getenv("CUDA_VISIBLE_DEVICES") : "", c_.device,
                 error.c_str());
    link_.fail(error);
    std::fflush(nullptr);
    _exit(code);  // NCCL's threads may still run: do not unwind them
  }
  result_["rank"] = c_.rank;
  result_["checks"] = checks_;
  link_.report(result_.dump());
  std::fflush(nullptr);
  _exit(0);  // as above; the watchdog stops with the process
}

}  // namespace

int run_nccl_rank(const NcclRankConfig& config) { return Rank(config).run(); }

}  // namespace coldstart::micro
