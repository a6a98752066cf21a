// doctor net's report as JSON (schema coldstart.net/1: the facts, the process's layers, each target's layers, the peer
// matrix when --peers ran, the verdict), read back for --compare and the HTML report, and as text: one line per layer,
// then the verdict with its evidence and fix. --compare names the first layer, inside out, where two runs differ
// (inside a sandbox and outside it, say).
#pragma once
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

#include "net/diagnose.h"

namespace coldstart::net {

// The one reader of a doctor net report, for every command that opens one (doctor net --compare, report): a file
// ("-": standard input) read as util/fs.h's read_input_limited reads it, at most kMaxNetReportBytes, a FIFO or a
// device refused at once; its data read by model/net.h's reader, its verdict decided again. Every fault is one
// InputError naming the file, then the field's path ("a.json: doctor net report: targets[0].layers: missing").
NetReport load_net_report(const std::string& path);
// The same from text already read (report reads a file once to tell a bench result from a doctor net report), held
// to the same bound; `source` names it first ("" for none).
NetReport net_report_from_text(std::string_view text, const std::string& source = "");
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
