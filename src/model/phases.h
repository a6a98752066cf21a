// The phases a rank runs: one table (name, kind, colour, label) for the worker, the JSON, the terminal table, the
// HTML, Perfetto and compare. In the order a rank runs them.
#pragma once
#include <span>
#include <string_view>

namespace coldstart {

namespace phase {
inline constexpr std::string_view process_start = "process_start";  // process creation -> main()
inline constexpr std::string_view connect = "connect";              // hello to the coordinator
inline constexpr std::string_view import_torch = "import_torch";    // (torch probe) import torch
inline constexpr std::string_view cuda_context = "cuda_context";    // cudaSetDevice + cudaFree(0)
inline constexpr std::string_view nccl_load = "nccl_load";          // dlopen + symbol table + ncclGetVersion
inline constexpr std::string_view unique_id = "unique_id";          // ncclGetUniqueId (rank 0; torch: its TCP store)
inline constexpr std::string_view sync_uid = "sync_uid";            // waiting for rank 0's id (other ranks)
inline constexpr std::string_view sync_init = "sync_init";          // barrier before init
inline constexpr std::string_view comm_init = "comm_init";          // ncclCommInitRankConfig
inline constexpr std::string_view init_process_group = "init_process_group";  // (torch) lazy, or eager with device_id
inline constexpr std::string_view startup = "startup";            // the job's own start-up work (bench --startup)
inline constexpr std::string_view prewarm = "prewarm";            // a warm-up on a background thread (--fix prewarm)
inline constexpr std::string_view prewarm_init = "prewarm_init";  // (torch) its eager init_process_group
inline constexpr std::string_view prewarm_join = "prewarm_join";  // waiting for the warm-up before the first collective
inline constexpr std::string_view sync_first = "sync_first";      // barrier before the first collective
inline constexpr std::string_view barrier_enqueue = "barrier_enqueue";  // (torch) first barrier(async_op=True)
inline constexpr std::string_view barrier_wait = "barrier_wait";        // (torch) ... its wait() and a device sync
inline constexpr std::string_view first_enqueue = "first_enqueue";      // first collective: call -> host return
inline constexpr std::string_view first_wait = "first_wait";            // first collective: host return -> done
inline constexpr std::string_view second_enqueue = "second_enqueue";
inline constexpr std::string_view second_wait = "second_wait";
inline constexpr std::string_view groups_init = "groups_init";    // --groups: K communicators (split or fresh)
inline constexpr std::string_view groups_first = "groups_first";  // first collective on each of them
inline constexpr std::string_view coverage = "coverage";          // first call of other sizes and collectives
inline constexpr std::string_view steady = "steady";              // bandwidth loop at --size
inline constexpr std::string_view destroy = "destroy";            // ncclCommDestroy of every communicator
}  // namespace phase

enum class PhaseKind {
  setup,       // on the way to the first collective: the rank's own work
  wait,        // waiting for peers (the lab's barriers, rank 0's id): skew between ranks
  first,       // the first collective itself
  background,  // on another thread, beside the critical path (prewarm)
  after,       // after the first collective: second call, groups, bandwidth, teardown
};

struct PhaseInfo {
  std::string_view name;
  PhaseKind kind;
  const char* colour;  // Tableau 10 and its light variants: legible on light and dark backgrounds
  bool column;         // a column of the summary table (when some configuration has it)
  // Its end is the first collective done: the end of the critical path, `ready` (the first of these a rank has).
  bool completes_first = false;
};

inline constexpr PhaseInfo kPhaseTable[] = {
    {phase::process_start, PhaseKind::setup, "#bab0ac", false},
    {phase::connect, PhaseKind::setup, "#bab0ac", false},
    {phase::import_torch, PhaseKind::setup, "#d37295", true},
    {phase::cuda_context, PhaseKind::setup, "#4e79a7", true},
    {phase::nccl_load, PhaseKind::setup, "#a0cbe8", false},
    {phase::unique_id, PhaseKind::setup, "#d4a6c8", false},
    {phase::sync_uid, PhaseKind::wait, "#9d9d9d", false},
    {phase::sync_init, PhaseKind::wait, "#9d9d9d", false},
    {phase::comm_init, PhaseKind::setup, "#f28e2b", true},
    {phase::init_process_group, PhaseKind::setup, "#f28e2b", true},
    {phase::startup, PhaseKind::setup, "#8cd17d", true},
    {phase::prewarm, PhaseKind::background, "#ffbe7d", true},
    {phase::prewarm_init, PhaseKind::background, "#f1ce63", false},
    {phase::prewarm_join, PhaseKind::wait, "#ff9d9a", true},
    {phase::sync_first, PhaseKind::wait, "#9d9d9d", false},
    {phase::barrier_enqueue, PhaseKind::first, "#ff9d9a", true},
    {phase::barrier_wait, PhaseKind::first, "#86bcb6", true, true},
    {phase::first_enqueue, PhaseKind::first, "#e15759", true},
    {phase::first_wait, PhaseKind::first, "#76b7b2", true, true},
    {phase::second_enqueue, PhaseKind::after, "#59a14f", true},
    {phase::second_wait, PhaseKind::after, "#8cd17d", false},
    {phase::groups_init, PhaseKind::after, "#edc948", true},
    {phase::groups_first, PhaseKind::after, "#b07aa1", true},
    {phase::coverage, PhaseKind::after, "#ff9da7", false},
    {phase::steady, PhaseKind::after, "#9c755f", false},
    {phase::destroy, PhaseKind::after, "#79706e", false},
};

// The phase's entry, or nullptr for names not in the table (NCCL's init.* parts, a newer writer's phases).
const PhaseInfo* phase_info(std::string_view name);
// Its position in the table (unknown names last), for ordering.
int phase_order(std::string_view name);

}  // namespace coldstart
