#include "model/spec.h"

#include "util/strings.h"

namespace coldstart {

std::string Groups::name() const {
  switch (kind) {
    case Kind::world: return "world";
    case Kind::split: return "split:" + std::to_string(count);
    case Kind::fresh: return "fresh:" + std::to_string(count);
  }
  return "?";
}

std::optional<Groups> Groups::parse(std::string_view s) {
  if (s == "world") return Groups{};
  auto colon = s.find(':');
  if (colon == std::string_view::npos) return std::nullopt;
  std::string_view kind = s.substr(0, colon);
  auto k = parse_int(s.substr(colon + 1));
  if ((kind != "split" && kind != "fresh") || !k || *k < 1 || *k > kMax) return std::nullopt;
  return Groups{kind == "split" ? Kind::split : Kind::fresh, static_cast<int>(*k)};
}

EnvAxis default_env_axis() { return {"NCCL_CUMEM_ENABLE", {std::nullopt, std::string("0")}}; }

std::string Config::label(const std::string& nccl_name) const {
  std::string s = launcher.empty() ? std::string(name_of(mode)) : launcher;
  for (const auto& e : env) s += " · " + e.key + "=" + (e.value ? *e.value : "(unset)");
  if (!nccl_lib.empty()) s += " · " + (nccl_name.empty() ? nccl_lib : nccl_name);
  if (nccl_log != NcclLog::light) s += " · nccl-log=" + std::string(name_of(nccl_log));
  if (trace) s += " · traced";
  return s;
}

std::string Config::key() const {
  std::string s = launcher.empty() ? std::string(name_of(mode)) : "launcher=" + launcher;
  for (const auto& e : env) s += "|" + e.key + (e.value ? "=" + *e.value : std::string(" unset"));
  s += "|nccl=" + nccl_lib + "|log=" + std::string(name_of(nccl_log)) + "|trace=" + (trace ? "on" : "off");
  return s;
}

}  // namespace coldstart
