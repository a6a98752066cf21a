// Doctor's report: the three visibility layers, NCCL libraries, environment and findings, as text or JSON.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "doctor/facts.h"
#include "doctor/rules.h"

namespace coldstart::doctor {

// Each rank's view of a planned job, from the launcher's dry run (bench --dry-run's first trial of the mode).
std::vector<RankView> rank_views(const BenchResults& dry, const Facts& f);

// The facts a results file recorded about the node it ran on (its GPUs and variables), for advice given later.
Facts facts_of_run(const BenchResults& r);

// The advice for a run's masked launch model (the first isolated trial's ranks), with the run's own numbers: what
// bench prints at its end and the HTML report shows. Empty when the run has no masked ranks.
std::vector<Finding> masked_advice(const BenchResults& r, const Facts& f);

std::string render_report(const Facts& f, const std::vector<RankView>& ranks, const std::vector<Finding>& findings);
nlohmann::json report_json(const Facts& f, const std::vector<RankView>& ranks, const std::vector<Finding>& findings);

}  // namespace coldstart::doctor
