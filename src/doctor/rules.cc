#include "doctor/rules.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "analysis/disturbance.h"
#include "analysis/fixes.h"
#include "doctor/cvd.h"
#include "doctor/rule.h"
#include "model/phases.h"
#include "util/strings.h"

namespace coldstart::doctor {
using nlohmann::json;

const char* severity_name(Severity s) {
  switch (s) {
    case Severity::info: return "info";
    case Severity::warn: return "warn";
    case Severity::error: return "error";
  }
  return "?";
}

std::string env_of(const Facts& f, const std::string& k) {
  auto it = f.env.find(k);
  return it == f.env.end() ? "" : it->second;
}
bool env_set(const Facts& f, const std::string& k) { return f.env.count(k) > 0; }

namespace {

// Whether cuMem is in use: NCCL's default (on) unless NCCL_CUMEM_ENABLE=0.
bool cumem_on(const Facts& f) { return env_of(f, "NCCL_CUMEM_ENABLE") != "0"; }

const ConfigSummary* summary_for(const BenchResults& r, Mode mode, bool cumem_off) {
  for (const auto& s : r.summaries) {
    const Config& c = r.configs.at(static_cast<size_t>(s.config_id));
    if (c.mode != mode || c.trace) continue;
    bool off = false;
    for (const auto& e : c.env) off |= e.key == "NCCL_CUMEM_ENABLE" && e.value && *e.value == "0";
    if (off == cumem_off && s.phase(std::string(phase::first_enqueue))) return &s;
  }
  return nullptr;
}
}  // namespace

std::string measured_cumem_tradeoff(const BenchResults& r) {
  // Judged on cold start (ready: process start to the first collective done), with the phases it moves between: the
  // first collective (NCCL's first all-reduce, or torch's first barrier, where a lazy init also creates the
  // communicator) and init.
  const bool torch = r.spec.worker == Worker::torch;
  const std::string first(torch ? phase::barrier_enqueue : phase::first_enqueue);
  const std::string init(torch ? phase::init_process_group : phase::comm_init);
  auto median = [](const ConfigSummary* s, const std::string& p) { return s->phase(p) ? s->phase(p)->median : 0.0; };
  std::string masking;
  const ConfigSummary* iso = summary_for(r, Mode::isolated, false);
  if (!iso) iso = summary_for(r, Mode::ray, false);
  const ConfigSummary* sh = summary_for(r, Mode::shared, false);
  if (iso && sh && sh->ready.n)
    masking = fmt::format("; unmasked (shared) with cuMem on: ready {:.0f} ms", sh->ready.median);
  for (Mode m : {Mode::isolated, Mode::ray, Mode::shared, Mode::remap, Mode::ray_noset}) {
    const ConfigSummary* on = summary_for(r, m, false);
    const ConfigSummary* off = summary_for(r, m, true);
    if (!on || !off || !on->ready.n || !off->ready.n) continue;
    std::string s = fmt::format(
        "measured ({}, {} GPUs): cold start (ready: process start to the first collective done) {:.0f} ms with cuMem "
        "on vs {:.0f} ms with NCCL_CUMEM_ENABLE=0 — the {} drops from {:.0f} to {:.1f} ms but {} goes from {:.0f} to "
        "{:.0f} ms (the connections move into init)",
        name_of(m), r.spec.nranks(), on->ready.median, off->ready.median,
        torch ? "first barrier (host side)" : "first collective", median(on, first), median(off, first), init,
        median(on, init), median(off, init));
    if (on->nccl_mem_init.n && off->nccl_mem_init.n && on->nccl_mem_init.median > 0 && off->nccl_mem_init.median > 0)
      s += fmt::format("; NCCL memory once the communicator exists {} vs {}", format_bytes(on->nccl_mem_init.median),
                       format_bytes(off->nccl_mem_init.median));
    if (on->busbw_gbps.n && off->busbw_gbps.n)
      s += fmt::format("; bus bandwidth {:.0f} vs {:.0f} GB/s", on->busbw_gbps.median, off->busbw_gbps.median);
    return s + masking;
  }
  return "";
}

namespace {
struct Rule {
  const char* id;  // the finding's id, or its family ("masked" for masked-cumem and masked-cumem-patched)
  Findings (*check)(const RuleInput&);
};

Findings no_gpu(const RuleInput& in) {
  const Facts& f = in.f;
  if (f.nvml.available || f.cuda.available) return {};
  return {{"no-gpu",
           Severity::info,
           "No NVIDIA GPU or driver on this machine",
           f.cuda.problem.empty() ? f.nvml.problem : f.cuda.problem,
           {{"run doctor on a GPU node to check the node itself; the environment checks below still apply", "none"}}}};
}

Findings cvd_invalid(const RuleInput& in) {
  Findings out;
  for (const auto& p : in.cvd.problems)
    out.push_back({"cvd-invalid",
                   in.cvd.hides_all ? Severity::warn : Severity::error,
                   "CUDA_VISIBLE_DEVICES",
                   p,
                   {{"list each GPU once, by index or UUID, e.g. CUDA_VISIBLE_DEVICES=0,1", "none"}}});
  return out;
}

// Masked ranks: each rank (or this process) that cannot see GPUs its peers use.
std::vector<std::string> masked_ranks(const RuleInput& in) {
  std::vector<std::string> masked;
  const Facts& f = in.f;
  if (!in.c.ranks.empty()) {
    std::set<int> used;
    for (const auto& r : in.c.ranks) used.insert(r.own_nvml);
    for (const auto& r : in.c.ranks) {
      std::set<int> sees(r.visible_nvml.begin(), r.visible_nvml.end());
      bool all = std::all_of(used.begin(), used.end(), [&](int g) { return g < 0 || sees.count(g); });
      if (!all) masked.push_back(fmt::format("rank {} (CUDA_VISIBLE_DEVICES={})", r.rank, r.cuda_visible_devices));
    }
  } else if (f.cvd_set && in.ngpus > 1 && in.cvd.visible_nvml.size() < in.ngpus && !in.cvd.hides_all) {
    masked.push_back(fmt::format("this process (CUDA_VISIBLE_DEVICES={} shows {} of {} GPUs)", f.cvd,
                                 in.cvd.visible_nvml.size(), in.ngpus));
  }
  return masked;
}

// coldstart's patched NCCL (nccl/), when it is the one that loads and its peer regions are on: one export and import
// per peer and direction instead of one per channel. Null otherwise.
const NcclLibFact* patched_nccl(const Facts& f) {
  const NcclLibFact* loads = nullptr;
  for (const auto& lib : f.nccl)
    if (lib.would_load) loads = &lib;
  const bool patched =
      loads && loads->version.find("+peer-regions") != std::string::npos && env_of(f, "NCCL_P2P_PEER_REGION") != "0";
  return patched ? loads : nullptr;
}

// The ways out of a masked job's lazy cuMem connections, each with its cost.
std::vector<FixAdvice> masked_cumem_fixes() {
  return {{"NCCL_CUMEM_ENABLE=0 in every process of the job (all must agree)",
           "connections move into init and use legacy IPC; you lose lazy runtime connect, NVLS buffer registration, "
           "symmetric memory windows and multi-node NVLink, and NCCL holds more memory after init"},
          {"un-mask: RAY_EXPERIMENTAL_NOSET_CUDA_VISIBLE_DEVICES=1 for Ray actors (each worker must then select its "
           "own GPU, e.g. torch.cuda.set_device(ray.get_gpu_ids()[0])), or give each rank every GPU with its own first",
           "none in NCCL, but it removes only the masked part: with cuMem on, NCCL still connects lazily at the "
           "first collective (2x H200: 184 ms masked, 148 ms unmasked)"},
          {"eager init: init_process_group(..., device_id=torch.device('cuda', i)) and one small all_reduce right "
           "after, while the rest of start-up (model loading) runs",
           "a background warm-up beside the start-up work; it hides the cost instead of removing it"},
          {"a patched NCCL with one cuMem region per peer, loaded in place of the job's own: `coldstart nccl build` "
           "builds coldstart's series (nccl/) for the release PyTorch loads and prints the LD_PRELOAD line for "
           "torchrun, Ray and Slurm (docs/nccl-patch.md)",
           "a custom NCCL build to keep (not upstream); keeps cuMem and lazy connect and removes most of the round "
           "trips (one H200, 2 ranks: the first all-reduce's host side 315 -> 24 ms)"}};
}

Findings masked(const RuleInput& in) {
  const std::vector<std::string> masked = masked_ranks(in);
  if (masked.empty()) return {};
  const Facts& f = in.f;
  const bool on = cumem_on(f);
  const NcclLibFact* patched = on ? patched_nccl(f) : nullptr;
  Finding m;
  m.id = on ? (patched ? "masked-cumem-patched" : "masked-cumem") : "masked";
  m.severity = on && !patched ? Severity::warn : Severity::info;
  m.title = patched ? "Masked ranks with cuMem on and a patched NCCL (peer regions): one cuMem export and import per "
                      "peer and direction at the first collective, instead of one per channel"
            : on    ? "Masked ranks with cuMem on: expect a lazy connection cost at the first collective"
                    : "Masked ranks; cuMem is off, so NCCL shares buffers through legacy CUDA IPC at init";
  if (patched) {
    m.evidence = "the NCCL that loads, " + patched->resolved + ", is " + patched->version + "; ";
    // 0004: the fd table grown at init, so the kernel's wait for its growth leaves the first collective
    if (patched->version.find("+fd-reserve") != std::string::npos && env_of(f, "NCCL_FD_TABLE_RESERVE") != "0")
      m.evidence += "it grows the process's fd table at init (NCCL_FD_TABLE_RESERVE), outside the first collective; ";
  }
  m.evidence += join(masked, "; ") +
                (on ? ". NCCL will reach peers it cannot see through the CUDA runtime by exporting and importing cuMem "
                      "buffers over a Unix socket, lazily, inside the first collective (the time grows with peers x "
                      "channels)"
                    : ".");
  if (in.c.measured) {
    std::string measured = measured_cumem_tradeoff(*in.c.measured);
    if (!measured.empty()) m.evidence += ". " + measured;
  }
  if (on && !patched) m.fixes = masked_cumem_fixes();
  return {m};
}

// Fixes measured against the job's start-up: ranked by the cold start they save.
Findings fixes_ranked(const RuleInput& in) {
  if (!in.c.measured) return {};
  auto rankings = analysis::rank_fixes(*in.c.measured);
  if (rankings.empty()) return {};
  std::string lines = analysis::render_fix_rankings(rankings);
  if (!lines.empty() && lines.back() == '\n') lines.pop_back();
  return {
      {"fixes-ranked", Severity::info, "Fixes measured on this node, ranked by the cold start they save", lines, {}}};
}

// The lab's own NCCL log against the same configurations with it off, where the run holds that A/B: a warning where
// the log added to a phase beyond the trial-to-trial noise (that run's numbers carry the log's cost).
Findings log_disturbance(const RuleInput& in) {
  if (!in.c.measured) return {};
  const auto d = analysis::log_disturbance(*in.c.measured);
  if (d.empty()) return {};
  const bool beyond = std::any_of(d.begin(), d.end(), [](const auto& x) { return x.beyond_noise(); });
  std::string lines = analysis::render_log_disturbance(d);
  if (!lines.empty() && lines.back() == '\n') lines.pop_back();
  if (!beyond)
    return {{"log-disturbance", Severity::info, "NCCL's debug log cost nothing measurable in this run", lines, {}}};
  return {{"log-disturbance",
           Severity::warn,
           "NCCL's debug log lengthened what this run measures",
           lines,
           {{"read the phases named from the configurations with --nccl-log off (or run bench with --nccl-log off)",
             "no NCCL log: no Init timings or lazy connection count in the table"}}}};
}

// Several NCCL libraries with different versions.
Findings nccl_versions(const RuleInput& in) {
  std::set<std::string> versions;
  std::string which;
  std::vector<std::string> found;
  for (const auto& lib : in.f.nccl)
    if (!lib.version.empty()) {
      versions.insert(lib.version);
      found.push_back(lib.resolved + " " + lib.version);
      if (lib.would_load) which = lib.resolved + " (" + lib.version + ")";
    }
  if (versions.size() <= 1) return {};
  return {
      {"nccl-versions",
       Severity::warn,
       "Several NCCL versions on this node",
       join(found, "; ") + ". A program without its own NCCL loads " + which + "; PyTorch uses the one in its wheel",
       {{"make every process of a job load the same NCCL (LD_LIBRARY_PATH or one installation): mixed versions "
         "across processes can fail at init or hang",
         "none"}}}};
}

// Measured mixes across ranks (from results): the first trial whose ranks disagree.
Findings mixed_ranks(const RuleInput& in) {
  if (!in.c.measured) return {};
  for (const auto& t : in.c.measured->trials) {
    std::set<std::string> vs, cumem;
    for (const auto& r : t.ranks) {
      if (!r.nccl_version.empty()) vs.insert(r.nccl_version);
      auto it = r.env.find("NCCL_CUMEM_ENABLE");
      cumem.insert(it == r.env.end() ? "(unset)" : it->second);
    }
    if (vs.size() <= 1 && cumem.size() <= 1) continue;
    return {{"mixed-ranks",
             Severity::error,
             "Ranks of one job ran with different NCCL settings",
             fmt::format("trial {}: NCCL versions {}; NCCL_CUMEM_ENABLE {}", t.index,
                         join(std::vector<std::string>(vs.begin(), vs.end()), ","),
                         join(std::vector<std::string>(cumem.begin(), cumem.end()), ",")),
             {{"give every process the same NCCL library and the same NCCL_CUMEM_ENABLE", "none"}}}};
  }
  return {};
}

Findings persistence_off(const RuleInput& in) {
  std::vector<std::string> no_persist;
  for (const auto& g : in.f.nvml.gpus)
    if (g.persistence == 0) no_persist.push_back(std::to_string(g.index));
  if (no_persist.empty()) return {};
  return {{"persistence-off",
           Severity::warn,
           "Persistence mode is off",
           "GPUs " + join(no_persist, ",") +
               ": the driver tears down and re-initialises each GPU whenever no "
               "process uses it, which slows every process's CUDA context creation",
           {{"nvidia-smi -pm 1 (as root), or run nvidia-persistenced",
             "none at run time; the driver keeps each GPU initialised while idle"}}}};
}

Findings p2p_disabled(const RuleInput& in) {
  const Facts& f = in.f;
  int nvlinks = 0;
  for (const auto& g : f.nvml.gpus) nvlinks += g.nvlinks;
  if (!env_set(f, "NCCL_P2P_DISABLE") || env_of(f, "NCCL_P2P_DISABLE") == "0" || nvlinks <= 0) return {};
  return {
      {"p2p-disabled",
       Severity::warn,
       "NCCL_P2P_DISABLE is set on a node with NVLink",
       fmt::format("NCCL_P2P_DISABLE={} while the GPUs have {} active NVLinks", env_of(f, "NCCL_P2P_DISABLE"), nvlinks),
       {{"unset NCCL_P2P_DISABLE",
         "none; while it is set, traffic goes through shared memory or the network instead of NVLink"}}}};
}

Findings nvls(const RuleInput& in) {
  const Facts& f = in.f;
  if (!env_set(f, "NCCL_NVLS_ENABLE") || env_of(f, "NCCL_NVLS_ENABLE") == "0" || in.ngpus <= 1) return {};
  return {{"nvls",
           Severity::warn,
           "NVLink multicast (NVLS) is enabled",
           "NCCL_NVLS_ENABLE=" + env_of(f, "NCCL_NVLS_ENABLE") +
               "; on machines whose GPUs are shared, multicast can take them out of service",
           {{"NCCL_NVLS_ENABLE=0 where NVLink multicast must stay off", "loses NVLS algorithms"}}}};
}

Findings netns(const RuleInput& in) {
  if (in.f.host_netns != 0) return {};
  return {{"netns",
           Severity::info,
           "This process is not in the host's network namespace",
           "NCCL's cuMem path passes file descriptors over abstract Unix sockets, which are per network "
           "namespace: processes of one job in different namespaces cannot use it",
           {{"run the job's processes in one network namespace (e.g. --network=host)",
             "the container shares the host's network"},
            {"NCCL_CUMEM_ENABLE=0", std::string(Fix{Fix::Kind::cumem_off, 0}.cost())}}}};
}

// NCCL groups ranks into hosts by a hash of the host name and boot id, or by NCCL_HOSTID where it is set: ranks that
// share the value are connected as one host's (P2P, shared memory), which fails across machines or containers.
Findings host_id(const RuleInput& in) {
  const Facts& f = in.f;
  if (!env_set(f, "NCCL_HOSTID")) return {};
  return {
      {"host-id",
       Severity::warn,
       "NCCL_HOSTID decides which ranks NCCL takes for one host",
       fmt::format("NCCL_HOSTID={} replaces the host name and boot id NCCL groups ranks by: every rank with this "
                   "value, on another machine or in another container, is taken for this host and connected by "
                   "P2P and shared memory, which fail there (NVIDIA/nccl#879: \"Proxy Call to rank 1 failed "
                   "(Connect)\"; NVIDIA/nccl#1647: two containers taken for one node, cuMemImportFromShareableHandle "
                   "fails)",
                   shown(env_of(f, "NCCL_HOSTID"), 64)),
       {{"unset NCCL_HOSTID, or give each machine (and each container that does not share the host's IPC and "
         "/dev/shm) a value of its own",
         "none"}}}};
}

// "NAME=value" for each of the variables set (and not empty) in the environment, in the order given.
std::vector<std::string> set_vars(const Facts& f, std::initializer_list<const char*> names) {
  std::vector<std::string> out;
  for (const char* v : names)
    if (auto it = f.env.find(v); it != f.env.end() && !it->second.empty())
      out.push_back(std::string(v) + "=" + it->second);
  return out;
}

// Facts that hint at the network a job starts on: doctor net checks its layers.
Findings network(const RuleInput& in) {
  const Facts& f = in.f;
  const std::vector<std::string> proxies =
      set_vars(f, {"http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY", "grpc_proxy"});
  const std::vector<std::string> rendezvous = set_vars(f, {"MASTER_ADDR", "RAY_ADDRESS"});
  const bool proxied = !proxies.empty() && !rendezvous.empty();
  if (f.host_netns != 0 && !proxied) return {};
  std::string evidence = f.host_netns == 0 ? "this process is in a network namespace of its own" : "";
  if (proxied)
    evidence += std::string(evidence.empty() ? "" : "; ") + join(proxies, ", ") + " beside " + join(rendezvous, ", ") +
                (f.env.count("no_proxy") || f.env.count("NO_PROXY") ? "" : " and no no_proxy");
  return {{"network",
           Severity::info,
           "The network the job starts on may stand in its way",
           evidence,
           {{"coldstart doctor net: checks the namespace, the name, the route, the gateway, each client's proxy "
             "and the connection to MASTER_ADDR, RAY_ADDRESS and the proxies, and names the first broken layer "
             "(--peers under the launcher: every rank against every other)",
             "none"}}}};
}

Findings memlock(const RuleInput& in) {
  const Facts& f = in.f;
  if (f.memlock_bytes < 0 || f.memlock_bytes >= (int64_t{64} << 20)) return {};
  return {{"memlock",
           Severity::info,
           "Locked-memory limit is low",
           "ulimit -l is " + format_bytes(static_cast<double>(f.memlock_bytes)) +
               "; InfiniBand/RoCE transports register (lock) memory",
           {{"ulimit -l unlimited (or --ulimit memlock=-1 in containers); only matters with RDMA networks", "none"}}}};
}

// NCCL_TOPO_FILE names a file NCCL cannot use. One it cannot open it skips, saying so only in an INFO line, and
// detects the node itself; one it opens but lacks what NCCL requires fails every communicator's init
// (NVIDIA/nccl#1726).
Findings topo_file(const RuleInput& in) {
  const TopoFileFact& t = in.f.topo_file;
  if (t.path.empty() || t.problem.empty()) return {};
  const bool unread = t.readable == 0;
  return {{"topo-file",
           unread ? Severity::warn : Severity::error,
           unread ? "NCCL's topology file cannot be read: NCCL will not use it"
                  : "NCCL's topology file is one it cannot use: init fails",
           "NCCL_TOPO_FILE=" + shown(t.path) + ": " + shown(t.problem) +
               (unread ? "; NCCL skips a file it cannot open (an INFO line says so) and detects the node itself, "
                         "so the topology the file was to give is not the one used"
                       : "; NCCL reads it in place of its own detection, and every communicator's init then fails "
                         "with \"internal error\" (NVIDIA/nccl#1726)"),
           {{"unset NCCL_TOPO_FILE (NCCL detects the node itself), or point it at the file for this machine type "
             "(a network plugin ships one per instance: check the plugin's version)",
             "none where the node's own detection is right; a file is for what NCCL cannot see (a VM's hidden PCI "
             "topology)"}}}};
}

// The first GPU without cuMem (VMM) support, where cuMem is on.
Findings no_vmm(const RuleInput& in) {
  const Facts& f = in.f;
  if (!cumem_on(f)) return {};
  for (size_t i = 0; i < f.vmm.size(); ++i)
    if (f.vmm[i] == 0)
      return {{"no-vmm",
               Severity::info,
               "A GPU without cuMem (VMM) support",
               fmt::format("CUDA device {} does not support virtual memory management; NCCL falls back to legacy "
                           "allocations there",
                           i),
               {}}};
  return {};
}

// Every rule, in the order its findings are listed.
constexpr Rule kRules[] = {
    {"no-gpu", no_gpu},
    {"cvd-invalid", cvd_invalid},
    {"same-gpu", same_gpu},  // rules_job.cc
    {"device-index", device_index},
    {"masked", masked},
    {"fixes-ranked", fixes_ranked},
    {"log-disturbance", log_disturbance},
    {"nccl-versions", nccl_versions},
    {"nccl-arch", nccl_arch},  // rules_jit.cc
    {"jit-cache", jit_cache},
    {"mixed-ranks", mixed_ranks},
    {"persistence-off", persistence_off},
    {"shm-small", shm_small},  // rules_job.cc
    {"fd-limit", fd_limit},
    {"spinning-waits", spinning_waits},
    {"p2p-disabled", p2p_disabled},
    {"nvls", nvls},
    {"netns", netns},
    {"host-id", host_id},
    {"network", network},
    {"memlock", memlock},
    {"topo-file", topo_file},
    {"no-vmm", no_vmm},
};
}  // namespace

std::vector<Finding> evaluate(const Context& c) {
  const Facts& f = *c.facts;
  const size_t ngpus = f.nvml.available ? f.nvml.gpus.size() : f.cuda.gpus.size();
  const CvdAnalysis cvd = analyze_cvd(f.cvd_set, f.cvd, f.nvml.gpus);
  const RuleInput in{c, f, ngpus, cvd};
  std::vector<Finding> out;
  for (const Rule& rule : kRules)
    for (Finding& finding : rule.check(in)) out.push_back(std::move(finding));
  return out;
}

json to_json(const std::vector<Finding>& fs) {
  json arr = json::array();
  for (const auto& f : fs) {
    json fixes = json::array();
    for (const auto& x : f.fixes) fixes.push_back({{"fix", x.what}, {"cost", x.cost}});
    arr.push_back({{"id", f.id},
                   {"severity", severity_name(f.severity)},
                   {"title", f.title},
                   {"evidence", f.evidence},
                   {"fixes", fixes}});
  }
  return arr;
}

std::string FixAdvice::text() const { return cost.empty() ? what : what + " — cost: " + cost; }

std::string render_findings(const std::vector<Finding>& fs) {
  if (fs.empty()) return "No hazards found.\n";
  std::string out;
  for (const auto& f : fs) {
    out += fmt::format("[{}] {}\n  {}\n", severity_name(f.severity), f.title, f.evidence);
    for (const auto& fix : f.fixes) out += "  fix: " + fix.text() + "\n";
  }
  return out;
}

}  // namespace coldstart::doctor
