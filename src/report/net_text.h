// doctor net's report as text, beside its HTML (report/net_html.h): one line per layer, then the verdict with its
// evidence and fix; the peer matrix; --compare's first difference.
#pragma once
#include <string>

#include "model/net.h"
#include "report/net_compare.h"

namespace coldstart::report {

std::string render_text(const net::NetReport& r);
std::string render_peers(const net::PeerMatrix& m);  // the matrix as text, then one line per failing pair
std::string render_difference(const Difference& d, const std::string& a_name, const std::string& b_name);

}  // namespace coldstart::report
