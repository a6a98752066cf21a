// bench's progress: a few ranks listed one by one, many counted by phase, and a terminal's live line in that form.
#include "cli/progress.h"

#include <gtest/gtest.h>

#include <sstream>

namespace coldstart::cli {
namespace {

TEST(Progress, AFewRanksAreListedManyAreCountedByPhase) {
  EXPECT_EQ(ranks_by_phase({"comm_init", "start"}), "comm_init start");
  std::vector<std::string> many(64, "first_wait");
  for (size_t r = 0; r < 20; ++r) many[r] = "comm_init";
  many[63] = "start";
  EXPECT_EQ(ranks_by_phase(many), "64 ranks: 20 comm_init · 43 first_wait · 1 start");
}

TEST(Progress, TheLiveLineOfAWideJobFitsOnOneLine) {
  std::ostringstream out;
  TerminalProgress progress(out, /*live=*/true);
  progress.trial_started({.index = 0, .planned = 2, .label = "isolated", .repeat = 0, .nranks = 64});
  for (int r = 0; r < 64; ++r) progress.rank_phase(r, "comm_init");
  EXPECT_NE(out.str().find("[1/2] isolated #0  64 ranks: "), std::string::npos) << out.str();
  EXPECT_EQ(out.str().find("comm_init comm_init"), std::string::npos) << out.str();
  // Into a file, nothing is written while a trial is young: no line per event.
  std::ostringstream log;
  TerminalProgress quiet(log, /*live=*/false);
  quiet.trial_started({.index = 0, .planned = 1, .label = "isolated", .repeat = 0, .nranks = 64});
  for (int r = 0; r < 64; ++r) quiet.rank_phase(r, "comm_init");
  EXPECT_EQ(log.str(), "");
}

}  // namespace
}  // namespace coldstart::cli
