// doctor net's report as one self-contained HTML page (coldstart report NET.json --html F): the verdict with its
// evidence and fix, the process's layers, each target's layers inside out, and the peer matrix when --peers ran.
#pragma once
#include <string>
#include <vector>

#include "model/net.h"

namespace coldstart::report {

std::string render_net_html(const std::vector<const net::NetReport*>& reports, const std::vector<std::string>& names);

}  // namespace coldstart::report
