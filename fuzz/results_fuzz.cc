// libFuzzer target: loading a results file either succeeds or throws InputError naming it, nothing else.
#include <cstddef>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "model/result.h"
#include "util/error.h"
#include "util/json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto j = nlohmann::json::parse(reinterpret_cast<const char*>(data), reinterpret_cast<const char*>(data) + size,
                                 nullptr, false);
  if (j.is_discarded()) return 0;
  try {
    coldstart::BenchResults r = coldstart::bench_results_from_json(j, "fuzz.json");
    (void)coldstart::dump_json(nlohmann::json(r));
  } catch (const coldstart::InputError&) {
  }
  return 0;
}
