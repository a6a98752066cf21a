// The tests' recorded fact sets (tests/data/facts/), one loader for every doctor test file: the JSON as recorded, with
// the schema `coldstart doctor --json` writes beside it under "facts", and the facts read from it.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

#include "doctor/facts.h"
#include "util/fs.h"

namespace coldstart::test {

inline nlohmann::json recorded_facts_json(const std::string& name) {
  nlohmann::json j = nlohmann::json::parse(read_file(std::string(COLDSTART_SOURCE_DIR) + "/tests/data/facts/" + name));
  j["schema"] = "coldstart.facts/1";
  return j;
}

inline doctor::Facts recorded_facts(const std::string& name) {
  return doctor::facts_from_json(recorded_facts_json(name));
}

}  // namespace coldstart::test
