// libFuzzer target: reading a results file's text either succeeds or throws InputError naming it, nothing else; what
// was read writes out again.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "model/result.h"
#include "util/error.h"
#include "util/json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    coldstart::BenchResults r =
        coldstart::bench_results_from_text(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.json");
    (void)coldstart::dump_json(nlohmann::json(r));
  } catch (const coldstart::InputError&) {
  }
  return 0;
}
