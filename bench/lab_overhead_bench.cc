// The lab's own overhead per trial: its wall time minus the slowest rank's own span (spawn to exit), measured by the
// lab itself in every trial (TrialResult::lab_overhead_ms). This program runs dry-run trials at a given rank count
// and prints the distribution, with the workers' own overhead (time outside CUDA/NCCL/coordinator waits).
//   lab_overhead_bench [ranks=8] [trials=30]
#include <cstdlib>
#include <iostream>
#include <vector>

#include <fmt/format.h>

#include "lab/bench.h"
#include "lab/flags.h"
#include "util/random.h"
#include "util/stats.h"

int main(int argc, char** argv) {
  using namespace coldstart;
  using namespace coldstart::lab;
  int ranks = argc > 1 ? std::atoi(argv[1]) : 8;
  int trials = argc > 2 ? std::atoi(argv[2]) : 30;
  BenchSpec spec;
  spec.dry_run = true;
  spec.modes = {Mode::isolated};
  spec.env = {parse_env_axis("NCCL_CUMEM_ENABLE=0")};
  spec.trials = trials;
  spec.seed = 1;
  BenchOptions opts;
  opts.out_dir = "/tmp/coldstart-lab-overhead-" + random_hex(4);
  opts.gpus = ranks;
  opts.worker_command = {COLDSTART_BIN, "worker"};
  BenchResults r = run_bench(spec, opts);
  std::vector<double> lab, worker, wall;
  for (const auto& t : r.trials) {
    if (!t.ok()) {
      std::cerr << "trial " << t.index << ": " << name_of(t.status) << " " << t.message << "\n";
      return 1;
    }
    lab.push_back(t.lab_overhead_ms);
    wall.push_back(t.wall_ms);
    for (const auto& rr : t.ranks) worker.push_back(rr.overhead_ms);
  }
  auto show = [](const char* what, const Stats& s) {
    std::cout << fmt::format("{:<28} median {:7.2f} ms  p90 {:7.2f} ms  max {:7.2f} ms  (n={})\n", what, s.median,
                             s.p90, s.max, s.n);
  };
  std::cout << fmt::format("dry-run trials: {} ranks x {} trials\n", ranks, trials);
  show("trial wall time", summarize(wall));
  show("lab overhead per trial", summarize(lab));
  show("worker overhead per rank", summarize(worker));
  return 0;
}
