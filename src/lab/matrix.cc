#include "lab/matrix.h"

#include <algorithm>

#include "lab/flags.h"
#include "util/error.h"
#include "util/random.h"
#include "util/strings.h"

namespace coldstart::lab {

std::vector<Config> expand(const BenchSpec& spec) {
  if (spec.modes.empty()) throw InputError("--modes is empty; give at least one of shared, isolated, remap, explicit");
  if (spec.fixes.empty()) throw InputError(std::string("--fix is empty; give ") + kFixNames);
  if (spec.startups.empty())
    throw InputError("--startup is empty; give none, cpu:DURATION, h2d:SIZE or h2d-pinned:SIZE");
  const bool only_baseline = spec.fixes.size() == 1 && spec.fixes[0].kind == Fix::Kind::none;
  // The default axis (cuMem unset and off) is the README's matrix; a run that measures fixes compares them instead.
  std::vector<EnvAxis> axes = !spec.env.empty() ? spec.env
                              : only_baseline   ? std::vector<EnvAxis>{default_env_axis()}
                                                : std::vector<EnvAxis>{};
  std::vector<std::string> seen;
  for (const auto& axis : axes)
    for (const auto& k : split(axis.key, '+')) {
      if (std::find(seen.begin(), seen.end(), k) != seen.end())
        throw InputError("--env " + k + " is given twice; put all its values in one --env KEY=v1,v2");
      seen.push_back(k);
    }
  for (const Fix& fix : spec.fixes) {
    for (const auto& e : fix.env())
      if (std::find(seen.begin(), seen.end(), e.key) != seen.end())
        throw InputError("--fix " + fix.name() + " sets " + e.key + ", which --env also varies; drop one of them");
    if (fix.kind == Fix::Kind::split_share && spec.groups.kind != Groups::Kind::split)
      throw InputError("--fix split-share needs --groups split:K (it changes how the K groups are split)");
    if (fix.kind == Fix::Kind::split_share && spec.worker == Worker::torch)
      throw InputError("--fix split-share applies to coldstart's worker (--worker nccl) only");
  }

  // Cartesian product of the env axes, in --env order, the last axis varying fastest.
  std::vector<std::vector<EnvSetting>> envs{{}};
  for (const auto& axis : axes) {
    std::vector<std::vector<EnvSetting>> next;
    for (const auto& prefix : envs)
      for (const auto& v : axis.values) {
        auto e = prefix;
        for (const auto& k : split(axis.key, '+')) e.push_back({k, v});
        next.push_back(std::move(e));
      }
    envs = std::move(next);
  }
  std::vector<std::string> libs = spec.nccl_libs.empty() ? std::vector<std::string>{""} : spec.nccl_libs;

  if (spec.nccl_logs.empty()) throw InputError("--nccl-log is empty; give off, light or full");
  if (spec.traces.empty()) throw InputError("--trace is empty; give off, on or off,on");
  if (spec.nodes.empty()) throw InputError("--nodes is empty; give node counts, e.g. 1,2");
  for (size_t i = 0; i < spec.nodes.size(); ++i)
    if (std::find(spec.nodes.begin(), spec.nodes.begin() + static_cast<std::ptrdiff_t>(i), spec.nodes[i]) !=
        spec.nodes.begin() + static_cast<std::ptrdiff_t>(i))
      throw InputError("--nodes " + std::to_string(spec.nodes[i]) + " is asked for twice; give each node count once");
  std::vector<Config> out;
  for (const auto& lib : libs)
    for (NcclLog log : spec.nccl_logs)
      for (bool trace : spec.traces)
        for (const Startup& startup : spec.startups)
          for (Mode m : spec.modes)
            for (const auto& e : envs)
              for (const Fix& fix : spec.fixes) {
                Config c;
                c.id = static_cast<int>(out.size());
                c.mode = m;
                c.env = e;
                for (const auto& x : fix.env()) c.env.push_back(x);  // recorded: what the ranks ran with
                c.nccl_lib = lib;
                c.nccl_log = log;
                c.trace = trace;
                c.startup = startup;
                c.fix = fix;
                // The same settings twice would be compared with themselves: refuse, naming them.
                for (const auto& earlier : out)
                  if (earlier.key() == c.key())
                    throw InputError("configuration '" + c.label() +
                                     "' is asked for twice (a value repeated in --modes, --env, --fix, --startup, "
                                     "--nccl-lib, --nccl-log or --trace); give each value once");
                out.push_back(std::move(c));
              }
  // --nodes, the innermost axis: each configuration once per node count, the link on those above one node.
  if (spec.nodes == std::vector<int>{1}) return out;
  std::vector<Config> over_nodes;
  for (const Config& c : out)
    for (int nodes : spec.nodes) {
      Config x = c;
      x.id = static_cast<int>(over_nodes.size());
      x.nodes = nodes;
      if (nodes > 1) x.link = spec.link;
      over_nodes.push_back(std::move(x));
    }
  return over_nodes;
}

std::vector<TrialPlan> schedule(const std::vector<Config>& configs, int trials, uint64_t seed) {
  if (trials < 1) throw InputError("--trials must be at least 1");
  std::vector<TrialPlan> plan;
  for (int rep = 0; rep < trials; ++rep)
    for (const auto& c : configs) plan.push_back({0, c.id, rep});
  Rng rng(seed);
  rng.shuffle(plan);
  // Keep each configuration's repeats in order so that "trial 3 of isolated" reads naturally.
  std::vector<int> next_repeat(configs.size(), 0);
  for (size_t i = 0; i < plan.size(); ++i) {
    plan[i].index = static_cast<int>(i);
    plan[i].repeat = next_repeat[static_cast<size_t>(plan[i].config_id)]++;
  }
  return plan;
}

}  // namespace coldstart::lab
