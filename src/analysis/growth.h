// How a cold start grows with the job: bench runs of the same configurations at several rank counts, each phase's
// per-trial value (the slowest rank's, the job's critical path) against the ranks, the law that fits it best and what
// that law predicts far beyond what was measured.
//
// The laws are ms = a + b·g(n) with g one of 1, n, n·log2 n, n² and a, b ≥ 0: a fixed cost and a growing one. Each is
// fitted to every ok trial's value on relative error (the values span orders of magnitude: a 10 ms miss matters at
// 50 ms, not at 20 s), and the laws are ranked by AICc on the logarithms (the constant law has one parameter, the
// others two; within 2 of the best, the constant law is preferred), so that nothing grows unless the growth pays for
// its parameter. The exponent k of a free power law (log y = c + k·log n, least squares) says the same in one number.
// Intervals come from a bootstrap of the trials (each rank count's trials resampled, the same law refitted, 1000
// times, a fixed seed): they are the spread of the measurement, not of the choice of law, and a prediction 30× beyond
// the largest job measured is an extrapolation whatever its interval (docs/scale.md).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "model/result.h"
#include "model/vocab.h"

namespace coldstart {
namespace analysis {
enum class Law { constant, linear, n_log_n, quadratic };
}
template <>
struct EnumNames<analysis::Law> {
  static constexpr std::pair<analysis::Law, std::string_view> names[] = {{analysis::Law::constant, "constant"},
                                                                         {analysis::Law::linear, "linear"},
                                                                         {analysis::Law::n_log_n, "n log n"},
                                                                         {analysis::Law::quadratic, "quadratic"}};
};
}  // namespace coldstart

namespace coldstart::analysis {

// g(n) of a law: 1, n, n·log2 n, n².
double law_term(Law law, double ranks);

struct GrowthPoint {
  int ranks = 0;
  std::vector<double> values;  // ms, one per ok trial
};

struct LawFit {
  Law law = Law::constant;
  double fixed_ms = 0, scale_ms = 0;  // ms = fixed_ms + scale_ms · law_term(law, n)
  double residual = 0;                // root mean square of log(y) - log(fit), over every trial
  double aicc = 0;                    // lower is better
  double at(double ranks) const { return fixed_ms + scale_ms * law_term(law, ranks); }
};

struct Interval {
  double estimate = 0, low = 0, high = 0;
};

struct Prediction {
  int64_t ranks = 0;
  Interval ms;
};

struct Growth {
  std::string config;  // the configuration's label
  std::string phase;   // "ready", a phase ("comm_init"), or one of NCCL's Init timings ("init.connections")
  std::vector<GrowthPoint> points;  // by ranks, ascending
  std::vector<LawFit> fits;         // every law, the best first (lowest AICc; the constant law within 2 of it)
  bool ambiguous = false;           // the second law's AICc is within 2 of the first's
  Interval exponent;                // k of ms ∝ n^k
  std::vector<Prediction> predictions;
};

inline constexpr int64_t kPredictedRanks[] = {1'000, 10'000, 100'000};
inline constexpr size_t kMinRankCounts = 3;  // fewer distinct rank counts fit no law

// Every law fitted to the points (each needs kMinRankCounts rank counts), the best first.
std::vector<LawFit> fit_laws(const std::vector<GrowthPoint>& points);
// One phase's growth: the fits, the exponent, and the best law's predictions, each with its bootstrap interval.
// std::nullopt with fewer than kMinRankCounts rank counts.
std::optional<Growth> growth_of(std::vector<GrowthPoint> points, std::string config, std::string phase);

// The value of `phase` in a trial, on its critical path: "ready" is the trial's ready_ms; a phase or "init.X" is the
// slowest rank's. std::nullopt when no rank has it.
std::optional<double> trial_value(const TrialResult& trial, const std::string& phase);

// Growth across runs of the same configurations at different rank counts (matched by configuration key): for each
// configuration in at least kMinRankCounts runs of different rank counts, "ready" and every phase and Init timing
// that all of them have. Runs across nodes (bench --nodes) add a series per number of ranks on a node, whatever the
// node count ("isolated · 4 ranks per node"): the job grown by adding nodes, as it grows on a cluster. Throws
// InputError when fewer than kMinRankCounts rank counts are given, or two runs have the same rank count, naming the
// runs.
std::vector<Growth> growth(const std::vector<const BenchResults*>& runs, const std::vector<std::string>& names);

}  // namespace coldstart::analysis
