#include "lab/hang.h"

#include <algorithm>

#include <fmt/format.h>

#include "util/proc.h"
#include "util/strings.h"

namespace coldstart::lab {
namespace {
constexpr size_t kHungGroupsShown = 4;
}  // namespace

// " [main: S poll, ncclProxy: S futex, +3 more]": the threads of a hung rank, each distinct name and state once.
std::string threads_line(const std::vector<ThreadState>& threads) {
  if (threads.empty()) return "";
  std::vector<std::string> seen;
  for (const auto& th : threads)
    if (std::string d = describe(th); std::find(seen.begin(), seen.end(), d) == seen.end()) seen.push_back(d);
  constexpr size_t kShown = 6;
  std::string more = seen.size() > kShown ? fmt::format(", +{} more", seen.size() - kShown) : "";
  if (seen.size() > kShown) seen.resize(kShown);
  return " [" + join(seen, ", ") + more + "]";
}

// Where the ranks the watchdog stopped were, each as "rank 3 in comm_init [its threads]"; ranks alike are one entry
// ("ranks 0–29 in comm_init [...]"), and past kHungGroupsShown entries they are grouped by phase alone, with the
// threads of the group's first rank: a hang of 64 ranks stays a line a reader can take in.
std::string where_hung_ranks_were(const std::vector<RankResult>& ranks) {
  auto place = [](const RankResult& r) {
    return fmt::format("{} {}", r.in_phase ? "in" : "after", r.last_phase.empty() ? "start-up" : r.last_phase);
  };
  auto group = [&](bool with_threads) {
    std::vector<std::pair<std::string, std::vector<int>>> groups;  // in rank order of their first member
    for (const auto& r : ranks) {
      if (!r.stopped_by_lab) continue;
      const std::string key = place(r) + (with_threads ? threads_line(r.threads) : "");
      auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == key; });
      if (it == groups.end())
        groups.push_back({key, {r.rank}});
      else
        it->second.push_back(r.rank);
    }
    return groups;
  };
  auto groups = group(true);
  if (groups.size() > kHungGroupsShown) {
    groups = group(false);
    for (auto& [key, members] : groups)
      for (const auto& r : ranks)
        if (r.rank == members.front()) key += threads_line(r.threads);
  }
  std::vector<std::string> parts;
  for (const auto& [key, members] : groups)
    parts.push_back(fmt::format("{} {} {}", members.size() == 1 ? "rank" : "ranks", format_ranks(members), key));
  return join(parts, "; ");
}

}  // namespace coldstart::lab
