// NCCL's own debug log in every trial: which variables make each rank write one, at what detail.
//   off    nothing is set
//   light  NCCL_DEBUG=INFO, NCCL_DEBUG_SUBSYS=INIT,BOOTSTRAP,ENV,COLL (init, connections, and the collective lines
//          that tell which communicator lazy connections belong to)
//   full   NCCL_DEBUG=INFO, NCCL_DEBUG_SUBSYS=ALL
// Both on-levels ask for microsecond timestamps on INFO lines (honoured by NCCL 2.23 and later). With a file name
// (NCCL_DEBUG_FILE, %h and %p expanded by NCCL) each process writes its own file; without one NCCL writes to the
// process's standard output, which opens no file in the measured process: bench's ranks log so, into their output
// file, because one more fd can move a doubling of the kernel's fd table into the first collective (docs/nccllog.md).
// A variable the user set (in the lab's environment or in --env) is never overridden.
#pragma once
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "model/vocab.h"

namespace coldstart::nccllog {

// file: NCCL_DEBUG_FILE's value, or "" for the process's standard output.
std::vector<std::pair<std::string, std::string>> nccl_log_env(NcclLog level, const std::string& file,
                                                              const std::function<bool(const std::string&)>& user_set);

}  // namespace coldstart::nccllog
