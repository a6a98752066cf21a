// libFuzzer target: reading a results file's text either succeeds or throws InputError naming it, nothing else. What
// is accepted holds what the rules promise (model/validate.h: no count that wraps when summarised) and writes out as
// a file that reads back to the same text.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "model/result.h"
#include "util/error.h"
#include "util/json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  coldstart::BenchResults r;
  try {
    r = coldstart::bench_results_from_text(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.json");
  } catch (const coldstart::InputError&) {
    return 0;
  }
  for (const auto& s : r.summaries)
    if (s.total() < 0 || s.lazy_connections.min < 0) std::abort();
  const std::string once = coldstart::dump_json(nlohmann::json(r));
  const std::string twice = coldstart::dump_json(nlohmann::json(coldstart::bench_results_from_text(once, "again")));
  if (once != twice) std::abort();
  return 0;
}
