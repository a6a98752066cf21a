// Flag values into the model's types: each parser throws InputError naming the flag and the accepted values.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "model/spec.h"
#include "util/error.h"
#include "util/strings.h"

namespace coldstart::lab {

// "isolated" -> Mode::isolated, for any named enum; `flag` names the input in the error ("--modes").
template <NamedEnum E>
E parse_enum(std::string_view text, const std::string& flag, const std::string& hint = "") {
  if (auto v = enum_from<E>(text)) return *v;
  throw InputError(flag + " " + std::string(text) + ": unknown; use " + enum_choices<E>() + hint);
}

Mode parse_mode(const std::string& s, const std::string& what = "--modes");
Collective parse_collective(const std::string& s);
// list: the flag takes a list to compare (bench), and the message says so; trace takes one value.
NcclLog parse_nccl_log(const std::string& s, bool list = true);
Groups parse_groups(const std::string& s);
EnvAxis parse_env_axis(const std::string& text);
Startup parse_startup(const std::string& text);  // --startup
Fix parse_fix(const std::string& text);          // --fix

// "shared,isolated": a list flag's text.
template <NamedEnum E>
std::string enum_list(const std::vector<E>& v) {
  std::vector<std::string> out;
  for (E e : v) out.emplace_back(name_of(e));
  return join(out, ",");
}

// bench's flags as given, the path from the command line to BenchSpec: cli/bench_cmd.cc binds each flag to a field,
// to_spec parses them all. The defaults are written from BenchSpec's own (the one place they are set).
struct BenchFlags {
  BenchSpec d;
  std::string modes = enum_list(d.modes);
  std::string visible;
  std::vector<std::string> env;
  std::string nccl_libs;
  std::string nccl_log = enum_list(d.nccl_logs);
  std::string devices;
  int gpus = 0;
  std::string ranks_per_gpu = std::to_string(d.ranks_per_gpu);  // K, or ascending K,L,... (a series of runs)
  int trials = d.trials;
  std::string seed;  // empty: a random seed
  std::string collective{name_of(d.collective)};
  std::string size = format_size(d.size_bytes);
  std::string groups = d.groups.name();
  std::string timeout = fmt::format("{}s", d.timeout_s);
  int iters = d.steady_iters, warmup = d.warmup_iters;
  std::string out;
  std::string bind = "127.0.0.1", advertise;
  bool dry_run = d.dry_run;
  std::string trace = "off";
  std::string startup = "none", fix = "none";
  bool coverage = d.coverage;
  std::string nodes = "1", link;  // --nodes N[,M...], --link LATENCY[/RATE]
  std::string worker{name_of(d.worker)}, launcher{name_of(d.launcher)}, ray_address, resume;
  bool modes_given = false;
  bool ranks_per_gpu_given = false;
};

// The BenchSpec the flags say, each checked; InputError naming the flag otherwise. --bind, --advertise, --out, --gpus
// and --resume are the run's, not the spec's (BenchOptions).
BenchSpec to_spec(const BenchFlags& f);
// --ranks-per-gpu's counts: one, or an ascending list that bench runs as a series of jobs, one run each (each count
// from 1 to kMaxRanksPerGpu; InputError naming the flag otherwise).
std::vector<int> rank_counts(const BenchFlags& f);

}  // namespace coldstart::lab
