#include "net/report.h"

#include <sys/stat.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "util/error.h"
#include "util/fs.h"
#include "util/json.h"
#include "util/strings.h"

namespace coldstart::net {
namespace {

using nlohmann::json;

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

namespace {
constexpr const char* kGiveReport = "give a file doctor net --json wrote";
}  // namespace

NetReport load_net_report(const std::string& path) {
  const std::string source = path == "-" ? "- (standard input)" : shown(path);
  struct stat st {};
  if (path != "-" && ::stat(path.c_str(), &st) != 0) throw InputError(source + ": no such file; " + kGiveReport);
  std::string text;
  try {
    text = read_input_limited(path, kMaxNetReportBytes, kGiveReport);
  } catch (const RuntimeError& e) {
    throw InputError(std::string(e.what()) + "; " + kGiveReport);
  }
  return net_report_from_text(text, source);
}

NetReport net_report_from_text(std::string_view text, const std::string& source) {
  const std::string what = source.empty() ? "doctor net report" : source + ": doctor net report";
  if (text.size() > kMaxNetReportBytes)
    throw InputError(fmt::format("{}: larger than the {} MiB coldstart reads from one file; {}",
                                 source.empty() ? "doctor net report" : source, kMaxNetReportBytes >> 20, kGiveReport));
  NetReport r = net_report_data_from_text(text, what);
  r.verdict = decide_verdict(r);
  return r;
}

NetReport net_report_from_json(const json& j) { return net_report_from_text(dump_json(j)); }

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
