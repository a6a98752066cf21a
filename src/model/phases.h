// Phase names: the same in the worker, the JSON, the table and the docs. In the order a rank runs them.
#pragma once
#include <string_view>

namespace coldstart::phase {

inline constexpr std::string_view process_start = "process_start";  // process creation -> main()
inline constexpr std::string_view connect = "connect";              // hello to the coordinator
inline constexpr std::string_view cuda_context = "cuda_context";    // cudaSetDevice + cudaFree(0)
inline constexpr std::string_view nccl_load = "nccl_load";          // dlopen + symbol table + ncclGetVersion
inline constexpr std::string_view unique_id = "unique_id";          // ncclGetUniqueId (rank 0)
inline constexpr std::string_view sync_uid = "sync_uid";            // waiting for rank 0's id (other ranks)
inline constexpr std::string_view sync_init = "sync_init";          // barrier before init
inline constexpr std::string_view comm_init = "comm_init";          // ncclCommInitRankConfig
inline constexpr std::string_view sync_first = "sync_first";        // barrier before the first collective
inline constexpr std::string_view first_enqueue = "first_enqueue";  // first collective: call -> host return
inline constexpr std::string_view first_wait = "first_wait";        // first collective: host return -> done
inline constexpr std::string_view second_enqueue = "second_enqueue";
inline constexpr std::string_view second_wait = "second_wait";
inline constexpr std::string_view groups_init = "groups_init";    // --groups: K communicators (split or fresh)
inline constexpr std::string_view groups_first = "groups_first";  // first collective on each of them
inline constexpr std::string_view steady = "steady";              // bandwidth loop at --size
inline constexpr std::string_view destroy = "destroy";            // ncclCommDestroy of every communicator

// The torch probe (bench --worker torch) names its own steps; the others above keep their meaning.
inline constexpr std::string_view import_torch = "import_torch";              // import torch
inline constexpr std::string_view init_process_group = "init_process_group";  // lazy, or eager with device_id
inline constexpr std::string_view barrier_enqueue = "barrier_enqueue";  // first barrier(async_op=True): host return
inline constexpr std::string_view barrier_wait = "barrier_wait";        // ... its wait() and a device sync

}  // namespace coldstart::phase
