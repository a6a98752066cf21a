// The environment that makes a process (and its children) record start-up with libcoldstart_cupti.so, NCCL's log and
// named threads. Used by `coldstart trace` for any command and by `bench --trace` for its ranks.
#pragma once
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "nccllog/env.h"

namespace coldstart::trace {

// libcoldstart_cupti.so: $COLDSTART_CUPTI_INJECTION, else beside the coldstart binary. Throws RuntimeError when absent.
std::string injection_library();

// Variables to set; `nccl_log_file` may use NCCL's %h and %p. Variables the user set are left alone (user_set).
std::vector<std::pair<std::string, std::string>> trace_env(const std::string& out_dir, const std::string& nccl_log_file,
                                                           NcclLog level,
                                                           const std::function<bool(const std::string&)>& user_set);

}  // namespace coldstart::trace
