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

namespace coldstart {
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
  cuda_check(cudaMemGetInfo(&free_b, &total_b), "cudaMemGetInfo");
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
    cuda_check(cudaMalloc(&send, std::max<size_t>(s.send_bytes, 1)), "cudaMalloc");
    cuda_check(cudaMalloc(&recv, std::max<size_t>(s.recv_bytes, 1)), "cudaMalloc");
    cuda_check(cudaMemset(send, 0, std::max<size_t>(s.send_bytes, 1)), "cudaMemset");
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
        cuda_check(cudaSetDevice(device), "cudaSetDevice (prewarm)");
        cudaStream_t s = nullptr;
        cuda_check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate (prewarm)");
        const Shape one_float = shape_for(Collective::all_reduce, sizeof(float), n);
        Buffers one;
        one.alloc(one_float);
        nccl_check(lib, enqueue(lib.fn, Collective::all_reduce, one_float, one.send, one.recv, rank, n, comm, s),
                   "prewarm all_reduce", comm);
        cuda_check(cudaStreamSynchronize(s), "cudaStreamSynchronize (prewarm)");
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
      cuda_check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    });
  }
}

void run_gpu(const WorkerOptions& o, coord::Client& client, Recorder& rec, RankReport& result) {
  const int rank = o.rank, n = o.nranks;
  cudaStream_t stream = nullptr;
  rec.run(phase::cuda_context, [&] {
    cuda_check(cudaSetDevice(o.device), "cudaSetDevice");
    cuda_check(cudaFree(nullptr), "cudaFree(0) (context creation)");
  });
  rec.untimed_cuda([&] {
    int count = 0;
    cuda_check(cudaGetDeviceCount(&count), "cudaGetDeviceCount");
    cudaDeviceProp prop{};
    cuda_check(cudaGetDeviceProperties(&prop, o.device), "cudaGetDeviceProperties");
    result.visible_device_count = count;
    result.bus_id = format_bus_id(prop.pciDomainID, prop.pciBusID, prop.pciDeviceID);
    result.uuid = format_uuid(prop.uuid);
    result.gpu_name = prop.name;
    cuda_check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
  });

  nccl::Library lib;
  rec.run(phase::nccl_load, [&] { lib = nccl::load(o.nccl_lib); });
  result.nccl_path = lib.path;
  result.nccl_version = lib.name();

  nccl::UniqueId uid{};
  if (rank == 0) {
    rec.run(phase::unique_id, [&] { nccl_check(lib, lib.fn.GetUniqueId(&uid), "ncclGetUniqueId"); });
    put_uid(client, "uid", uid);
  } else {
    rec.run(phase::sync_uid, [&] { uid = get_uid(client, "uid", o.wait_timeout_ms); });
  }
  result.uid_hash = nccl::uid_hash(uid);

  rec.run(phase::sync_init, [&] { client.barrier("init", o.wait_timeout_ms); });
  // Read once every rank has met: with several ranks on one GPU, every rank's CUDA context is then in the baseline
  // (read before the barrier, a rank that came early missed the others' and counted them as NCCL's).
  Memory& mem = result.mem;
  rec.untimed_cuda([&] {
    size_t free_b = 0, total_b = 0;
    cuda_check(cudaMemGetInfo(&free_b, &total_b), "cudaMemGetInfo");
    mem.total_bytes = static_cast<int64_t>(total_b);
    mem.used_before_init_bytes = static_cast<int64_t>(total_b - free_b);
  });
  nccl::Comm comm = nullptr;
  nccl::Config config = nccl::default_config();
  rec.run(phase::comm_init,
          [&] { nccl_check(lib, lib.fn.CommInitRankConfig(&comm, n, uid, rank, &config), "ncclCommInitRankConfig"); });
  rec.untimed_cuda([&] { mem.used_after_init_bytes = used_bytes(); });
  mem.after_init_at = phase::comm_init;

  // The job's own start-up work, with the warm-up beside it when asked.
  StartupBuffer weights;
  {
    std::optional<Prewarm> warm;
    if (o.prewarm) warm.emplace(lib, comm, o.device, rank, n);
    if (o.startup.kind != Startup::Kind::none) rec.run(phase::startup, [&] { run_startup(o.startup, weights, true); });
    if (warm) {
      PhaseSpan span;
      rec.run(phase::prewarm_join, [&] { span = warm->join(); });
      rec.add_background(span);
    }
  }

  Shape small = shape_for(o.collective, sizeof(float) * static_cast<size_t>(n), n);
  Buffers first;
  rec.untimed_cuda([&] { first.alloc(small); });
  rec.run(phase::sync_first, [&] { client.barrier("first", o.wait_timeout_ms); });
  auto timed_collective = [&](std::string_view enqueue_name, std::string_view wait_name, nccl::Comm c) {
    rec.run(enqueue_name, [&] {
      nccl_check(lib, enqueue(lib.fn, o.collective, small, first.send, first.recv, rank, n, c, stream),
                 name_of(o.collective), c);
    });
    rec.run(wait_name, [&] { cuda_check(cudaStreamSynchronize(stream), "cudaStreamSynchronize"); });
  };
  timed_collective(phase::first_enqueue, phase::first_wait, comm);
  // Memory readings leave the start-up's own buffer out: they say what NCCL holds.
  rec.untimed_cuda([&] { mem.used_after_first_bytes = used_bytes() - static_cast<int64_t>(weights.bytes()); });
  timed_collective(phase::second_enqueue, phase::second_wait, comm);
  if (o.coverage) run_coverage(lib, comm, rank, n, stream, rec);

  std::vector<nccl::Comm> groups;
  if (o.groups.kind != Groups::Kind::world) {
    rec.run(phase::groups_init, [&] {
      std::vector<nccl::UniqueId> ids(static_cast<size_t>(o.groups.count));
      if (o.groups.kind == Groups::Kind::fresh) {
        // Rank 0 makes every group's id first, as a framework building its groups would; the others fetch them.
        for (size_t k = 0; k < ids.size(); ++k) {
          std::string key = fmt::format("uid.group.{}", k);
          if (rank == 0) {
            nccl_check(lib, lib.fn.GetUniqueId(&ids[k]), "ncclGetUniqueId");
            put_uid(client, key, ids[k]);
          } else {
            ids[k] = get_uid(client, key, o.wait_timeout_ms);
          }
        }
      }
      for (size_t k = 0; k < ids.size(); ++k) {
        nccl::Comm sub = nullptr;
        nccl::Config cfg = nccl::default_config();
        if (o.split_share) cfg.splitShare = 1;  // reuse the world communicator's connections and buffers
        if (o.groups.kind == Groups::Kind::split)
          nccl_check(lib, lib.fn.CommSplit(comm, 0, rank, &sub, &cfg), "ncclCommSplit", comm);
        else
          nccl_check(lib, lib.fn.CommInitRankConfig(&sub, n, ids[k], rank, &cfg), "ncclCommInitRankConfig (group)");
        groups.push_back(sub);
      }
    });
    rec.run(phase::groups_first, [&] {
      for (nccl::Comm sub : groups)
        nccl_check(lib, enqueue(lib.fn, o.collective, small, first.send, first.recv, rank, n, sub, stream),
                   name_of(o.collective), sub);
      cuda_check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    });
  }

  if (o.steady_iters > 0 && o.size_bytes > 0) {
    Shape big = shape_for(o.collective, o.size_bytes, n);
    Buffers bufs;
    cudaEvent_t start = nullptr, stop = nullptr;
    rec.untimed_cuda([&] {
      bufs.alloc(big);
      cuda_check(cudaEventCreate(&start), "cudaEventCreate");
      cuda_check(cudaEventCreate(&stop), "cudaEventCreate");
    });
    float ms = 0;
    rec.run(phase::steady, [&] {
      auto call = [&] {
        nccl_check(lib, enqueue(lib.fn, o.collective, big, bufs.send, bufs.recv, rank, n, comm, stream),
                   name_of(o.collective), comm);
      };
      for (int i = 0; i < o.warmup_iters; ++i) call();
      cuda_check(cudaEventRecord(start, stream), "cudaEventRecord");
      for (int i = 0; i < o.steady_iters; ++i) call();
      cuda_check(cudaEventRecord(stop, stream), "cudaEventRecord");
      cuda_check(cudaEventSynchronize(stop), "cudaEventSynchronize");
      cuda_check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
    });
    double seconds = ms / 1e3 / o.steady_iters;
    const auto size = static_cast<int64_t>(std::max(big.send_bytes, big.recv_bytes));
    double algbw = seconds > 0 ? static_cast<double>(size) / seconds / 1e9 : 0;
    result.steady = Steady{size, o.steady_iters, seconds * 1e6, algbw, algbw * bus_factor(o.collective, n)};
    rec.untimed_cuda([&] {
      cudaEventDestroy(start);
      cudaEventDestroy(stop);
    });
  }

  rec.run(phase::destroy, [&] {
    for (nccl::Comm sub : groups) nccl_check(lib, lib.fn.CommDestroy(sub), "ncclCommDestroy");
    nccl_check(lib, lib.fn.CommDestroy(comm), "ncclCommDestroy");
  });
  rec.untimed_cuda([&] { cudaStreamDestroy(stream); });
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
    if (o.dry_run)
      run_dry(o, client, rec, result);
    else
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

}  // namespace coldstart
