// Internal to model/result_*.cc: the plain structs' field lists, named once for the writers (result_write.cc) and
// the readers (result_read.cc).
#pragma once

// Every type is written by to_json (a tree, dumped once) and read by read_value straight from the text
// (util/json_reader.h): no tree on the way in. Plain structs name their fields once, for both. A reader keeps the
// struct's defaults for fields it does not find (older files, other writers) and skips fields it does not know.
//
// FIELDS(T, field...) is expanded for each struct, READER(T) after it for those read by their fields alone (Memory
// and RankNccl also take schema /1's names: model/result_v1.cc). The order is the order of definition.
#define COLDSTART_RESULT_FIELDS(FIELDS, READER)                                                                        \
  FIELDS(PhaseRecord, name, start_ms, dur_ms)                                                                          \
  READER(PhaseRecord)                                                                                                  \
  FIELDS(PhaseSpan, name, start_ns, end_ns)                                                                            \
  READER(PhaseSpan)                                                                                                    \
  FIELDS(Steady, bytes, iters, time_us, algbw_gbps, busbw_gbps)                                                        \
  READER(Steady)                                                                                                       \
  FIELDS(Memory, total_bytes, used_before_init_bytes, used_after_init_bytes, used_after_first_bytes, after_init_at)    \
  FIELDS(GpuInfo, index, name, bus_id, uuid, memory_bytes, sm)                                                         \
  READER(GpuInfo)                                                                                                      \
  FIELDS(NcclLibInfo, requested, path, version, sass, kernels)                                                         \
  READER(NcclLibInfo)                                                                                                  \
  FIELDS(RunContext, schema, run_id, coldstart_version, host, started_at, argv, driver_version, runtime_version, gpus, \
         nccl, inherited_env, seed, launcher)                                                                          \
  READER(RunContext)                                                                                                   \
  FIELDS(Stats, n, median, min, max, p90, mean)                                                                        \
  READER(Stats)                                                                                                        \
  FIELDS(ThreadState, pid, tid, name, state, wchan, syscall)                                                           \
  READER(ThreadState)                                                                                                  \
  FIELDS(PhaseStats, name, stats)                                                                                      \
  READER(PhaseStats)                                                                                                   \
  FIELDS(CallTally, count, ms)                                                                                         \
  READER(CallTally)                                                                                                    \
  FIELDS(ConfigSummary, config_id, label, status_counts, ready, phases, busbw_gbps, nccl_mem_init, nccl_mem_first,     \
         lazy_connections, renumbered_ranks, masked_ranks, first_collective_calls, phase_calls, store_ms)              \
  READER(ConfigSummary)                                                                                                \
  FIELDS(RankNccl, log, version, comms, cuda_dev, nvml_dev, renumbered, init_timings_ms, init_connections,             \
         lazy_connections, coll_channels, lazy_connection_span_ms, warnings, warning_count, problem_count)             \
  FIELDS(RankView, devices, device_index)                                                                              \
  READER(RankView)                                                                                                     \
  FIELDS(EnvAxis, key, values)                                                                                         \
  READER(EnvAxis)
