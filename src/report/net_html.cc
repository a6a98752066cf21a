#include "report/net_html.h"

#include "report/html.h"
#include "util/strings.h"

namespace coldstart::report {
namespace {

const char* status_class(net::Status s) {
  switch (s) {
    case net::Status::ok: return "ok";
    case net::Status::broken: return "broken";
    case net::Status::warn: return "caution";
    default: return "meta";
  }
}

std::string list(const std::vector<std::string>& lines) {
  if (lines.empty()) return "";
  std::string h = "<ul>";
  for (const std::string& l : lines) h += "<li><code>" + html_escape(l) + "</code></li>";
  return h + "</ul>";
}

std::string layers_table(const std::vector<net::Check>& checks) {
  std::string h = "<table class=\"left\"><tr><th>layer</th><th>status</th><th>what was found</th></tr>";
  for (const net::Check& c : checks) {
    h += "<tr><td>" + std::string(net::name(c.layer)) + "</td><td class=\"" + status_class(c.status) + "\">" +
         std::string(net::name(c.status)) + "</td><td class=\"summary\">" + html_escape(c.summary);
    if (c.status == net::Status::broken || c.status == net::Status::warn) h += list(c.evidence);
    h += "</td></tr>";
  }
  return h + "</table>";
}

std::string peers_table(const net::PeerMatrix& m) {
  std::string h = "<div class=\"scroll\"><table><tr><th>from \\ to</th>";
  for (int to = 0; to < m.world; ++to) h += "<th>" + std::to_string(to) + "</th>";
  h += "</tr>";
  for (int from = 0; from < m.world && from < static_cast<int>(m.cells.size()); ++from) {
    h += "<tr><td>" + std::to_string(from) + "</td>";
    for (int to = 0; to < m.world && to < static_cast<int>(m.cells[from].size()); ++to) {
      const net::PeerCell& c = m.cells[from][to];
      if (from == to) {
        h += "<td class=\"meta\">·</td>";
      } else if (c.ok) {
        h += "<td class=\"ok\">" + format_ms(c.ms) + " ms</td>";
      } else {
        h += "<td class=\"broken cell-bad\" title=\"" + html_escape(c.why) + "\">" +
             html_escape(c.err ? net::errno_name(c.err) : std::string("not probed")) + "</td>";
      }
    }
    h += "</tr>";
  }
  h += "</table></div><table class=\"left\"><tr><th>rank</th><th>host</th><th>interface</th><th>address</th>"
       "<th>Gloo's interface</th><th>problem</th></tr>";
  for (const net::PeerEndpoint& e : m.endpoints) {
    // Gloo's choice where it was recorded; marked where it is not the interface the matrix probed.
    std::string gloo = e.gloo_interface.empty() ? "" : e.gloo_interface + " " + e.gloo_address;
    if (!e.gloo_problem.empty()) gloo += (gloo.empty() ? "" : ": ") + e.gloo_problem;
    h += "<tr><td>" + std::to_string(e.rank) + "</td><td>" + html_escape(e.host) + "</td><td>" +
         html_escape(e.interface) + "</td><td>" + html_escape(host_port(e.address, e.port)) + "</td><td" +
         (e.gloo_differs() ? " class=\"warn\" title=\"not the interface the matrix probed\"" : "") + ">" +
         html_escape(gloo) + "</td><td class=\"summary\">" + html_escape(e.problem) + "</td></tr>";
  }
  return h + "</table>";
}

std::string verdict_card(const net::NetReport& r) {
  const net::Verdict& v = r.verdict;
  std::string h = "<div class=\"card\">";
  if (v.status == net::Status::ok) return h + "<b class=\"ok\">ok</b>: " + html_escape(v.check.summary) + "</div>";
  h += std::string("<b class=\"") + (v.status == net::Status::broken ? "warn" : "") + "\">" +
       (v.status == net::Status::broken ? "first broken layer: " : "first warning: ") +
       std::string(net::name(v.check.layer)) + "</b>" +
       (v.target.empty() ? " (this process)" : " (" + html_escape(v.target) + ")") + "<p>" +
       html_escape(v.check.summary) + "</p>" + list(v.check.evidence);
  if (!v.check.fix.empty()) h += "<p><b>fix:</b> " + html_escape(v.check.fix) + "</p>";
  return h + "</div>";
}

}  // namespace

std::string render_net_html(const std::vector<const net::NetReport*>& reports, const std::vector<std::string>& names) {
  std::string h = page_head("coldstart doctor net");
  for (size_t i = 0; i < reports.size(); ++i) {
    const net::NetReport& r = *reports[i];
    if (reports.size() > 1)
      h += "<h2>" + html_escape(i < names.size() ? names[i] : "run " + std::to_string(i + 1)) + "</h2>";
    h += "<p class=\"meta\">" + html_escape(r.host) + " · " + html_escape(r.facts.context.netns) + "</p>";
    h += "<h2>Verdict</h2>" + verdict_card(r);
    h += "<h2>This process</h2>" + layers_table(r.process);
    for (const net::TargetReport& t : r.targets)
      h += "<h2>" + html_escape(t.target.text) + "</h2><p class=\"meta\">" + html_escape(t.target.origin) + " · " +
           html_escape(t.path) + "</p>" + layers_table(t.layers);
    if (!r.note.empty()) h += "<p class=\"meta\">" + html_escape(r.note) + "</p>";
    if (r.peers) h += "<h2>Peers: every rank against every other</h2>" + peers_table(*r.peers);
  }
  h += "<p class=\"meta\">Made by coldstart " COLDSTART_VERSION
       ". Layer names as in doctor net --json.</p></body></html>\n";
  return h;
}

}  // namespace coldstart::report
