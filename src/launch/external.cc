#include "launch/external.h"

#include <fmt/format.h>

#include "util/error.h"
#include "util/strings.h"

namespace coldstart::launch {
namespace {

std::optional<int> int_var(const GetEnv& env, const char* name, bool required) {
  const char* v = env(name);
  if (!v || !*v) {
    if (required) throw InputError(std::string(name) + " is not set; the launcher sets it for every rank");
    return std::nullopt;
  }
  auto n = parse_int(v);
  if (!n || *n < 0 || *n > 1'000'000)
    throw InputError(
        fmt::format("{}={}: expected a whole number from 0 to 1000000; check the launcher's environment", name, v));
  return static_cast<int>(*n);
}

std::string str_var(const GetEnv& env, const char* name) {
  const char* v = env(name);
  return v ? v : "";
}

// FNV-1a: stable across hosts and builds.
uint64_t fnv1a(std::string_view s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

}  // namespace

std::string slurm_first_host(std::string_view list) {
  list = trim(list);
  std::string host;
  for (size_t i = 0; i < list.size(); ++i) {
    char c = list[i];
    if (c == ',') break;
    if (c == '[') {
      // The first element of the range list: "03-05,09]" -> "03".
      size_t j = i + 1;
      while (j < list.size() && list[j] != '-' && list[j] != ',' && list[j] != ']') host += list[j++];
      return host;
    }
    host += c;
  }
  return host;
}

// Below Linux's ephemeral range (32768-60999 by default), where outgoing connections take their ports.
uint16_t derived_port(std::string_view job_id) { return static_cast<uint16_t>(20000 + fnv1a(job_id) % 12768); }

std::optional<ExternalRank> detect_launcher(const GetEnv& env) {
  ExternalRank r;
  auto finish = [&](const char* rank_var, const char* world_var) -> std::optional<ExternalRank> {
    if (r.world < 1) throw InputError(fmt::format("{}={}: the world must have at least one rank", world_var, r.world));
    if (r.rank >= r.world)
      throw InputError(fmt::format("{}={} is outside {}={}; check the launcher's environment", rank_var, r.rank,
                                   world_var, r.world));
    return r;
  };
  if (env("RANK") && env("WORLD_SIZE")) {  // torchrun, and Ray Train's torch workers
    r.launcher = env("RAY_JOB_ID") || env("RAY_ADDRESS") || env("RAY_NODE_ID") ? "ray" : "torchrun";
    r.rank = *int_var(env, "RANK", true);
    r.world = *int_var(env, "WORLD_SIZE", true);
    r.local_rank = int_var(env, "LOCAL_RANK", false).value_or(r.rank);
    r.local_world = int_var(env, "LOCAL_WORLD_SIZE", false).value_or(-1);
    r.job_id = str_var(env, "TORCHELASTIC_RUN_ID");
    r.coord_host = str_var(env, "MASTER_ADDR");
    // torchrun's store has MASTER_PORT, and with --standalone that is an ephemeral port whose neighbours are taken
    // by the store's own connections: the coordinator's port is derived from the job instead (see derived_port).
    r.job_id += ":" + str_var(env, "MASTER_ADDR") + ":" + str_var(env, "MASTER_PORT");
    return finish("RANK", "WORLD_SIZE");
  }
  if (env("OMPI_COMM_WORLD_RANK")) {
    r.launcher = "openmpi";
    r.rank = *int_var(env, "OMPI_COMM_WORLD_RANK", true);
    r.world = *int_var(env, "OMPI_COMM_WORLD_SIZE", true);
    r.local_rank = int_var(env, "OMPI_COMM_WORLD_LOCAL_RANK", false).value_or(r.rank);
    r.local_world = int_var(env, "OMPI_COMM_WORLD_LOCAL_SIZE", false).value_or(-1);
    for (const char* v : {"OMPI_MCA_ess_base_jobid", "OMPI_MCA_orte_ess_jobid", "PMIX_NAMESPACE"})
      if (const char* id = env(v); id && *id) {
        r.job_id = id;
        break;
      }
    return finish("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE");
  }
  if (env("PMI_RANK") && env("PMI_SIZE")) {  // MPICH / Intel MPI (Hydra)
    r.launcher = "pmi";
    r.rank = *int_var(env, "PMI_RANK", true);
    r.world = *int_var(env, "PMI_SIZE", true);
    r.local_rank = int_var(env, "MPI_LOCALRANKID", false).value_or(r.rank);
    r.local_world = int_var(env, "MPI_LOCALNRANKS", false).value_or(-1);
    // Hydra's PMI server runs on the launching host, which is where rank 0 runs by default.
    std::string pmi = str_var(env, "PMI_PORT");
    r.job_id = pmi;
    return finish("PMI_RANK", "PMI_SIZE");
  }
  if (env("SLURM_PROCID") && env("SLURM_NTASKS")) {
    r.launcher = "slurm";
    r.rank = *int_var(env, "SLURM_PROCID", true);
    r.world = *int_var(env, "SLURM_NTASKS", true);
    r.local_rank = int_var(env, "SLURM_LOCALID", false).value_or(r.rank);
    r.job_id = str_var(env, "SLURM_JOB_ID") + "." + str_var(env, "SLURM_STEP_ID");
    // srun places task 0 on the first node of the step.
    std::string nodes = str_var(env, "SLURM_STEP_NODELIST");
    if (nodes.empty()) nodes = str_var(env, "SLURM_JOB_NODELIST");
    r.coord_host = slurm_first_host(nodes);
    return finish("SLURM_PROCID", "SLURM_NTASKS");
  }
  // Half of a launcher's pair: name the variable that is missing, not "no launcher".
  for (auto [rank_var, world_var] : {std::pair{"RANK", "WORLD_SIZE"}, std::pair{"PMI_RANK", "PMI_SIZE"},
                                     std::pair{"SLURM_PROCID", "SLURM_NTASKS"}}) {
    const char* have = env(rank_var) ? rank_var : env(world_var) ? world_var : nullptr;
    if (!have) continue;
    const char* missing = have == rank_var ? world_var : rank_var;
    throw InputError(
        fmt::format("{}={} is set but {} is not; a launcher sets both for every rank (give the job's "
                    "{}, or --rank, --nranks and --coord)",
                    have, env(have), missing, missing));
  }
  return std::nullopt;
}

std::string external_token(const ExternalRank& r, const GetEnv& env) {
  if (const char* t = env("COLDSTART_TOKEN"); t && *t) return t;
  return fmt::format("{:016x}", fnv1a("coldstart:" + r.launcher + ":" + r.job_id + fmt::format(":{}", r.world)));
}

}  // namespace coldstart::launch
