#include "util/env.h"

extern char** environ;

namespace coldstart {

std::map<std::string, std::string> environment(const std::function<bool(std::string_view key)>& keep) {
  std::map<std::string, std::string> out;
  for (char** e = environ; e && *e; ++e) {
    std::string_view kv = *e;
    auto eq = kv.find('=');
    std::string_view key = kv.substr(0, eq);
    if (eq == std::string_view::npos || !keep(key)) continue;
    out.emplace(key, kv.substr(eq + 1));
  }
  return out;
}

}  // namespace coldstart
