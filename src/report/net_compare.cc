// doctor net --compare: the first layer, inside out, where one run fails and the other does not (else the first where
// they differ at all), and the facts that differ beside it.
#include "report/net_compare.h"

#include <nlohmann/json.hpp>

#include "util/strings.h"

namespace coldstart::report {
namespace {

using nlohmann::json;

const net::Check* find_layer(const std::vector<net::Check>& checks, net::Layer l) {
  for (const net::Check& c : checks)
    if (c.layer == l) return &c;
  return nullptr;
}

bool fails(net::Status s) { return s == net::Status::broken || s == net::Status::warn; }

// Whether a pair of statuses is a difference worth naming: with `failing`, only where one side fails (broken or warn)
// and the other does not fail the same way; without, any difference (ok against skipped, say).
bool differs(const net::Check& a, const net::Check& b, bool failing) {
  return a.status != b.status && (!failing || fails(a.status) || fails(b.status));
}

// The first layer, inside out, whose checks differ as `failing` says: the process's, then each target's.
Difference first_difference(const net::NetReport& a, const net::NetReport& b, bool failing) {
  Difference d;
  for (net::Layer l : net::kLayers) {
    const net::Check* ca = find_layer(a.process, l);
    const net::Check* cb = find_layer(b.process, l);
    if (ca && cb && differs(*ca, *cb, failing)) return Difference{true, l, "", *ca, *cb, {}};
    for (const net::TargetReport& ta : a.targets)
      for (const net::TargetReport& tb : b.targets) {
        if (ta.target.text != tb.target.text) continue;
        const net::Check* xa = find_layer(ta.layers, l);
        const net::Check* xb = find_layer(tb.layers, l);
        if (xa && xb && differs(*xa, *xb, failing)) return Difference{true, l, ta.target.text, *xa, *xb, {}};
      }
  }
  return d;
}

}  // namespace

Difference compare_reports(const net::NetReport& a, const net::NetReport& b) {
  Difference d;
  if (a.facts.context.netns != b.facts.context.netns)
    d.facts.push_back("network namespace: " + a.facts.context.netns + " / " + b.facts.context.netns);
  auto ifs = [](const net::NetReport& r) {
    std::vector<std::string> names;
    for (const net::Interface& i : r.facts.context.interfaces) names.push_back(i.name + (i.up ? "" : " (down)"));
    return join(names, ", ");
  };
  if (ifs(a) != ifs(b)) d.facts.push_back("interfaces: " + ifs(a) + " / " + ifs(b));
  auto vars = [](const net::NetReport& r) {
    std::vector<std::string> v;
    for (const net::ProxyVar& p : r.proxy_env) v.push_back(p.name + "=" + net::without_password(p.value));
    return v.empty() ? std::string("none") : join(v, " ");
  };
  if (vars(a) != vars(b)) d.facts.push_back("proxy variables: " + vars(a) + " / " + vars(b));
  // A layer that fails on one side is the headline, before one that one side skipped and the other found ok (a path
  // through an on-link proxy skips forward; a direct one checks it): that difference only where nothing fails.
  Difference found = first_difference(a, b, true);
  if (!found.found) found = first_difference(a, b, false);
  found.facts = std::move(d.facts);
  return found;
}

json to_json(const Difference& d, const std::string& a_name, const std::string& b_name) {
  json j = {{"schema", net::kCompareSchema}, {"a", a_name}, {"b", b_name}, {"facts", d.facts}};
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

}  // namespace coldstart::report
