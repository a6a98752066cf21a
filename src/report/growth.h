// How each phase grows with the ranks (analysis/growth.h), as the terminal and Markdown show it (one table per
// configuration: the median at each rank count, the law, the exponent, the predictions marked as such) and as HTML
// (a log–log chart per configuration, the medians with their spread and each law's line, above the same table).
#pragma once
#include <string>
#include <vector>

#include "analysis/growth.h"

namespace coldstart::report {

// The values a reader needs to see grow: "ready", then every other value whose median at the largest rank count
// reaches kShownFloorMs (NCCL's "init.total" is the sum of the others and is left out).
inline constexpr double kShownFloorMs = 5;
std::vector<const analysis::Growth*> shown_growth(const std::vector<analysis::Growth>& all, const std::string& config);

std::string render_growth(const std::vector<analysis::Growth>& all, bool markdown);
std::string growth_html(const std::vector<analysis::Growth>& all);

// "850 ms", "21.5 s", "6.4 min", "3.1 h", "2.5 d": a duration at the scale it is read at.
std::string format_duration_ms(double ms);

}  // namespace coldstart::report
