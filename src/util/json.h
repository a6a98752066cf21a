// JSON text out. Strings we did not write (NCCL log lines, host names, error messages) may hold bytes that are not
// UTF-8; they are replaced (U+FFFD) rather than allowed to throw while a result is being saved.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

namespace coldstart {

inline std::string dump_json(const nlohmann::json& j, int indent = -1) {
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace coldstart
