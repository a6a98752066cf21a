#include "net/report.h"

#include <nlohmann/json.hpp>

#include "net/json_in.h"
#include "util/error.h"
#include "util/strings.h"

namespace coldstart::net {
namespace {

using nlohmann::json;

Check check_from_json(const JsonIn& j) {
  Check c;
  const JsonIn layer = j.at("layer"), status = j.at("status");
  auto l = parse_layer(layer.str());
  if (!l) layer.fail("unknown layer '" + layer.str() + "'");
  auto st = parse_status(status.str());
  if (!st) status.fail("unknown status '" + status.str() + "'");
  c.layer = *l;
  c.status = *st;
  c.summary = j.at("summary").str();
  j.get("fix", c.fix);
  j.get("evidence", c.evidence);
  return c;
}

std::vector<Check> checks_from_json(const JsonIn& j) {
  std::vector<Check> out;
  for (const JsonIn& c : j.array()) out.push_back(check_from_json(c));
  return out;
}

json choice_json(const IfChoice& c) {
  return {{"tool", c.tool},       {"variable", c.variable}, {"interfaces", c.interfaces},
          {"address", c.address}, {"rule", c.rule},         {"problem", c.problem}};
}

IfChoice choice_from_json(const JsonIn& j) {
  IfChoice c;
  j.object();
  j.get("tool", c.tool);
  j.get("variable", c.variable);
  j.get("address", c.address);
  j.get("rule", c.rule);
  j.get("problem", c.problem);
  j.get("interfaces", c.interfaces);
  return c;
}

std::string status_word(Status s) {
  switch (s) {
    case Status::ok: return "ok";
    case Status::warn: return "WARN";
    case Status::broken: return "BROKEN";
    case Status::not_checked: return "not checked";
    case Status::skipped: return "-";
  }
  return "?";
}

void render_checks(std::string& out, const std::vector<Check>& checks) {
  for (const Check& c : checks) {
    std::string layer(name(c.layer));
    layer.resize(10, ' ');
    std::string st = status_word(c.status);
    st.resize(12, ' ');
    out += "  " + layer + st + c.summary + "\n";
    if (c.status == Status::broken || c.status == Status::warn)
      for (const std::string& e : c.evidence) out += "                        " + e + "\n";
  }
}

const Check* find_layer(const std::vector<Check>& checks, Layer l) {
  for (const Check& c : checks)
    if (c.layer == l) return &c;
  return nullptr;
}

}  // namespace

json to_json(const Check& c) {
  return {{"layer", name(c.layer)},
          {"status", name(c.status)},
          {"summary", c.summary},
          {"evidence", c.evidence},
          {"fix", c.fix}};
}

json to_json(const NetReport& r) {
  json j;
  j["schema"] = kNetSchema;
  j["tool"] = {{"name", "coldstart"}, {"version", COLDSTART_VERSION}};
  j["host"] = r.host;
  j["facts"] = to_json(r.facts);
  json proxies = json::array();
  for (const ProxyVar& v : r.proxy_env) proxies.push_back({{"name", v.name}, {"value", without_password(v.value)}});
  j["proxy_variables"] = proxies;
  j["interface_choice"] = {{"nccl", choice_json(r.nccl)}, {"gloo", choice_json(r.gloo)}};
  j["process"] = json::array();
  for (const Check& c : r.process) j["process"].push_back(to_json(c));
  j["targets"] = json::array();
  for (const TargetReport& t : r.targets) {
    json layers = json::array();
    for (const Check& c : t.layers) layers.push_back(to_json(c));
    const Check* broken = t.first(Status::broken);
    j["targets"].push_back({{"target", t.target.text},
                            {"origin", t.target.origin},
                            {"scheme", t.target.scheme},
                            {"host", t.target.host},
                            {"port", t.target.port},
                            {"path", t.path},
                            {"layers", layers},
                            {"first_broken", broken ? json(name(broken->layer)) : json(nullptr)}});
  }
  if (r.peers) j["peers"] = to_json(*r.peers);
  j["verdict"] = {{"status", name(r.verdict.status)},     {"target", r.verdict.target},
                  {"layer", name(r.verdict.check.layer)}, {"summary", r.verdict.check.summary},
                  {"evidence", r.verdict.check.evidence}, {"fix", r.verdict.check.fix}};
  if (r.verdict.status == Status::ok) j["verdict"]["layer"] = nullptr;
  if (!r.note.empty()) j["note"] = r.note;
  return j;
}

NetReport net_report_from_json(const json& j) {
  const JsonIn in(j, "doctor net report");
  const std::string schema = in.at("schema").str();
  if (schema != kNetSchema)
    in.at("schema").fail("'" + schema + "', not " + kNetSchema + " (give what doctor net --json wrote)");
  NetReport r;
  in.get("host", r.host);
  if (auto f = in.find("facts")) r.facts = host_facts_from_json(f->raw());
  if (auto vars = in.find("proxy_variables"))
    for (const JsonIn& v : vars->array()) r.proxy_env.push_back({v.at("name").str(), v.at("value").str()});
  if (auto c = in.find("interface_choice")) {
    if (auto n = c->find("nccl")) r.nccl = choice_from_json(*n);
    if (auto g = c->find("gloo")) r.gloo = choice_from_json(*g);
  }
  r.process = checks_from_json(in.at("process"));
  for (const JsonIn& t : in.at("targets").array()) {
    TargetReport tr;
    tr.target.text = t.at("target").str();
    t.get("origin", tr.target.origin);
    t.get("scheme", tr.target.scheme);
    t.get("host", tr.target.host);
    if (auto port = t.find("port")) tr.target.port = static_cast<uint16_t>(port->integer(0, 65535));
    t.get("path", tr.path);
    tr.layers = checks_from_json(t.at("layers"));
    r.targets.push_back(std::move(tr));
  }
  if (auto p = in.find("peers")) r.peers = peer_matrix_from_json(p->raw());
  in.get("note", r.note);
  r.verdict = decide_verdict(r);
  return r;
}

std::string render_text(const NetReport& r) {
  std::string out =
      "doctor net on " + r.host + " (" + (r.facts.context.netns.empty() ? "?" : r.facts.context.netns) + ")\n";
  out += "this process\n";
  render_checks(out, r.process);
  for (const TargetReport& t : r.targets) {
    out += "\n" + t.target.text + "  (" + t.target.origin + "; " + t.path + ")\n";
    render_checks(out, t.layers);
  }
  if (!r.note.empty()) out += "\n" + r.note + "\n";
  if (r.peers) out += "\n" + render_peers(*r.peers);
  const Verdict& v = r.verdict;
  out += "\n";
  if (v.status == Status::ok) {
    out += "verdict: ok: " + v.check.summary + "\n";
    return out;
  }
  out += std::string("verdict: ") + (v.status == Status::broken ? "first broken layer: " : "first warning: ") +
         std::string(name(v.check.layer)) + (v.target.empty() ? " (this process)" : " (" + v.target + ")") + "\n";
  out += "  " + v.check.summary + "\n";
  for (size_t i = 0; i < v.check.evidence.size(); ++i)
    out += std::string(i == 0 ? "  evidence: " : "            ") + v.check.evidence[i] + "\n";
  if (!v.check.fix.empty()) out += "  fix: " + v.check.fix + "\n";
  return out;
}

Difference compare_reports(const NetReport& a, const NetReport& b) {
  Difference d;
  if (a.facts.context.netns != b.facts.context.netns)
    d.facts.push_back("network namespace: " + a.facts.context.netns + " / " + b.facts.context.netns);
  auto ifs = [](const NetReport& r) {
    std::vector<std::string> names;
    for (const Interface& i : r.facts.context.interfaces) names.push_back(i.name + (i.up ? "" : " (down)"));
    return join(names, ", ");
  };
  if (ifs(a) != ifs(b)) d.facts.push_back("interfaces: " + ifs(a) + " / " + ifs(b));
  auto vars = [](const NetReport& r) {
    std::vector<std::string> v;
    for (const ProxyVar& p : r.proxy_env) v.push_back(p.name + "=" + without_password(p.value));
    return v.empty() ? std::string("none") : join(v, " ");
  };
  if (vars(a) != vars(b)) d.facts.push_back("proxy variables: " + vars(a) + " / " + vars(b));
  for (Layer l : kLayers) {
    const Check* ca = find_layer(a.process, l);
    const Check* cb = find_layer(b.process, l);
    if (ca && cb && ca->status != cb->status) {
      d.found = true;
      d.layer = l;
      d.a = *ca;
      d.b = *cb;
      return d;
    }
    for (const TargetReport& ta : a.targets)
      for (const TargetReport& tb : b.targets) {
        if (ta.target.text != tb.target.text) continue;
        const Check* xa = find_layer(ta.layers, l);
        const Check* xb = find_layer(tb.layers, l);
        if (xa && xb && xa->status != xb->status) {
          d.found = true;
          d.layer = l;
          d.target = ta.target.text;
          d.a = *xa;
          d.b = *xb;
          return d;
        }
      }
  }
  return d;
}

json to_json(const Difference& d, const std::string& a_name, const std::string& b_name) {
  json j = {{"schema", kCompareSchema}, {"a", a_name}, {"b", b_name}, {"facts", d.facts}};
  if (!d.found) {
    j["layer"] = nullptr;
    return j;
  }
  j["layer"] = name(d.layer);
  j["target"] = d.target;
  j["in_a"] = to_json(d.a);
  j["in_b"] = to_json(d.b);
  return j;
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
    const Check& bad = d.b.status == Status::broken || d.b.status == Status::warn ? d.b : d.a;
    if (!bad.fix.empty()) out += "  fix: " + bad.fix + "\n";
  }
  for (const std::string& f : d.facts) out += "  differs: " + f + "\n";
  return out;
}

}  // namespace coldstart::net
