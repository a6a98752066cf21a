// NCCL's failures the casebook knows by their words: a rank's error (the worker's line, which ends with NCCL's last
// WARN) read for the messages NCCL prints when a known cause stops it, each mapped to what it is and what names it
// (docs/casebook.md's entry, the `doctor` finding or `doctor net` layer). bench adds it to a failed trial's message,
// so that "unhandled system error" reads as "/dev/shm is too small".
#pragma once
#include <string>
#include <string_view>

namespace coldstart::nccllog {

// The known cause `error` names, or "" where none of NCCL's messages the casebook knows is in it.
std::string known_failure(std::string_view error);

}  // namespace coldstart::nccllog
