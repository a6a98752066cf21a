// What a doctor rule is, for the files that hold rules (rules.cc and the rule families beside it): facts in, findings
// out, reading only what evaluate() decided once before any rule runs.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "doctor/cvd.h"
#include "doctor/rules.h"

namespace coldstart::doctor {

// What every rule reads: the context, and what is decided once before the rules run, so that no rule depends on
// another's hidden state.
struct RuleInput {
  const Context& c;
  const Facts& f;
  size_t ngpus;            // GPUs on the node, as NVML (or else CUDA) counts them
  const CvdAnalysis& cvd;  // CUDA_VISIBLE_DEVICES as the CUDA runtime reads it
};

// A rule's findings: none where it does not apply.
using Findings = std::vector<Finding>;

// The environment of the fact set: a variable's value ("" when unset), and whether it is set at all.
std::string env_of(const Facts& f, const std::string& k);
bool env_set(const Facts& f, const std::string& k);

// The rule families beside rules.cc (their ids in docs/doctor.md).
// rules_jit.cc: a NCCL without SASS for a GPU, compiled from PTX at init (nccl-no-sass) or unable to launch
// (nccl-no-arch); the JIT cache that would not keep what was compiled (jit-cache).
Findings nccl_arch(const RuleInput& in);
Findings jit_cache(const RuleInput& in);
// rules_job.cc, the job's size against the node: ranks that resolve to one GPU, a LOCAL_RANK past the GPUs this process
// sees, the open-files limit against the fds NCCL holds at the job's size, /dev/shm against NCCL's shared-memory need
// for the ranks of this node, the node's ranks against its CPUs while NCCL's waits spin.
Findings same_gpu(const RuleInput& in);
Findings device_index(const RuleInput& in);
Findings fd_limit(const RuleInput& in);
Findings shm_small(const RuleInput& in);
Findings spinning_waits(const RuleInput& in);

}  // namespace coldstart::doctor
