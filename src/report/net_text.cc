// doctor net's report as text: one line per layer, each target's layers inside out, the peer matrix, then the
// verdict with its evidence and fix; --compare's first difference. Renders what the report holds, never probes.
#include "report/net_text.h"

#include <algorithm>
#include <cerrno>
#include <set>

#include <fmt/format.h>

#include "util/strings.h"

namespace coldstart::report {
namespace {

std::string status_word(net::Status s) {
  switch (s) {
    case net::Status::ok: return "ok";
    case net::Status::warn: return "WARN";
    case net::Status::broken: return "BROKEN";
    case net::Status::not_checked: return "not checked";
    case net::Status::skipped: return "-";
  }
  return "?";
}

void render_checks(std::string& out, const std::vector<net::Check>& checks) {
  for (const net::Check& c : checks) {
    std::string layer(name(c.layer));
    layer.resize(10, ' ');
    std::string st = status_word(c.status);
    st.resize(12, ' ');
    out += "  " + layer + st + c.summary + "\n";
    if (c.status == net::Status::broken || c.status == net::Status::warn)
      for (const std::string& e : c.evidence) out += "                        " + e + "\n";
  }
}

// "eth0 10.0.0.1", without the parts that are empty.
std::string join_nonempty(const std::vector<std::string>& parts) {
  std::string out;
  for (const std::string& p : parts)
    if (!p.empty()) out += (out.empty() ? "" : " ") + p;
  return out;
}

std::string cell_text(const net::PeerCell& c) {
  if (c.ok) return "ok " + format_ms(c.ms);
  if (c.err == ETIMEDOUT) return "TIMEOUT";
  if (c.err) return std::to_string(c.err);
  return "FAIL";  // not probed: the pair's line says why
}

}  // namespace

std::string render_text(const net::NetReport& r) {
  std::string out =
      "doctor net on " + r.host + " (" + (r.facts.context.netns.empty() ? "?" : r.facts.context.netns) + ")\n";
  out += "this process\n";
  render_checks(out, r.process);
  for (const net::TargetReport& t : r.targets) {
    out += "\n" + t.target.text + "  (" + t.target.origin + "; " + t.path + ")\n";
    render_checks(out, t.layers);
  }
  if (!r.note.empty()) out += "\n" + r.note + "\n";
  if (r.peers) out += "\n" + render_peers(*r.peers);
  const net::Verdict& v = r.verdict;
  out += "\n";
  if (v.status == net::Status::ok) {
    out += "verdict: ok: " + v.check.summary + "\n";
    return out;
  }
  out += std::string("verdict: ") + (v.status == net::Status::broken ? "first broken layer: " : "first warning: ") +
         std::string(name(v.check.layer)) + (v.target.empty() ? " (this process)" : " (" + v.target + ")") + "\n";
  out += "  " + v.check.summary + "\n";
  for (size_t i = 0; i < v.check.evidence.size(); ++i)
    out += std::string(i == 0 ? "  evidence: " : "            ") + v.check.evidence[i] + "\n";
  if (!v.check.fix.empty()) out += "  fix: " + v.check.fix + "\n";
  return out;
}

namespace {

// The matrix: rows from, columns to, each column as wide as its widest cell.
std::string peer_matrix_text(const net::PeerMatrix& m) {
  std::string out;
  std::vector<std::vector<std::string>> text;
  std::vector<size_t> width(static_cast<size_t>(m.world) + 1, 0);
  std::vector<std::string> head = {"from\\to"};
  for (int to = 0; to < m.world; ++to) head.push_back(std::to_string(to));
  text.push_back(head);
  for (int from = 0; from < static_cast<int>(m.cells.size()); ++from) {
    const auto& row = m.cells[static_cast<size_t>(from)];
    if (row.empty()) continue;
    std::vector<std::string> line = {std::to_string(from)};
    for (int to = 0; to < m.world; ++to) line.push_back(to == from ? "-" : cell_text(row[static_cast<size_t>(to)]));
    text.push_back(line);
  }
  for (const auto& line : text)
    for (size_t i = 0; i < line.size() && i < width.size(); ++i) width[i] = std::max(width[i], line[i].size());
  for (const auto& line : text) {
    std::string l;
    for (size_t i = 0; i < line.size() && i < width.size(); ++i)
      l += i == 0 ? fmt::format("{:>{}}", line[i], width[i]) : fmt::format("  {:>{}}", line[i], width[i]);
    out += l + "\n";
  }
  return out;
}

// Each endpoint: where it listens and what NCCL picked there; then what Gloo would pick (files written before Gloo
// was recorded have none: the column is left out).
std::string peer_endpoints_text(const net::PeerMatrix& m) {
  std::string out;
  const bool gloo_known = std::any_of(m.endpoints.begin(), m.endpoints.end(), [](const net::PeerEndpoint& e) {
    return !e.gloo_interface.empty() || !e.gloo_address.empty() || !e.gloo_problem.empty();
  });
  out += gloo_known ? "endpoints (NCCL's interface and where it listens; Gloo's interface):\n" : "endpoints:\n";
  auto where_of = [](const net::PeerEndpoint& e) {
    return e.address.empty() ? std::string("-") : e.port ? host_port(e.address, e.port) : e.address;
  };
  size_t host_w = 0, if_w = 0, where_w = 0;
  for (const auto& e : m.endpoints) {
    host_w = std::max(host_w, e.host.size());
    if_w = std::max(if_w, std::max<size_t>(e.interface.size(), 1));
    where_w = std::max(where_w, where_of(e).size());
  }
  for (const auto& e : m.endpoints) {
    std::string l = fmt::format("  {:>3}  {:<{}}  {:<{}}  {}", e.rank, e.host, host_w,
                                e.interface.empty() ? "-" : e.interface, if_w, where_of(e));
    if (gloo_known) {
      l.resize(l.size() + where_w - where_of(e).size(), ' ');
      l += "  gloo " + (e.gloo_interface.empty() ? std::string("-") : e.gloo_interface);
      if (e.gloo_differs())
        l += " " + e.gloo_address + " (differs from NCCL's " + join_nonempty({e.interface, e.address}) +
             ": Gloo's path is not in the matrix)";
      if (!e.gloo_problem.empty()) l += " (" + e.gloo_problem + ")";
    }
    if (!e.problem.empty())
      l += "  ! " + e.problem;
    else if (!e.caveat.empty())
      l += "  (" + e.caveat + ")";
    out += l + "\n";
  }
  return out;
}

}  // namespace

std::string render_peers(const net::PeerMatrix& m) {
  std::set<std::string> hosts;
  for (const auto& e : m.endpoints) hosts.insert(e.host);
  int rows = 0;
  for (const auto& r : m.cells) rows += r.empty() ? 0 : 1;
  const int pairs = rows * std::max(m.world - 1, 0), failing = m.failing_pairs();
  std::string out =
      fmt::format("peers: {} {} on {} {}; {} of {} {} failing", m.world, m.world == 1 ? "rank" : "ranks", hosts.size(),
                  hosts.size() == 1 ? "host" : "hosts", failing, pairs, pairs == 1 ? "pair" : "pairs");
  if (rows < m.world) out += fmt::format(" (rank {}'s row only: rank 0 gathers the matrix)", m.rank);
  out += "\n";

  out += peer_matrix_text(m) + peer_endpoints_text(m);
  if (failing) {
    out += "failing pairs:\n";
    for (size_t from = 0; from < m.cells.size(); ++from)
      for (size_t to = 0; to < m.cells[from].size(); ++to) {
        const net::PeerCell& c = m.cells[from][to];
        if (from == to || c.ok) continue;
        out += fmt::format("  {} -> {}  {}: {}\n", from, to, name(c.layer), c.why);
      }
  }
  return out;
}

std::string render_difference(const Difference& d, const std::string& a_name, const std::string& b_name) {
  std::string out;
  if (!d.found) {
    out = "no layer differs between " + a_name + " and " + b_name + "\n";
  } else {
    out = "first difference, inside out: " + std::string(name(d.layer)) +
          (d.target.empty() ? " (the process)" : " (" + d.target + ")") + "\n";
    out += "  " + a_name + ": " + std::string(name(d.a.status)) + ": " + d.a.summary + "\n";
    out += "  " + b_name + ": " + std::string(name(d.b.status)) + ": " + d.b.summary + "\n";
    const net::Check& bad = d.b.status == net::Status::broken || d.b.status == net::Status::warn ? d.b : d.a;
    if (!bad.fix.empty()) out += "  fix: " + bad.fix + "\n";
  }
  for (const std::string& f : d.facts) out += "  differs: " + f + "\n";
  return out;
}

}  // namespace coldstart::report
