// Clocks. Phases are timed on CLOCK_MONOTONIC (one clock for every process of a host); each process also records one
// CLOCK_REALTIME anchor so that hosts whose monotonic clocks differ can be aligned.
#pragma once
#include <cstdint>
#include <string>

namespace coldstart {

int64_t mono_ns();
int64_t real_ns();
inline double ns_to_ms(int64_t ns) { return static_cast<double>(ns) / 1e6; }

// The current time through strftime, in UTC or local time ("coldstart-out/%Y%m%d-%H%M%S").
std::string format_now(const char* strftime_format, bool utc);

// When this process was created, on CLOCK_MONOTONIC: the lab's own reading just before it forked the process
// (kSpawnEnv, nanoseconds), where that agrees with /proc/self/stat within two clock ticks; else /proc's (clock-tick
// resolution, usually 10 ms: a process that an outside launcher started, or a variable inherited from an ancestor).
// Returns 0 when neither can be read. *source, when given, says which: "lab", "proc", or "" for neither.
int64_t process_start_mono_ns(std::string* source = nullptr);
inline constexpr const char* kSpawnEnv = "COLDSTART_SPAWN_MONO_NS";

}  // namespace coldstart
