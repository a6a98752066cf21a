// What the lab's own NCCL log costs what it measures. A run that has a configuration with the log on (light, full)
// and the same configuration with it off (`--nccl-log off,light`) holds an A/B of the log itself: per phase of the
// cold start, the slowest rank's time per trial with the log on against off, the Hodges-Lehmann shift with its
// interval and n. bench says it with its verdict, so a default that disturbs the number it exists to measure says so
// in the run that shows it (docs/nccllog.md).
#pragma once
#include <string>
#include <vector>

#include "model/result.h"
#include "util/stats.h"

namespace coldstart::analysis {

struct PhaseShift {
  std::string phase;  // a phase of model/phases.h, or "ready"
  Shift shift;        // on - off, ms: positive where the log adds
  bool beyond_noise() const { return shift.n_a > 0 && !shift.spans_zero(); }
};

struct LogDisturbance {
  std::string scope;  // the configuration's label without its log
  NcclLog level = NcclLog::light;
  int config_off = -1, config_on = -1;
  std::vector<PhaseShift> phases;  // init, the first collective's phases, then ready
  bool beyond_noise() const;
};

// For every configuration with the log on that the run also has with it off (and nothing else different).
std::vector<LogDisturbance> log_disturbance(const BenchResults& r);

// "the NCCL log's own cost ..." and a line per pair; "" for none.
std::string render_log_disturbance(const std::vector<LogDisturbance>& d);

}  // namespace coldstart::analysis
