// Order statistics over trial samples.
#pragma once
#include <vector>

namespace coldstart {

struct Stats {
  int n = 0;
  double median = 0, min = 0, max = 0, p90 = 0, mean = 0;
};

// Percentiles interpolate linearly between order statistics (numpy's default). Empty input gives n == 0.
Stats summarize(std::vector<double> samples);
double percentile(const std::vector<double>& sorted, double p);

}  // namespace coldstart
