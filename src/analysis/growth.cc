#include "analysis/growth.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include <fmt/format.h>

#include "util/error.h"
#include "util/random.h"
#include "util/stats.h"

namespace coldstart::analysis {
namespace {

constexpr Law kLaws[] = {Law::constant, Law::linear, Law::n_log_n, Law::quadratic};
constexpr int kResamples = 1000;
constexpr int kReweightings = 20;
constexpr uint64_t kSeed = 43;  // fixed: the same runs give the same intervals
constexpr double kFloorMs = 1e-3;
constexpr double kSameAicc = 2;  // AICc differences below this do not tell two laws apart
// NCCL prints its Init timings in steps of 10 ms: a 0 is under 10 ms, taken as 10 (on a log scale, 0 is no value).
constexpr double kInitTimingStepMs = 10;

struct Sample {
  double ranks, ms;
};

std::vector<Sample> samples_of(const std::vector<GrowthPoint>& points) {
  std::vector<Sample> out;
  for (const GrowthPoint& p : points)
    for (double v : p.values) out.push_back({static_cast<double>(p.ranks), std::max(v, kFloorMs)});
  return out;
}

// ms = fixed + scale·g, fixed and scale at or above zero, by weighted least squares with weights 1 / w².
LawFit solve(Law law, const std::vector<Sample>& samples, const std::vector<double>& w) {
  double s = 0, sg = 0, sy = 0, sgg = 0, sgy = 0;
  for (size_t i = 0; i < samples.size(); ++i) {
    const double wi = 1 / (w[i] * w[i]), g = law_term(law, samples[i].ranks), y = samples[i].ms;
    s += wi, sg += wi * g, sy += wi * y, sgg += wi * g * g, sgy += wi * g * y;
  }
  LawFit f{.law = law, .fixed_ms = sy / s};
  const double det = s * sgg - sg * sg;
  if (det <= 0) return f;
  f.scale_ms = (s * sgy - sg * sy) / det;
  f.fixed_ms = (sy - f.scale_ms * sg) / s;
  if (f.fixed_ms < 0) f.fixed_ms = 0, f.scale_ms = sgy / sgg;
  if (f.scale_ms <= 0) f.fixed_ms = sy / s, f.scale_ms = 0;
  return f;
}

// The law fitted on relative error to the fit, (y - fit) / fit, which is the error on a log scale: weighted least
// squares, the weights the last fit's values, until they settle (iteratively reweighted). The constant law's fit is
// the geometric mean. Residual and AICc are taken on the logarithms.
LawFit fit(Law law, const std::vector<Sample>& samples) {
  LawFit f{.law = law};
  if (law == Law::constant) {
    double logs = 0;
    for (const Sample& x : samples) logs += std::log(x.ms);
    f.fixed_ms = std::exp(logs / static_cast<double>(samples.size()));
  } else {
    std::vector<double> w;
    for (const Sample& x : samples) w.push_back(x.ms);
    for (int i = 0; i < kReweightings; ++i) {
      f = solve(law, samples, w);
      for (size_t j = 0; j < samples.size(); ++j) w[j] = std::max(f.at(samples[j].ranks), kFloorMs);
    }
  }
  double rss = 0;
  for (const Sample& x : samples) rss += std::pow(std::log(x.ms) - std::log(std::max(f.at(x.ranks), kFloorMs)), 2);
  const double n = static_cast<double>(samples.size()), k = f.scale_ms > 0 ? 2 : 1;
  f.residual = std::sqrt(rss / n);
  f.aicc = n - k - 1 > 0 ? n * std::log(std::max(rss / n, 1e-12)) + 2 * k + 2 * k * (k + 1) / (n - k - 1)
                         : std::numeric_limits<double>::infinity();
  return f;
}

// k of ms ∝ n^k: least squares on the logarithms.
double exponent_of(const std::vector<Sample>& samples) {
  double n = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const Sample& x : samples) {
    const double lx = std::log(x.ranks), ly = std::log(x.ms);
    n += 1, sx += lx, sy += ly, sxx += lx * lx, sxy += lx * ly;
  }
  const double det = n * sxx - sx * sx;
  return det > 0 ? (n * sxy - sx * sy) / det : 0;
}

// The points with each rank count's trials drawn again, with replacement.
std::vector<GrowthPoint> resample(const std::vector<GrowthPoint>& points, Rng& rng) {
  std::vector<GrowthPoint> out = points;
  for (size_t i = 0; i < points.size(); ++i)
    for (double& v : out[i].values) v = points[i].values[rng.below(points[i].values.size())];
  return out;
}

Interval interval(double estimate, std::vector<double> draws) {
  std::sort(draws.begin(), draws.end());
  return {estimate, percentile(draws, 2.5), percentile(draws, 97.5)};
}

// The ranks of a run's job, for messages and matching.
int ranks_of(const BenchResults& run) { return run.spec.nranks(); }

// The node count of a trial's configuration (bench --nodes); 1 where the run has no such configuration.
int nodes_of(const BenchResults& run, const TrialResult& trial) {
  for (const Config& c : run.configs)
    if (c.id == trial.config_id) return c.nodes;
  return 1;
}

// A job across nodes grows by adding nodes of the same ranks each: the trial's place in the series of its
// configuration at its ranks per node, whatever the node count ("isolated · 4 ranks per node (link 1ms)"), with the
// key it is matched on across runs and the trial's node count; nullopt for a run with no configuration across nodes.
struct PerNode {
  std::string key, label;
  int nodes;
};
std::optional<PerNode> per_node_series(const BenchResults& run, const TrialResult& trial, const std::string& label) {
  const bool spans = std::any_of(run.spec.nodes.begin(), run.spec.nodes.end(), [](int n) { return n > 1; });
  const int nodes = nodes_of(run, trial);
  if (!spans || ranks_of(run) % nodes != 0) return std::nullopt;
  const int per_node = ranks_of(run) / nodes;
  // The key and label without the node count, which end both (Config::key, Config::label)
  const std::string key = trial.config_key.substr(0, trial.config_key.find("|nodes="));
  const std::string base = label.substr(0, label.find(" · " + std::to_string(nodes) + " nodes"));
  const std::string link = run.spec.link.any() ? run.spec.link.name() : "";
  return PerNode{fmt::format("{}|per_node={}{}", key, per_node, link.empty() ? "" : "|link=" + link),
                 fmt::format("{} · {} ranks per node{}", base, per_node, link.empty() ? "" : " (link " + link + ")"),
                 nodes};
}

// Every value name a trial carries, in the order a reader follows them: "ready", its ranks' phases as they ran, their
// Init timings as "init.X".
std::vector<std::string> value_names(const TrialResult& trial) {
  std::vector<std::string> names{"ready"}, init;
  auto add = [](std::vector<std::string>& to, std::string name) {
    if (std::find(to.begin(), to.end(), name) == to.end()) to.push_back(std::move(name));
  };
  for (const RankResult& r : trial.ranks) {
    for (const PhaseRecord& p : r.phases) add(names, p.name);
    if (r.nccl)
      for (const auto& [key, ms] : r.nccl->init_timings_ms) add(init, "init." + key);
  }
  for (std::string& name : init) add(names, std::move(name));
  return names;
}

}  // namespace

double law_term(Law law, double ranks) {
  switch (law) {
    case Law::constant: return 1;
    case Law::linear: return ranks;
    case Law::n_log_n: return ranks * std::log2(ranks);
    case Law::quadratic: return ranks * ranks;
  }
  return 1;
}

std::vector<LawFit> fit_laws(const std::vector<GrowthPoint>& points) {
  if (points.size() < kMinRankCounts) return {};
  const std::vector<Sample> samples = samples_of(points);
  std::vector<LawFit> fits;
  for (Law law : kLaws) fits.push_back(fit(law, samples));
  std::stable_sort(fits.begin(), fits.end(), [](const LawFit& a, const LawFit& b) { return a.aicc < b.aicc; });
  // Within kSameAicc of the best, the constant law is as good an account with one parameter fewer: it comes first.
  auto constant = std::find_if(fits.begin(), fits.end(), [](const LawFit& f) { return f.law == Law::constant; });
  if (constant->aicc - fits.front().aicc < kSameAicc) std::rotate(fits.begin(), constant, constant + 1);
  return fits;
}

std::optional<Growth> growth_of(std::vector<GrowthPoint> points, std::string config, std::string phase) {
  std::erase_if(points, [](const GrowthPoint& p) { return p.values.empty() || p.ranks < 1; });
  std::sort(points.begin(), points.end(), [](const auto& a, const auto& b) { return a.ranks < b.ranks; });
  if (points.size() < kMinRankCounts) return std::nullopt;
  Growth g{.config = std::move(config), .phase = std::move(phase), .points = points, .fits = fit_laws(points)};
  const LawFit& best = g.fits.front();
  g.ambiguous = g.fits.size() > 1 && std::abs(g.fits[1].aicc - best.aicc) < kSameAicc;

  Rng rng(kSeed);
  std::vector<double> exponents;
  std::vector<std::vector<double>> predicted(std::size(kPredictedRanks));
  for (int i = 0; i < kResamples; ++i) {
    const std::vector<Sample> again = samples_of(resample(points, rng));
    exponents.push_back(exponent_of(again));
    const LawFit refit = fit(best.law, again);
    for (size_t j = 0; j < std::size(kPredictedRanks); ++j)
      predicted[j].push_back(refit.at(static_cast<double>(kPredictedRanks[j])));
  }
  g.exponent = interval(exponent_of(samples_of(points)), std::move(exponents));
  for (size_t j = 0; j < std::size(kPredictedRanks); ++j)
    g.predictions.push_back(
        {kPredictedRanks[j], interval(best.at(static_cast<double>(kPredictedRanks[j])), std::move(predicted[j]))});
  return g;
}

std::optional<double> trial_value(const TrialResult& trial, const std::string& phase) {
  if (phase == "ready") return trial.ready_ms();
  std::optional<double> slowest;
  const bool init = phase.starts_with("init.");
  for (const RankResult& r : trial.ranks) {
    std::optional<double> v;
    if (init && r.nccl) {
      auto it = r.nccl->init_timings_ms.find(phase.substr(5));
      if (it != r.nccl->init_timings_ms.end()) v = it->second;
    } else if (const PhaseRecord* p = r.phase(phase)) {
      v = p->dur_ms;
    }
    if (v && (!slowest || *v > *slowest)) slowest = v;
  }
  return slowest;
}

std::vector<Growth> growth(const std::vector<const BenchResults*>& runs, const std::vector<std::string>& names) {
  std::map<int, std::string> by_ranks;
  for (size_t i = 0; i < runs.size(); ++i) {
    auto [it, fresh] = by_ranks.emplace(ranks_of(*runs[i]), names.at(i));
    if (!fresh)
      throw InputError(fmt::format("{} and {}: both are jobs of {} ranks; the growth needs one run per rank count",
                                   it->second, names.at(i), it->first));
  }
  if (by_ranks.size() < kMinRankCounts)
    throw InputError(
        fmt::format("the growth needs runs of at least {} rank counts; {} given", kMinRankCounts, by_ranks.size()));

  // configuration key -> its label, and each value's samples by rank count (names in the order first seen)
  struct Series {
    std::string label;
    std::vector<std::string> names;
    std::map<std::string, std::map<int, std::vector<double>>> values;
  };
  std::map<std::string, Series> series;
  std::vector<std::string> order;  // configurations in the first run's order
  auto add = [&](const std::string& key, const std::string& label, const TrialResult& trial, int ranks) {
    Series& s = series[key];
    if (s.label.empty()) {
      order.push_back(key);
      s.label = label;
    }
    for (const std::string& name : value_names(trial)) {
      auto v = trial_value(trial, name);
      if (!v) continue;
      if (name.starts_with("init.")) v = std::max(*v, kInitTimingStepMs);
      if (!s.values.contains(name)) s.names.push_back(name);
      s.values[name][ranks].push_back(*v);
    }
  };
  std::map<std::string, std::set<int>> node_counts;  // per-node series -> the node counts in it
  for (const BenchResults* run : runs) {
    for (const TrialResult& trial : run->trials) {
      if (!trial.ok()) continue;
      std::string label;
      for (const ConfigSummary& c : run->summaries)
        if (c.config_id == trial.config_id) label = c.label;
      add(trial.config_key, label, trial, ranks_of(*run));
      if (auto per_node = per_node_series(*run, trial, label)) {
        add(per_node->key, per_node->label, trial, ranks_of(*run));
        node_counts[per_node->key].insert(per_node->nodes);
      }
    }
  }
  // A per-node series is a growth across nodes only where it spans several node counts; else it is its configuration
  std::erase_if(order, [&](const std::string& key) {
    auto it = node_counts.find(key);
    return it != node_counts.end() && it->second.size() < 2;
  });
  std::vector<Growth> out;
  for (const std::string& key : order) {
    const Series& s = series[key];
    for (const std::string& name : s.names) {
      std::vector<GrowthPoint> points;
      for (const auto& [ranks, values] : s.values.at(name)) points.push_back({ranks, values});
      if (auto g = growth_of(std::move(points), s.label, name)) out.push_back(std::move(*g));
    }
  }
  return out;
}

}  // namespace coldstart::analysis
