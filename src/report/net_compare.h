// doctor net --compare: the first layer, inside out, where two runs differ (inside a sandbox and outside it, say),
// with the facts that differ beside the statuses, and its JSON (schema coldstart.net.compare/1). A layer that fails
// (broken, warn) on one side comes before a mere difference of ok against skipped or not checked.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "model/net.h"

namespace coldstart::report {

struct Difference {
  bool found = false;
  net::Layer layer = net::Layer::context;
  std::string target;  // "" for the process's own layers
  net::Check a, b;
  std::vector<std::string> facts;  // facts that differ beside the statuses (namespaces, interfaces, proxy variables)
};
Difference compare_reports(const net::NetReport& a, const net::NetReport& b);
nlohmann::json to_json(const Difference& d, const std::string& a_name, const std::string& b_name);

}  // namespace coldstart::report
