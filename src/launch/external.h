// Ranks started by a launcher other than coldstart's lab: torchrun, Slurm's srun, Open MPI's mpirun, MPICH/PMI
// (Hydra), or Ray Train (which sets torchrun's variables). Each `coldstart worker` finds its rank, the world size and
// its local rank in the launcher's environment; rank 0 hosts the coordinator, the others find it from the launcher's
// variables or from --coord.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace coldstart::launch {

struct ExternalRank {
  std::string launcher;  // "torchrun", "slurm", "openmpi", "pmi", "ray"
  int rank = 0, world = 1;
  int local_rank = 0, local_world = -1;  // -1: unknown
  std::string job_id;                    // the launcher's id of this job or step ("" when it has none)
  std::string coord_host;                // where rank 0 runs, when the launcher tells ("" otherwise)
  int coord_port = 0;                    // 0: derive from the job id
};

using GetEnv = std::function<const char*(const char*)>;

// The launcher whose variables are present, or nullopt. Throws InputError when its variables are malformed (a
// RANK that is not a number, a rank outside the world).
std::optional<ExternalRank> detect_launcher(const GetEnv& env);
// The variables detect_launcher reads, for the line that says it found none.
inline constexpr std::string_view kLauncherVariables =
    "torchrun's RANK/WORLD_SIZE, Slurm's SLURM_PROCID/SLURM_NTASKS, Open MPI's OMPI_COMM_WORLD_RANK, PMI_RANK/PMI_SIZE";

// The first host of a Slurm node list: "gpu[03-05,09],cpu1" -> "gpu03".
std::string slurm_first_host(std::string_view nodelist);

// A port in 20000-32767 (below the kernel's ephemeral ports) from the job id, the same in every rank
// (COLDSTART_COORD_PORT or --coord override it).
uint16_t derived_port(std::string_view job_id);

// The coordinator's token when no lab hands one out: COLDSTART_TOKEN if set, else one derived from the job id (not a
// secret: it keeps strangers' and other jobs' connections out; set COLDSTART_TOKEN in the job's environment for a
// secret one).
std::string external_token(const ExternalRank& r, const GetEnv& env);

}  // namespace coldstart::launch
