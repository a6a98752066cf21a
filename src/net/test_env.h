// The net tests' environments: a GetEnv over a map of variables, holding its own copy (one helper for every test file,
// which a unity build compiles together).
#pragma once
#include <map>
#include <memory>
#include <string>

#include "net/target.h"

namespace coldstart::net::test {

inline GetEnv env_of(std::map<std::string, std::string> vars) {
  auto held = std::make_shared<const std::map<std::string, std::string>>(std::move(vars));
  return [held](const char* k) -> const char* {
    auto it = held->find(k);
    return it == held->end() ? nullptr : it->second.c_str();
  };
}

}  // namespace coldstart::net::test
