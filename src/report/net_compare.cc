// doctor net --compare: the first layer, inside out, where two runs differ, and the facts that differ beside it.
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
  for (net::Layer l : net::kLayers) {
    const net::Check* ca = find_layer(a.process, l);
    const net::Check* cb = find_layer(b.process, l);
    if (ca && cb && ca->status != cb->status) {
      d.found = true;
      d.layer = l;
      d.a = *ca;
      d.b = *cb;
      return d;
    }
    for (const net::TargetReport& ta : a.targets)
      for (const net::TargetReport& tb : b.targets) {
        if (ta.target.text != tb.target.text) continue;
        const net::Check* xa = find_layer(ta.layers, l);
        const net::Check* xb = find_layer(tb.layers, l);
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
