// Internal to model/result_*.cc: what the readers (result_read.cc) and the upgrade of schema coldstart.bench/1
// (result_v1.cc) share.
#pragma once
#include <string_view>
#include <vector>

#include "model/result.h"
#include "util/json_reader.h"

namespace coldstart {

// Schema /1 named some fields of a rank otherwise. Its readers take both names; a rank that used an old one is of /1
// and so is its trial (RankMarks), whose ranks then get what /1 did not record (upgrade_rank_v1).
struct RankMarks {
  bool v1 = false;
  bool torch_version = false;  // the field was there (/1 had no "worker": a torch_version meant the torch probe)
};

// The fields of Memory and RankNccl under their /2 names (true: `key` names one and its value is read; result_read.cc).
bool read_field(JsonReader& in, std::string_view key, Memory& v);
bool read_field(JsonReader& in, std::string_view key, RankNccl& v);

// Memory and RankNccl under either schema's names; a /1 name sets marks.v1 (result_v1.cc).
void read_memory(JsonReader& in, Memory& m, RankMarks& marks);
void read_nccl(JsonReader& in, RankNccl& n, RankMarks& marks);

// What /1 did not record, from what it did: for each rank of the trial, with its marks (result_v1.cc).
void upgrade_trial_v1(TrialResult& t, const std::vector<RankMarks>& marks);

}  // namespace coldstart
