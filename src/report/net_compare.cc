// doctor net --compare: the first layer, inside out, where two runs differ, and the facts that differ beside it.
#include "report/net_compare.h"

#include <nlohmann/json.hpp>

#include "util/strings.h"

namespace coldstart::net {
namespace {

using nlohmann::json;

const Check* find_layer(const std::vector<Check>& checks, Layer l) {
  for (const Check& c : checks)
    if (c.layer == l) return &c;
  return nullptr;
}

}  // namespace

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

}  // namespace coldstart::net
