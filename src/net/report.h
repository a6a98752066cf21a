// doctor net's report read back (schema coldstart.net/1, model/net.h) for --compare and report: one loader, its verdict
// decided again. Rendered by report/net_text.h (text, --compare) and report/net_html.h.
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

}  // namespace coldstart::net
