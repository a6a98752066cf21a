// What a hung trial's message says of its ranks: each rank the watchdog stopped, with the phase it was in and what its
// threads were doing (read from /proc before the ranks were stopped), ranks alike as one entry.
#pragma once
#include <string>
#include <vector>

#include "model/result.h"

namespace coldstart::lab {

// " [main: S poll, ncclProxy: S futex, +3 more]": the threads of a hung rank, each distinct name and state once.
std::string threads_line(const std::vector<ThreadState>& threads);
// "rank 3 in comm_init [threads]"; ranks alike are one entry ("ranks 0–29 in comm_init [...]"), and past four entries
// they are grouped by phase alone, with the threads of the group's first rank: a hang of 64 ranks stays a line a
// reader can take in.
std::string where_hung_ranks_were(const std::vector<RankResult>& ranks);

}  // namespace coldstart::lab
