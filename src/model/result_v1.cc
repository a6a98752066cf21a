// Schema coldstart.bench/1: the old field names the readers still accept (Memory's, RankNccl's) and the upgrade of
// a /1 trial's ranks to what /2 records.
#include <string_view>
#include <vector>

#include "model/result.h"
#include "model/result_v1.h"
#include "util/json_reader.h"

namespace coldstart {

void read_memory(JsonReader& in, Memory& m, RankMarks& marks) {
  in.object([&](std::string_view key) {
    if (read_field(in, key, m)) return;
    int64_t* old = key == "total"         ? &m.total_bytes
                   : key == "before_init" ? &m.used_before_init_bytes
                   : key == "after_init"  ? &m.used_after_init_bytes
                   : key == "after_first" ? &m.used_after_first_bytes
                                          : nullptr;
    if (!old) return in.skip();
    marks.v1 = true;
    read_value(in, *old);
  });
}

void read_nccl(JsonReader& in, RankNccl& n, RankMarks& marks) {
  in.object([&](std::string_view key) {
    if (read_field(in, key, n)) return;
    if (key == "masked")
      read_value(in, n.renumbered);
    else if (key == "transports_init")
      read_value(in, n.init_connections);
    else if (key == "transports_lazy")
      read_value(in, n.lazy_connections);
    else if (key == "lazy_span_ms")
      read_value(in, n.lazy_connection_span_ms);
    else
      return in.skip();
    marks.v1 = true;
  });
}

namespace {

// What /1 did not record, from what it did.
void upgrade_rank_v1(RankResult& r, const RankMarks& marks) {
  // The torch probe with lazy init measured "after init" before the communicator existed: that number is void.
  if (r.torch_init == "lazy") r.mem.used_after_init_bytes = -1;
  r.stopped_by_lab = r.exit == "stopped by the lab";
  r.exited_cleanly = r.exit == "exit 0";
  if (marks.torch_version) r.worker = Worker::torch;
}

}  // namespace

void upgrade_trial_v1(TrialResult& t, const std::vector<RankMarks>& marks) {
  for (size_t i = 0; i < t.ranks.size(); ++i) upgrade_rank_v1(t.ranks[i], marks[i]);
}

}  // namespace coldstart
