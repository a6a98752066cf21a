// Doctor's rules: facts in, findings out, each with its evidence, the fix and what the fix costs. One engine, used by
// `coldstart doctor` and by `bench` for its closing advice.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "doctor/facts.h"
#include "model/result.h"

namespace coldstart::doctor {

enum class Severity { info, warn, error };
const char* severity_name(Severity s);

// One way to act on a finding, and what taking it costs ("none" where it costs nothing at run time).
struct FixAdvice {
  std::string what;
  std::string cost;
  std::string text() const;  // "what — cost", as the terminal and the HTML show it
};

struct Finding {
  std::string id;  // stable: "masked-cumem", "nccl-versions", ...
  Severity severity = Severity::info;
  std::string title;
  std::string evidence;
  std::vector<FixAdvice> fixes;
};

// What one rank of a planned job sees (doctor --ranks N --mode M).
struct RankView {
  int rank = 0;
  std::string cuda_visible_devices;
  int device_index = 0;
  std::vector<int> visible_nvml;  // physical GPUs it can see
  int own_nvml = -1;              // the GPU it uses
  std::string launcher;           // what a launcher gave it: "Ray: GPU id 1, CUDA_VISIBLE_DEVICES set by Ray to 1"
};

struct Context {
  const Facts* facts = nullptr;
  std::vector<RankView> ranks;             // empty: only this process
  const BenchResults* measured = nullptr;  // --from results.json / --measure
};

std::vector<Finding> evaluate(const Context& c);

// Measured numbers for the masked case from bench results, judged on cold start (ready) with the phases cuMem off
// moves cost between: "cold start ... 841 ms with cuMem on vs 688 ms with NCCL_CUMEM_ENABLE=0 — the first collective
// drops from 175 to 5.7 ms but comm_init goes from 401 to 426 ms"; empty when the results hold no such pair.
std::string measured_cumem_tradeoff(const BenchResults& r);

nlohmann::json to_json(const std::vector<Finding>& f);
std::string render_findings(const std::vector<Finding>& f);

}  // namespace coldstart::doctor
