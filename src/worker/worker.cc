#include "worker/worker.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <exception>
#include <iostream>
#include <optional>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "coord/client.h"
#include "gpu/cuda.h"
#include "gpu/nccl.h"
#include "model/phases.h"
#include "model/result.h"
#include "util/clock.h"
#include "util/env.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/random.h"
#include "util/strings.h"
#include "worker/collective.h"
#include "worker/startup.h"

namespace coldstart::worker {
namespace {
using nlohmann::json;

// Times phases, streams their events, and keeps the account of what was not inside one.
class Recorder {
 public:
  explicit Recorder(coord::Client& c) : client_(c) {}

  template <class F>
  void run(std::string_view name, F&& body) {
    // Phase names are plain identifiers, so the events are written directly rather than through a JSON tree.
    client_.send_text(fmt::format(R"({{"t":"phase","name":"{}","state":"begin","ns":{}}})", name, mono_ns()));
    int64_t t0 = mono_ns();
    body();
    int64_t t1 = mono_ns();
    add(name, t0, t1);
    client_.send_text(fmt::format(R"({{"t":"phase","name":"{}","state":"end","ns":{},"start_ns":{}}})", name, t1, t0));
  }
  // A phase measured before the coordinator was reachable.
  void add(std::string_view name, int64_t t0, int64_t t1) {
    phases_.push_back({std::string(name), t0, t1});
    inside_ns_ += t1 - t0;
  }
  // A phase of another thread (prewarm), beside the main thread's: recorded, not counted against the overhead.
  void add_background(const PhaseSpan& span) {
    phases_.push_back(span);
    client_.send_text(fmt::format(R"({{"t":"phase","name":"{}","state":"end","ns":{},"start_ns":{}}})", span.name,
                                  span.end_ns, span.start_ns));
  }
  // process_start lies before main(), outside the span whose overhead is accounted.
  void add_before_main(std::string_view name, int64_t t0, int64_t t1) {
    phases_.push_back({std::string(name), t0, t1});
  }
  // CUDA calls that are not phases (device facts, buffers): not counted as the worker's own overhead.
  template <class F>
  void untimed_cuda(F&& body) {
    int64_t t0 = mono_ns();
    body();
    inside_ns_ += mono_ns() - t0;
  }
  const std::vector<PhaseSpan>& phases() const { return phases_; }
  int64_t inside_ns() const { return inside_ns_; }

 private:
  coord::Client& client_;
  std::vector<PhaseSpan> phases_;
  int64_t inside_ns_ = 0;
};

void nccl_check(const nccl::Library& lib, nccl::Result r, std::string_view what, nccl::Comm comm = nullptr) {
  if (r == nccl::Success) return;
  std::string msg = fmt::format("{}: {}", what, lib.fn.GetErrorString(r));
  if (lib.fn.GetLastError) {
    const char* last = lib.fn.GetLastError(comm);
    if (last && *last) msg += fmt::format(" ({})", last);
  }
  throw RuntimeError(msg);
}

int64_t used_bytes() {
  size_t free_b = 0, total_b = 0;
  gpu::cuda_check(cudaMemGetInfo(&free_b, &total_b), "cudaMemGetInfo");
  return static_cast<int64_t>(total_b - free_b);
}

// NCCL unique ids travel through the coordinator as hex: rank 0 puts, the others wait for the value.
void put_uid(coord::Client& client, const std::string& key, const nccl::UniqueId& uid) {
  client.put(key, hex(&uid, sizeof uid));
}

nccl::UniqueId get_uid(coord::Client& client, const std::string& key, int timeout_ms) {
  nccl::UniqueId uid{};
  auto bytes = unhex(client.get(key, timeout_ms));
  if (!bytes || bytes->size() != sizeof uid) throw RuntimeError("coordinator sent a malformed unique id for " + key);
  std::memcpy(&uid, bytes->data(), sizeof uid);
  return uid;
}

struct Buffers {
  void* send = nullptr;
  void* recv = nullptr;
  void alloc(const Shape& s) {
    gpu::cuda_check(cudaMalloc(&send, std::max<size_t>(s.send_bytes, 1)), "cudaMalloc");
    gpu::cuda_check(cudaMalloc(&recv, std::max<size_t>(s.recv_bytes, 1)), "cudaMalloc");
    gpu::cuda_check(cudaMemset(send, 0, std::max<size_t>(s.send_bytes, 1)), "cudaMemset");
  }
  ~Buffers() {
    if (send) cudaFree(send);
    if (recv) cudaFree(recv);
  }
};

std::string visible_env() {
  const char* v = std::getenv("CUDA_VISIBLE_DEVICES");
  return v ? v : "";
}

// The NCCL_* variables this rank runs with: what its launch model and configuration gave it.
std::map<std::string, std::string> nccl_env() {
  return environment([](std::string_view key) { return key.substr(0, 5) == "NCCL_"; });
}

// --fix prewarm at the NCCL level: the communicator exists; a background thread makes a 1-element all-reduce on it
// (its own stream and buffers) while the main thread does the job's start-up work, so that the lazy connections are
// made in the shadow of that work. The main thread makes no NCCL call until it joins.
class Prewarm {
 public:
  Prewarm(const nccl::Library& lib, nccl::Comm comm, int device, int rank, int n) {
    thread_ = std::thread([this, &lib, comm, device, rank, n] {
      span_.start_ns = mono_ns();
      try {
        gpu::cuda_check(cudaSetDevice(device), "cudaSetDevice (prewarm)");
        cudaStream_t s = nullptr;
        gpu::cuda_check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate (prewarm)");
        const Shape one_float = shape_for(Collective::all_reduce, sizeof(float), n);
        Buffers one;
        one.alloc(one_float);
        nccl_check(lib, enqueue(lib.fn, Collective::all_reduce, one_float, one.send, one.recv, rank, n, comm, s),
                   "prewarm all_reduce", comm);
        gpu::cuda_check(cudaStreamSynchronize(s), "cudaStreamSynchronize (prewarm)");
        cudaStreamDestroy(s);
      } catch (...) {
        error_ = std::current_exception();
      }
      span_.end_ns = mono_ns();
    });
  }
  // Waits for the warm-up; rethrows its error.
  PhaseSpan join() {
    thread_.join();
    if (error_) std::rethrow_exception(error_);
    return span_;
  }
  ~Prewarm() {
    if (thread_.joinable()) thread_.join();
  }

 private:
  std::thread thread_;
  PhaseSpan span_{std::string(phase::prewarm), 0, 0};
  std::exception_ptr error_;
};

// --coverage: after the first collective, the first call of other collectives and sizes, each timed from the call to
// the stream done, as "cover.<collective>.<size>": does a warm-up of one all-reduce cover them, or do they connect
// again?
void run_coverage(const nccl::Library& lib, nccl::Comm comm, int rank, int n, cudaStream_t stream, Recorder& rec) {
  const std::pair<Collective, size_t> ops[] = {{Collective::all_reduce, size_t{64} << 20},
                                               {Collective::all_gather, size_t{1} << 20},
                                               {Collective::reduce_scatter, size_t{1} << 20},
                                               {Collective::broadcast, size_t{1} << 20},
                                               {Collective::sendrecv, size_t{1} << 20}};
  for (const auto& [op, size] : ops) {
    const Collective c = op;  // a name the lambdas below can capture (clang < 16 cannot capture a structured binding)
    Shape shape = shape_for(c, size, n);
    Buffers bufs;
    rec.untimed_cuda([&] { bufs.alloc(shape); });
    rec.run(fmt::format("cover.{}.{}", name_of(c), format_size(size)), [&] {
      nccl_check(lib, enqueue(lib.fn, c, shape, bufs.send, bufs.recv, rank, n, comm, stream), name_of(c), comm);
      gpu::cuda_check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    });
  }
}

// What a GPU rank's phases share: its options and report, the coordinator, and what the phases make.
struct GpuRank {
  const WorkerOptions& o;
  coord::Client& client;
  Recorder& rec;
  RankReport& result;
  nccl::Library lib;
  cudaStream_t stream = nullptr;
  nccl::Comm comm = nullptr;
};

// COLDSTART_CUDA_SCHEDULE: how the rank's host threads wait for the GPU (cudaSetDeviceFlags before the context):
// unset, CUDA's own choice (spinning while a process has fewer contexts than cores); spin, yield or blocking. With
// many ranks on a GPU, ranks that spin in their first collective take the cores their peers still connect on.
unsigned cuda_schedule_flags() {
  const char* v = std::getenv("COLDSTART_CUDA_SCHEDULE");
  if (!v || !*v) return cudaDeviceScheduleAuto;
  const std::string_view s = v;
  if (s == "spin") return cudaDeviceScheduleSpin;
  if (s == "yield") return cudaDeviceScheduleYield;
  if (s == "blocking") return cudaDeviceScheduleBlockingSync;
  throw InputError("COLDSTART_CUDA_SCHEDULE=" + shown(s, 32) + ": give spin, yield or blocking, or leave it unset");
}

// The CUDA context, then the device's facts and the rank's stream (not timed as phases).
void open_device(GpuRank& g) {
  const WorkerOptions& o = g.o;
  const unsigned schedule = cuda_schedule_flags();
  g.rec.run(phase::cuda_context, [&] {
    gpu::cuda_check(cudaSetDevice(o.device), "cudaSetDevice");
    if (schedule != cudaDeviceScheduleAuto) gpu::cuda_check(cudaSetDeviceFlags(schedule), "cudaSetDeviceFlags");
    gpu::cuda_check(cudaFree(nullptr), "cudaFree(0) (context creation)");
  });
  g.rec.untimed_cuda([&] {
    int count = 0;
    gpu::cuda_check(cudaGetDeviceCount(&count), "cudaGetDeviceCount");
    cudaDeviceProp prop{};
    gpu::cuda_check(cudaGetDeviceProperties(&prop, o.device), "cudaGetDeviceProperties");
    g.result.visible_device_count = count;
    g.result.bus_id = format_bus_id(prop.pciDomainID, prop.pciBusID, prop.pciDeviceID);
    g.result.uuid = gpu::format_uuid(prop.uuid);
    g.result.gpu_name = prop.name;
    gpu::cuda_check(cudaStreamCreateWithFlags(&g.stream, cudaStreamNonBlocking), "cudaStreamCreate");
  });
}

void load_nccl(GpuRank& g) {
  g.rec.run(phase::nccl_load, [&] { g.lib = nccl::load(g.o.nccl_lib); });
  g.result.nccl_path = g.lib.path;
  g.result.nccl_version = g.lib.name();
}

// Rank 0 makes the unique id and puts it; the others wait for it.
nccl::UniqueId share_unique_id(GpuRank& g) {
  nccl::UniqueId uid{};
  if (g.o.rank == 0) {
    g.rec.run(phase::unique_id, [&] { nccl_check(g.lib, g.lib.fn.GetUniqueId(&uid), "ncclGetUniqueId"); });
    put_uid(g.client, "uid", uid);
  } else {
    g.rec.run(phase::sync_uid, [&] { uid = get_uid(g.client, "uid", g.o.wait_timeout_ms); });
  }
  g.result.uid_hash = nccl::uid_hash(uid);
  return uid;
}

// The ranks meet, then make the communicator, with the memory read on each side of it.
void init_comm(GpuRank& g, const nccl::UniqueId& uid) {
  g.rec.run(phase::sync_init, [&] { g.client.barrier("init", g.o.wait_timeout_ms); });
  // Read once every rank has met: with several ranks on one GPU, every rank's CUDA context is then in the baseline
  // (read before the barrier, a rank that came early missed the others' and counted them as NCCL's).
  Memory& mem = g.result.mem;
  g.rec.untimed_cuda([&] {
    size_t free_b = 0, total_b = 0;
    gpu::cuda_check(cudaMemGetInfo(&free_b, &total_b), "cudaMemGetInfo");
    mem.total_bytes = static_cast<int64_t>(total_b);
    mem.used_before_init_bytes = static_cast<int64_t>(total_b - free_b);
  });
  nccl::Config config = nccl::default_config();
  g.rec.run(phase::comm_init, [&] {
    nccl_check(g.lib, g.lib.fn.CommInitRankConfig(&g.comm, g.o.nranks, uid, g.o.rank, &config),
               "ncclCommInitRankConfig");
  });
  g.rec.untimed_cuda([&] { mem.used_after_init_bytes = used_bytes(); });
  mem.after_init_at = phase::comm_init;
}

// The job's own start-up work, with the warm-up beside it when asked.
void startup_beside_prewarm(GpuRank& g, StartupBuffer& weights) {
  std::optional<Prewarm> warm;
  if (g.o.prewarm) warm.emplace(g.lib, g.comm, g.o.device, g.o.rank, g.o.nranks);
  if (g.o.startup.kind != Startup::Kind::none)
    g.rec.run(phase::startup, [&] { run_startup(g.o.startup, weights, true); });
  if (warm) {
    PhaseSpan span;
    g.rec.run(phase::prewarm_join, [&] { span = warm->join(); });
    g.rec.add_background(span);
  }
}

// One small collective on the world communicator, timed as its enqueue and its wait.
void timed_collective(GpuRank& g, const Shape& small, const Buffers& bufs, std::string_view enqueue_name,
                      std::string_view wait_name) {
  const WorkerOptions& o = g.o;
  g.rec.run(enqueue_name, [&] {
    nccl_check(g.lib, enqueue(g.lib.fn, o.collective, small, bufs.send, bufs.recv, o.rank, o.nranks, g.comm, g.stream),
               name_of(o.collective), g.comm);
  });
  g.rec.run(wait_name, [&] { gpu::cuda_check(cudaStreamSynchronize(g.stream), "cudaStreamSynchronize"); });
}

// The ranks meet again, then the first and second collectives, with the memory the first left.
void first_collectives(GpuRank& g, const Shape& small, const Buffers& first, const StartupBuffer& weights) {
  g.rec.run(phase::sync_first, [&] { g.client.barrier("first", g.o.wait_timeout_ms); });
  timed_collective(g, small, first, phase::first_enqueue, phase::first_wait);
  // Memory readings leave the start-up's own buffer out: they say what NCCL holds.
  g.rec.untimed_cuda(
      [&] { g.result.mem.used_after_first_bytes = used_bytes() - static_cast<int64_t>(weights.bytes()); });
  timed_collective(g, small, first, phase::second_enqueue, phase::second_wait);
}

// --groups fresh:K: rank 0 makes every group's id first, as a framework building its groups would; the others fetch
// them. split:K needs none (empty ids, one per group).
std::vector<nccl::UniqueId> group_ids(GpuRank& g) {
  std::vector<nccl::UniqueId> ids(static_cast<size_t>(g.o.groups.count));
  if (g.o.groups.kind != Groups::Kind::fresh) return ids;
  for (size_t k = 0; k < ids.size(); ++k) {
    std::string key = fmt::format("uid.group.{}", k);
    if (g.o.rank == 0) {
      nccl_check(g.lib, g.lib.fn.GetUniqueId(&ids[k]), "ncclGetUniqueId");
      put_uid(g.client, key, ids[k]);
    } else {
      ids[k] = get_uid(g.client, key, g.o.wait_timeout_ms);
    }
  }
  return ids;
}

// --groups split:K or fresh:K: the groups' communicators, then the first collective on each.
std::vector<nccl::Comm> run_groups(GpuRank& g, const Shape& small, const Buffers& first) {
  const WorkerOptions& o = g.o;
  std::vector<nccl::Comm> groups;
  g.rec.run(phase::groups_init, [&] {
    for (const nccl::UniqueId& id : group_ids(g)) {
      nccl::Comm sub = nullptr;
      nccl::Config cfg = nccl::default_config();
      if (o.split_share) cfg.splitShare = 1;  // reuse the world communicator's connections and buffers
      if (o.groups.kind == Groups::Kind::split)
        nccl_check(g.lib, g.lib.fn.CommSplit(g.comm, 0, o.rank, &sub, &cfg), "ncclCommSplit", g.comm);
      else
        nccl_check(g.lib, g.lib.fn.CommInitRankConfig(&sub, o.nranks, id, o.rank, &cfg),
                   "ncclCommInitRankConfig (group)");
      groups.push_back(sub);
    }
  });
  g.rec.run(phase::groups_first, [&] {
    for (nccl::Comm sub : groups)
      nccl_check(g.lib, enqueue(g.lib.fn, o.collective, small, first.send, first.recv, o.rank, o.nranks, sub, g.stream),
                 name_of(o.collective), sub);
    gpu::cuda_check(cudaStreamSynchronize(g.stream), "cudaStreamSynchronize");
  });
  return groups;
}

// Steady-state bandwidth of --size bytes: --warmup calls, then --iters timed by CUDA events on the stream.
Steady steady(GpuRank& g) {
  const WorkerOptions& o = g.o;
  Shape big = shape_for(o.collective, o.size_bytes, o.nranks);
  Buffers bufs;
  cudaEvent_t start = nullptr, stop = nullptr;
  g.rec.untimed_cuda([&] {
    bufs.alloc(big);
    gpu::cuda_check(cudaEventCreate(&start), "cudaEventCreate");
    gpu::cuda_check(cudaEventCreate(&stop), "cudaEventCreate");
  });
  float ms = 0;
  g.rec.run(phase::steady, [&] {
    auto call = [&] {
      nccl_check(g.lib, enqueue(g.lib.fn, o.collective, big, bufs.send, bufs.recv, o.rank, o.nranks, g.comm, g.stream),
                 name_of(o.collective), g.comm);
    };
    for (int i = 0; i < o.warmup_iters; ++i) call();
    gpu::cuda_check(cudaEventRecord(start, g.stream), "cudaEventRecord");
    for (int i = 0; i < o.steady_iters; ++i) call();
    gpu::cuda_check(cudaEventRecord(stop, g.stream), "cudaEventRecord");
    gpu::cuda_check(cudaEventSynchronize(stop), "cudaEventSynchronize");
    gpu::cuda_check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
  });
  double seconds = ms / 1e3 / o.steady_iters;
  const auto size = static_cast<int64_t>(std::max(big.send_bytes, big.recv_bytes));
  double algbw = seconds > 0 ? static_cast<double>(size) / seconds / 1e9 : 0;
  g.rec.untimed_cuda([&] {
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
  });
  return Steady{size, o.steady_iters, seconds * 1e6, algbw, algbw * bus_factor(o.collective, o.nranks)};
}

void destroy(GpuRank& g, const std::vector<nccl::Comm>& groups) {
  g.rec.run(phase::destroy, [&] {
    for (nccl::Comm sub : groups) nccl_check(g.lib, g.lib.fn.CommDestroy(sub), "ncclCommDestroy");
    nccl_check(g.lib, g.lib.fn.CommDestroy(g.comm), "ncclCommDestroy");
  });
  g.rec.untimed_cuda([&] { cudaStreamDestroy(g.stream); });
}

// A rank's phases on its GPU, in order.
void run_gpu(const WorkerOptions& o, coord::Client& client, Recorder& rec, RankReport& result) {
  GpuRank g{o, client, rec, result};
  open_device(g);
  load_nccl(g);
  init_comm(g, share_unique_id(g));
  StartupBuffer weights;
  startup_beside_prewarm(g, weights);
  const Shape small = shape_for(o.collective, sizeof(float) * static_cast<size_t>(o.nranks), o.nranks);
  Buffers first;
  rec.untimed_cuda([&] { first.alloc(small); });
  first_collectives(g, small, first, weights);
  if (o.coverage) run_coverage(g.lib, g.comm, o.rank, o.nranks, g.stream, rec);
  std::vector<nccl::Comm> groups;
  if (o.groups.kind != Groups::Kind::world) groups = run_groups(g, small, first);
  if (o.steady_iters > 0 && o.size_bytes > 0) result.steady = steady(g);
  destroy(g, groups);
}

void run_dry(const WorkerOptions& o, coord::Client& client, Recorder& rec, RankReport& result) {
  // The same coordinator traffic as a GPU rank, without touching CUDA or NCCL.
  if (o.rank == 0) {
    std::string id = random_hex(128);
    rec.run(phase::unique_id, [] {});
    client.put("uid", id);
    result.uid_hash = id.substr(0, 16);
  } else {
    std::string id;
    rec.run(phase::sync_uid, [&] { id = client.get("uid", o.wait_timeout_ms); });
    result.uid_hash = id.substr(0, 16);
  }
  rec.run(phase::sync_init, [&] { client.barrier("init", o.wait_timeout_ms); });
  // The start-up work on the CPU (copies need a GPU); a prewarm has nothing to warm.
  StartupBuffer none;
  if (o.startup.kind != Startup::Kind::none) rec.run(phase::startup, [&] { run_startup(o.startup, none, false); });
  if (o.prewarm) {
    int64_t t = mono_ns();
    rec.run(phase::prewarm_join, [] {});
    rec.add_background({std::string(phase::prewarm), t, t});
  }
  rec.run(phase::sync_first, [&] { client.barrier("first", o.wait_timeout_ms); });
}

}  // namespace

int run_worker(const WorkerOptions& o, int64_t main_entry_ns) {
  coord::Client client;
  Recorder rec(client);
  RankReport result;
  result.rank = o.rank;
  result.pid = static_cast<int>(::getpid());
  result.host = hostname();
  result.worker = Worker::nccl;
  result.cuda_visible_devices = visible_env();
  result.env = nccl_env();
  result.device_index = o.device;
  result.dry_run = o.dry_run;
  result.mono_anchor_ns = main_entry_ns;
  result.real_anchor_ns = real_ns() - (mono_ns() - main_entry_ns);
  result.launcher = o.launcher;
  std::string start_source;
  if (int64_t started = process_start_mono_ns(&start_source); started > 0 && started <= main_entry_ns) {
    rec.add_before_main(phase::process_start, started, main_entry_ns);
    result.start_source = start_source;
  }
  try {
    int64_t t0 = mono_ns();
    client.connect(o.coord_host, o.coord_port, {o.token, o.trial, o.rank, o.nranks}, o.wait_timeout_ms);
    rec.add(phase::connect, t0, mono_ns());
    if (o.dry_run) {
      cuda_schedule_flags();  // a bad value fails a dry run too
      run_dry(o, client, rec, result);
    } else
      run_gpu(o, client, rec, result);
  } catch (const std::exception& e) {
    std::cerr << "coldstart worker (rank " << o.rank << "): " << e.what() << "\n";
    if (client.connected()) {
      try {
        client.send({{"t", "error"}, {"message", e.what()}});
      } catch (const std::exception&) {
      }
    }
    return 1;
  }
  result.phases = rec.phases();
  // The worker's own time: its span from main() minus everything inside phases and other CUDA calls.
  result.overhead_ms = ns_to_ms(mono_ns() - main_entry_ns - rec.inside_ns());
  try {
    client.send({{"t", "result"}, {"result", result}});
  } catch (const std::exception& e) {
    std::cerr << "coldstart worker (rank " << o.rank << "): " << e.what() << "\n";
    return 1;
  }
  return 0;
}

}  // namespace coldstart::worker
