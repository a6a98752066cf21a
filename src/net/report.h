// doctor net's report as JSON (schema coldstart.net/1: the facts, the process's layers, each target's layers, the peer
// matrix when --peers ran, the verdict), read back for --compare and the HTML report, and as text: one line per layer,
// then the verdict with its evidence and fix. --compare names the first layer, inside out, where two runs differ
// (inside a sandbox and outside it, say).
#pragma once
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "net/diagnose.h"

namespace coldstart::net {

inline constexpr const char* kNetSchema = "coldstart.net/1";
inline constexpr const char* kCompareSchema = "coldstart.net.compare/1";

nlohmann::json to_json(const Check& c);
nlohmann::json to_json(const NetReport& r);
// Throws InputError naming the field's path when the JSON is not a coldstart.net/1 report.
NetReport net_report_from_json(const nlohmann::json& j);

std::string render_text(const NetReport& r);

struct Difference {
  bool found = false;
  Layer layer = Layer::context;
  std::string target;  // "" for the process's own layers
  Check a, b;
  std::vector<std::string> facts;  // facts that differ beside the statuses (namespaces, interfaces, proxy variables)
};
Difference compare_reports(const NetReport& a, const NetReport& b);
nlohmann::json to_json(const Difference& d, const std::string& a_name, const std::string& b_name);
std::string render_difference(const Difference& d, const std::string& a_name, const std::string& b_name);

}  // namespace coldstart::net
