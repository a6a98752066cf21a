// What `coldstart nccllog` prints: a table per communicator (where inside init the time went, how many connections
// were made at init and how many lazily afterwards, and by which transport), warnings and problems; or JSON.
#pragma once
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "nccllog/log.h"

namespace coldstart::nccllog {

std::string render_table(const LogSummary& s);
nlohmann::json to_json(const LogSummary& s);
nlohmann::json to_json(const Comm& c);
// "P2P/CUMEM 24" style: transports and counts, most first.
std::string describe_transports(const std::map<std::string, int>& counts);

}  // namespace coldstart::nccllog
