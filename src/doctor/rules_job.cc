// The job's size against what the node gives it: ranks that resolve to one GPU (same-gpu), a LOCAL_RANK past the GPUs
// the process sees (device-index), the open-files limit against the fds NCCL holds at that size (fd-limit), and
// /dev/shm against what NCCL puts there for the ranks of this node (shm-small). The job's size comes from doctor
// --ranks (Context::ranks), else torchrun's variables.
#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "doctor/rule.h"
#include "util/strings.h"

namespace coldstart::doctor {
namespace {

// How many ranks, and where the number came from ("--ranks 4", "WORLD_SIZE=512", "2 GPUs").
struct Count {
  int64_t n = 0;
  std::string from;
};

// A positive count from a variable of the fact set; none when unset or not a number.
std::optional<Count> env_count(const Facts& f, const char* name) {
  const std::optional<int64_t> v = parse_int(trim(env_of(f, name)));
  if (!v || *v < 1) return std::nullopt;
  return Count{*v, std::string(name) + "=" + std::to_string(*v)};
}

// The whole job's ranks: the planned ranks (all on this node), else WORLD_SIZE, else this node's LOCAL_WORLD_SIZE.
std::optional<Count> job_ranks(const RuleInput& in) {
  if (!in.c.ranks.empty())
    return Count{static_cast<int64_t>(in.c.ranks.size()), fmt::format("--ranks {}", in.c.ranks.size())};
  if (auto n = env_count(in.f, "WORLD_SIZE")) return n;
  return env_count(in.f, "LOCAL_WORLD_SIZE");
}

// The ranks on this node: the planned ranks, else LOCAL_WORLD_SIZE, else one per GPU.
std::optional<Count> node_ranks(const RuleInput& in) {
  if (!in.c.ranks.empty())
    return Count{static_cast<int64_t>(in.c.ranks.size()), fmt::format("--ranks {}", in.c.ranks.size())};
  if (auto n = env_count(in.f, "LOCAL_WORLD_SIZE")) return n;
  if (in.ngpus == 0) return std::nullopt;
  return Count{static_cast<int64_t>(in.ngpus), fmt::format("{} GPUs", in.ngpus)};
}

// The NCCL a process of the job loads, as NCCL's version code (2.30.7 -> 23007); 0 when none loads or unknown.
int nccl_code(const Facts& f, std::string* name) {
  for (const auto& lib : f.nccl) {
    if (!lib.would_load || lib.version.empty()) continue;
    *name = lib.version;
    const std::vector<std::string> parts = split(lib.version.substr(0, lib.version.find('+')), '.');
    if (parts.size() != 3) return 0;
    const auto major = parse_int(parts[0]), minor = parse_int(parts[1]), patch = parse_int(parts[2]);
    if (!major || !minor || !patch) return 0;
    return static_cast<int>(*major * 10000 + *minor * 100 + *patch);
  }
  return 0;
}

// ---- same-gpu ---------------------------------------------------------------------------------------------------

constexpr int kMultiRankGpuVersion = 23000;  // NCCL 2.30: NCCL_MULTI_RANK_GPU_ENABLE (gpu/nccl.h holds the same)

// "ranks 0 and 2 on GPU 1 (0000:19:00.0)", one line per GPU that several ranks use.
std::vector<std::string> shared_gpus(const RuleInput& in) {
  std::map<int, std::vector<std::string>> by_gpu;
  for (const RankView& r : in.c.ranks)
    if (r.own_nvml >= 0) by_gpu[r.own_nvml].push_back(std::to_string(r.rank));
  std::vector<std::string> lines;
  for (const auto& entry : by_gpu) {
    if (entry.second.size() < 2) continue;
    const int gpu = entry.first;
    std::string bus;
    if (static_cast<size_t>(gpu) < in.f.nvml.gpus.size() && !in.f.nvml.gpus[static_cast<size_t>(gpu)].bus_id.empty())
      bus = " (" + in.f.nvml.gpus[static_cast<size_t>(gpu)].bus_id + ")";
    lines.push_back(fmt::format("ranks {} on GPU {}{}", join(entry.second, ", "), gpu, bus));
  }
  return lines;
}

// What NCCL says when it refuses ranks sharing a GPU, by release (src/init.cc, src/graph/topo.cc).
std::string refusal_text(int code) {
  if (code > 0 && code < kMultiRankGpuVersion)
    return "NCCL before 2.30 refuses at init with \"Duplicate GPU detected : rank A and rank B both on CUDA device "
           "BUSID\" (ncclInvalidUsage), and has no switch to allow it";
  if (code >= kMultiRankGpuVersion && code < 23007)  // 2.30.3 and 2.30.4's wording
    return "NCCL refuses at init with \"Multiple ranks detected using the same GPU on this node. Set "
           "NCCL_MULTI_RANK_GPU_ENABLE=1 to enable this configuration.\" (ncclInvalidUsage)";
  return "NCCL refuses at init with \"Multiple Ranks are using the same GPU/Partition. Set "
         "NCCL_MULTI_RANK_GPU_ENABLE=1 to enable this configuration.\" (ncclInvalidUsage; before 2.30: \"Duplicate GPU "
         "detected\", with no switch)";
}

}  // namespace

Findings same_gpu(const RuleInput& in) {
  const std::vector<std::string> shared = shared_gpus(in);
  if (shared.empty()) return {};
  std::string version;
  const int code = nccl_code(in.f, &version);
  const std::optional<int64_t> enable = parse_int(trim(env_of(in.f, "NCCL_MULTI_RANK_GPU_ENABLE")));
  const bool allowed = code >= kMultiRankGpuVersion && enable && *enable != 0;
  const std::string loads = version.empty() ? "" : "; the NCCL that loads here is " + version;
  if (allowed)
    return {
        {"same-gpu",
         Severity::info,
         "Several ranks share a GPU, as NCCL_MULTI_RANK_GPU_ENABLE allows",
         join(shared, "; ") + loads + ", with NCCL_MULTI_RANK_GPU_ENABLE=" + env_of(in.f, "NCCL_MULTI_RANK_GPU_ENABLE"),
         {}}};
  std::string meant = "NCCL_MULTI_RANK_GPU_ENABLE=1 in every rank's environment, where several ranks per GPU are meant";
  if (code > 0 && code < kMultiRankGpuVersion)
    meant += ", with NCCL 2.30 or later (" + version + " has no such switch)";
  return {{"same-gpu",
           Severity::error,
           "Ranks of the job resolve to one GPU: NCCL refuses them",
           join(shared, "; ") + ". " + refusal_text(code) + loads,
           {{meant + " (NCCL_NVLS_ENABLE=1 is refused beside it)",
             "the ranks share the GPU's compute and memory: each gets a part of its time and of its memory"},
            {"fix the launcher's GPU assignment so that each rank has its own GPU (torchrun: one process per GPU and "
             "torch.cuda.set_device(LOCAL_RANK); Ray: num_gpus=1 per actor; CUDA_VISIBLE_DEVICES listing each GPU "
             "once)",
             "none"}}}};
}

namespace {

// ---- fd-limit ---------------------------------------------------------------------------------------------------

// The fds a rank holds once its first collective has connected, from our own measurements (fd_watch listing every
// rank's /proc/PID/fd about each millisecond, docs/results/2026-12-01-h200x1-fd-table, fdwatch-*.jsonl): a rank enters
// the first collective with about 63 fds (23 on /dev/nvidia0, 16-19 sockets, 8 pipes, CUDA's other device files), and
// its highest fd was 63-65 with one peer (2 ranks) and 64-67 with seven (8 ranks, stock and peer regions alike): about
// 0.5 more fd per peer, counted here as one. With cuMem each imported buffer is an fd only while it is imported
// (docs/nccl-patch.md: one per peer and channel in stock NCCL, one per peer with the peer regions), so what stays
// grows with the peers' sockets, not with the buffers.
constexpr int64_t kFdsAtFirstCollective = 64;
constexpr int64_t kFdsPerPeer = 1;
// The process that serves the rendezvous store (PyTorch's TCPStore: rank 0, or torchrun's agent) holds a socket per
// rank besides: rank 0's highest fd under the torch probe was 73-75 against rank 1's 63-64 at 2 ranks
// (fdwatch-torch-2.jsonl: the store's sockets, its event loop's pipes and eventfds).
constexpr int64_t kStoreFdsPerRank = 1;

std::string limit_text(int64_t v) { return v == -1 ? "unlimited" : std::to_string(v); }

std::vector<FixAdvice> fd_fixes(int64_t need, int64_t hard) {
  const bool over_hard = hard >= 0 && need > hard;
  const int64_t to = hard >= 0 ? hard : std::max<int64_t>(65536, need);
  std::string raise = over_hard ? fmt::format(
                                      "raise the hard limit past {} (as root: nofile in "
                                      "/etc/security/limits.conf, LimitNOFILE= for a systemd service), then "
                                      "the soft limit: ulimit -n {}",
                                      need, need)
                                : fmt::format(
                                      "raise the soft limit before the launcher starts the ranks: ulimit -n {} "
                                      "(up to the hard limit, no root needed)",
                                      to);
  return {{raise, "none"},
          {"containers and launchers: docker run --ulimit nofile=65536:65536; Kubernetes: the container runtime's "
           "nofile default; Slurm: PropagateResourceLimits or ulimit -n in the batch script",
           "none"}};
}

}  // namespace

Findings fd_limit(const RuleInput& in) {
  const Facts& f = in.f;
  const std::optional<Count> job = job_ranks(in);
  if (!job || f.nofile_soft < 0) return {};
  const int64_t rank_need = kFdsAtFirstCollective + kFdsPerPeer * (job->n - 1);
  const int64_t store_need = rank_need + kStoreFdsPerRank * job->n;
  if (store_need <= f.nofile_soft) return {};
  const bool over_hard = f.nofile_hard >= 0 && store_need > f.nofile_hard;
  const std::string evidence = fmt::format(
      "{}: a rank holds about {} fds once its first collective has connected ({} at 2 ranks on one GPU, about one "
      "more per peer: docs/results/2026-12-01-h200x1-fd-table), and the process that serves the rendezvous store "
      "(rank 0, or torchrun's agent) about {} with a socket per rank; the open-files limit is {} (soft), {} (hard). "
      "Past the soft limit socket() and the cuMem fd import fail with EMFILE (\"Too many open files\"); NCCL raises "
      "the soft limit to the hard one only in the process that holds its bootstrap root (ncclGetUniqueId's, "
      "usually rank 0)",
      job->from, rank_need, kFdsAtFirstCollective, store_need, f.nofile_soft, limit_text(f.nofile_hard));
  return {{"fd-limit", over_hard ? Severity::error : Severity::warn,
           over_hard ? "The open-files limit is below what the job's ranks open, even raised to the hard limit"
                     : "The open-files soft limit is below what the job's ranks open",
           evidence, fd_fixes(store_need, f.nofile_hard)}};
}

namespace {

// ---- shm-small --------------------------------------------------------------------------------------------------

// What NCCL puts in /dev/shm, from its source (2.28.9 and 2.30.7 alike, x86-64). The shared-memory transport, where
// it uses /dev/shm rather than cuMem host memory (NCCL_CUMEM_ENABLE=0 or NCCL_CUMEM_HOST_ENABLE=0, a driver before
// CUDA 12.6, or a container where cuMem host allocations fail: Docker without SYS_NICE), allocates on the receiving
// side (NCCL_SHM_LOCALITY=2) one file per connection of sizeof(ncclRecvMem) 4096 + the LL buffer 524288 (8 lines x
// 512 threads x 8 steps x 16 bytes) + LL128 4915200 (120 x 640 x 8 x 8) + SIMPLE 4194304 (4 MiB) + ncclShmOpen's
// 4-byte count, fallocated: the "failed to extend /dev/shm/nccl-XXXXXX to 9637892 bytes" of a 64 MiB container. It
// connects ranks on different GPUs only: ranks sharing one GPU connect by P2P, NCCL_P2P_DISABLE=1 included (8 ranks
// on one H200 ran with /dev/shm of 8 MiB: docs/results/2026-12-05-h200x1-casebook).
constexpr int64_t kShmRecvBytes = 9637892;
// A rank receives from its ring's previous rank and from its tree's other neighbour on each channel (one peer when
// there are only 2 ranks); the channel count is the topology search's, 2 assumed here.
constexpr int64_t kShmChannels = 2;
// Once a network transport runs (a job over several nodes), each rank's proxy keeps its ops pool there:
// sizeof(ncclProxyOpsPool) = 2048 ops per peer x 72 local ranks x 232 bytes + its counters, 34210176, + 4.
constexpr int64_t kProxyPoolBytes = 34210180;
constexpr int64_t kShmComfortable = int64_t{1} << 30;  // below this, a warning wherever NCCL uses /dev/shm

// What the node's ranks put in /dev/shm: the transport's files where they span GPUs, the proxies' pools where the job
// spans nodes, and the words that say so.
struct ShmNeed {
  int64_t bytes = 0;
  std::string why;
};

ShmNeed shm_need(int64_t ranks, int64_t gpus, bool several_nodes) {
  const auto size = [](int64_t b) { return format_bytes(static_cast<double>(b)); };
  ShmNeed need;
  std::vector<std::string> parts;
  if (gpus > 1) {
    const int64_t receives = ranks > 2 ? 2 : 1;
    need.bytes += ranks * kShmChannels * receives * kShmRecvBytes;
    parts.push_back(
        fmt::format("NCCL's shared-memory transport between their GPUs, where it uses /dev/shm (cuMem "
                    "off, NCCL_CUMEM_HOST_ENABLE=0, a driver before CUDA 12.6, Docker without SYS_NICE), "
                    "{} per connection over {} channels",
                    size(kShmRecvBytes), kShmChannels));
  }
  if (several_nodes) {
    need.bytes += ranks * kProxyPoolBytes;
    parts.push_back("each rank's proxy ops pool, " + size(kProxyPoolBytes) + ", as the job spans nodes");
  }
  need.why = fmt::format("{} ranks need about {}: {}", ranks, size(need.bytes), join(parts, ", and "));
  return need;
}

// The GPUs the node's ranks use: the plan's, else one per rank up to the node's GPUs (all, where none are known).
int64_t gpus_used(const RuleInput& in, int64_t ranks) {
  std::set<int> planned;
  for (const RankView& r : in.c.ranks)
    if (r.own_nvml >= 0) planned.insert(r.own_nvml);
  if (!planned.empty()) return static_cast<int64_t>(planned.size());
  return in.ngpus > 0 ? std::min<int64_t>(ranks, static_cast<int64_t>(in.ngpus)) : ranks;
}

// Whether the job spans nodes: WORLD_SIZE above this node's LOCAL_WORLD_SIZE.
bool several_nodes(const Facts& f) {
  const std::optional<Count> world = env_count(f, "WORLD_SIZE"), local = env_count(f, "LOCAL_WORLD_SIZE");
  return world && local && world->n > local->n;
}

}  // namespace

Findings shm_small(const RuleInput& in) {
  const Facts& f = in.f;
  const std::optional<Count> ranks = node_ranks(in);
  if (f.shm_bytes < 0 || !ranks || ranks->n <= 1) return {};
  const int64_t gpus = gpus_used(in, ranks->n);
  const ShmNeed need = shm_need(ranks->n, gpus, several_nodes(f));
  if (need.bytes == 0 || f.shm_bytes >= std::max(need.bytes, kShmComfortable)) return {};
  std::string evidence = fmt::format(
      "/dev/shm holds {} for {} ranks on {} GPU{} of this node ({}); NCCL's shared-memory transport and proxy "
      "buffers live there (containers often default to 64 MiB). {}",
      format_bytes(static_cast<double>(f.shm_bytes)), ranks->n, gpus, gpus == 1 ? "" : "s", ranks->from, need.why);
  if (f.shm_bytes < need.bytes)
    evidence += ": more than it holds, and NCCL fails at init with \"failed to extend /dev/shm/nccl-XXXXXX\"";
  return {{"shm-small",
           Severity::warn,
           "/dev/shm is small",
           evidence,
           {{fmt::format("docker run --shm-size={}g (or --ipc=host); Kubernetes: an emptyDir with medium: Memory on "
                         "/dev/shm",
                         std::max<int64_t>(16, (need.bytes >> 30) + 1)),
             "host memory, used only as NCCL fills it"}}}};
}

// As many ranks on the node as CPUs to run them: NCCL's blocking waits (its bootstrap's, a rank's calls to its proxy)
// spin unless NCCL_SOCKET_POLL_TIMEOUT_MSEC sets how long they may sleep in poll() (NCCL 2.29 and newer; 0, spinning,
// by default), so every waiting rank holds a CPU that the rank it waits for needs.
constexpr int kSocketPollVersion = 22902;  // NCCL 2.29.2, the first 2.29 release: NCCL_SOCKET_POLL_TIMEOUT_MSEC

Findings spinning_waits(const RuleInput& in) {
  const Facts& f = in.f;
  const std::optional<Count> ranks = node_ranks(in);
  if (f.cpus < 1 || !ranks || ranks->n < 2 || ranks->n < f.cpus) return {};
  const Fix fix{Fix::Kind::socket_poll, 0};
  const EnvSetting setting = fix.env().front();  // bench --fix socket-poll's: NCCL_SOCKET_POLL_TIMEOUT_MSEC=1
  if (const std::optional<int64_t> poll = parse_int(trim(env_of(f, setting.key))); poll && *poll > 0) return {};
  std::string nccl;
  const int code = nccl_code(f, &nccl);
  const std::string sleep = setting.key + "=" + setting.value.value_or("");
  const std::string cost(fix.cost_in_brief());
  std::vector<FixAdvice> fixes;
  if (code > 0 && code < kSocketPollVersion)
    fixes.push_back({"NCCL 2.29 or newer (NCCL " + nccl + " has no such variable), with " + sleep, cost});
  else
    fixes.push_back({sleep + " in every rank's environment", cost});
  fixes.push_back({"fewer ranks on the node, or more CPUs for them (a container's CPU limit)", "none"});
  return {{"spinning-waits", Severity::warn, "The node's ranks have no CPU to spare while NCCL's waits spin",
           fmt::format("{} ranks on this node ({}) and {} CPU{} this process may use: NCCL's blocking waits (its "
                       "bootstrap's, a rank's calls to its proxy) spin until their answer comes, so every waiting "
                       "rank holds a CPU that the rank it waits for needs. Measured with 16 ranks on 16 CPUs (NCCL "
                       "2.30.7, one H100): the first all-reduce 3279 -> 1552 ms and init with cuMem off 6459 -> "
                       "2904 ms with {} (docs/results/2026-12-06-h100x1-quiet)",
                       ranks->n, ranks->from, f.cpus, f.cpus == 1 ? "" : "s", sleep),
           fixes}};
}

// LOCAL_RANK past the GPUs this process sees (deepspeedai/DeepSpeed#3165): a launcher that
// narrows each task to its own GPU (srun --gpus-per-task=1, Ray's num_gpus=1) while the framework still selects
// cuda:LOCAL_RANK asks for a device that does not exist.
Findings device_index(const RuleInput& in) {
  const Facts& f = in.f;
  const std::optional<int64_t> local = parse_int(trim(env_of(f, "LOCAL_RANK")));
  const size_t seen = f.cuda.gpus.size();
  if (!local || *local < 0 || !f.cuda.available || seen == 0 || static_cast<size_t>(*local) < seen) return {};
  const std::string view = f.cvd_set ? "CUDA_VISIBLE_DEVICES=" + shown(f.cvd, 64) : "CUDA_VISIBLE_DEVICES unset";
  return {{"device-index",
           Severity::error,
           "LOCAL_RANK names a GPU this process cannot see",
           fmt::format("LOCAL_RANK={} but this process sees {} GPU{} ({}): a framework that selects cuda:LOCAL_RANK "
                       "(torch.cuda.set_device(local_rank), DeepSpeed) asks for a device that does not exist "
                       "(\"invalid device ordinal\"; deepspeedai/DeepSpeed#3165)",
                       *local, seen, seen == 1 ? "" : "s", view),
           {{seen == 1 ? "select device 0: the launcher gave each rank its own GPU (srun --gpus-per-task, Ray's "
                         "num_gpus=1), which is then the only one it sees"
                       : fmt::format("select device LOCAL_RANK % {}, or let the launcher give each rank all of the "
                                     "node's GPUs",
                                     seen),
             "none"}}}};
}

}  // namespace coldstart::doctor
