#include "lab/flags.h"

#include <cctype>

#include "util/strings.h"

namespace coldstart {

Mode parse_mode(const std::string& s, const std::string& what) {
  return parse_enum<Mode>(s, what, " (launch models; ray and ray-noset with --launcher ray)");
}

Collective parse_collective(const std::string& s) { return parse_enum<Collective>(s, "--collective"); }

NcclLog parse_nccl_log(const std::string& s, bool list) {
  return parse_enum<NcclLog>(s, "--nccl-log", list ? " (or a list to compare: off,light)" : "");
}

Groups parse_groups(const std::string& s) {
  if (auto g = Groups::parse(s)) return *g;
  throw InputError("--groups: '" + s + "' is not a group plan; use world, split:K or fresh:K with 1 <= K <= " +
                   std::to_string(Groups::kMax));
}

Startup parse_startup(const std::string& text) {
  if (auto s = Startup::parse(text)) return *s;
  throw InputError("--startup " + text +
                   ": use none, cpu:DURATION (e.g. cpu:300ms), h2d:SIZE (e.g. h2d:32GiB) or h2d-pinned:SIZE, with "
                   "/PIECE for the bytes per copy (e.g. h2d:2GiB/16MiB; at most 16GiB)");
}

Fix parse_fix(const std::string& text) {
  if (auto f = Fix::parse(text)) return *f;
  throw InputError("--fix " + text + ": use " + kFixNames + " (channels:N with 1 <= N <= 64)");
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

}  // namespace coldstart
