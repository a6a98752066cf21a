// What a bench run's records must be beyond their JSON shape: ranges, uniqueness and references. The readers
// (model/result_read.cc) check that a field is there and of its type; these rules check that what parsed does not lie
// (two configurations of one identity, a count that would wrap when summed, a rank outside the job, ranks_per_gpu
// of 2^31-1). One rule set, used everywhere a run is read:
//   - bench's flags build a BenchSpec within the same limits (kMax* in model/spec.h);
//   - results.json (either schema) is refused at reading (bench_results_from_text), so report, compare, doctor
//     --from, and Python's coldstart.load() (which reads through `coldstart report FILE --json`) agree;
//   - bench --resume checks run.json's spec and every line of results.jsonl against the run's configurations.
// A refusal names the field's path from the file's top ("trials[3].ranks[1].rank") and what it holds.
#pragma once
#include <optional>
#include <string>
#include <vector>

namespace coldstart {

struct BenchSpec;
struct Config;
struct TrialResult;
struct BenchResults;

struct Invalid {
  std::string path;    // "spec.ranks_per_gpu", "configs[1].key"
  std::string reason;  // "2147483647 (give 1 to 64)"
  std::string text() const { return path + ": " + reason; }
};

// A spec as bench resolved it (run.json's, results.json's): paths start with `prefix` ("spec").
std::optional<Invalid> check_spec(const BenchSpec& s, const std::string& prefix = "spec");
// A finished trial against its run's spec and configurations: paths start with `prefix` ("trials[3]").
std::optional<Invalid> check_trial(const TrialResult& t, const BenchSpec& s, const std::vector<Config>& configs,
                                   const std::string& prefix);
// A whole run: its spec, its configurations (ids are positions, keys unique), its trials (indices unique).
std::optional<Invalid> check_results(const BenchResults& r);

}  // namespace coldstart
