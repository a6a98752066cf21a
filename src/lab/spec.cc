#include "lab/spec.h"

#include <cctype>

#include "util/error.h"
#include "util/strings.h"

namespace coldstart {

namespace {
constexpr Collective kCollectives[] = {Collective::all_reduce, Collective::all_gather, Collective::reduce_scatter,
                                       Collective::broadcast,  Collective::sendrecv,   Collective::all_to_all};
}

const char* collective_name(Collective c) {
  switch (c) {
    case Collective::all_reduce: return "all_reduce";
    case Collective::all_gather: return "all_gather";
    case Collective::reduce_scatter: return "reduce_scatter";
    case Collective::broadcast: return "broadcast";
    case Collective::sendrecv: return "sendrecv";
    case Collective::all_to_all: return "all_to_all";
  }
  return "?";
}

Collective parse_collective(const std::string& s) {
  for (Collective c : kCollectives)
    if (s == collective_name(c)) return c;
  throw InputError("--collective: unknown collective '" + s +
                   "'; use all_reduce, all_gather, reduce_scatter, broadcast, sendrecv or all_to_all");
}

std::string Groups::name() const {
  switch (kind) {
    case Kind::world: return "world";
    case Kind::split: return "split:" + std::to_string(count);
    case Kind::fresh: return "fresh:" + std::to_string(count);
  }
  return "?";
}

Groups parse_groups(const std::string& s) {
  if (s == "world") return {};
  auto colon = s.find(':');
  std::string kind = s.substr(0, colon);
  if (colon != std::string::npos && (kind == "split" || kind == "fresh")) {
    auto k = parse_int(std::string_view(s).substr(colon + 1));
    if (k && *k >= 1 && *k <= 64)
      return {kind == "split" ? Groups::Kind::split : Groups::Kind::fresh, static_cast<int>(*k)};
  }
  throw InputError("--groups: '" + s + "' is not a group plan; use world, split:K or fresh:K with 1 <= K <= 64");
}

EnvAxis parse_env_axis(const std::string& text) {
  auto eq = text.find('=');
  std::string key = text.substr(0, eq);
  bool key_ok = eq != std::string::npos;
  for (const auto& k : split(key, '+')) {
    bool ok = !k.empty() && !std::isdigit(static_cast<unsigned char>(k[0]));
    for (char c : k) ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '_');
    key_ok = key_ok && ok;
    if (ok && k == "CUDA_VISIBLE_DEVICES")
      throw InputError(
          "--env CUDA_VISIBLE_DEVICES: the launch model sets it; use --modes, --visible or --devices instead");
  }
  if (!key_ok)
    throw InputError("--env '" + text +
                     "': expected KEY=v1,v2,... (or KEY1+KEY2=v1,v2 for variables that take the "
                     "same value) with KEY a variable name; an empty value means unset");
  EnvAxis axis{key, {}};
  for (auto& v : split(std::string_view(text).substr(eq + 1), ',')) {
    if (v.empty())
      axis.values.emplace_back(std::nullopt);
    else
      axis.values.emplace_back(v);
  }
  return axis;
}

EnvAxis default_env_axis() { return {"NCCL_CUMEM_ENABLE", {std::nullopt, std::string("0")}}; }

}  // namespace coldstart
