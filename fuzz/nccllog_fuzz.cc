// libFuzzer target: the NCCL log parser must read any bytes without crashing, in any chunking.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <nlohmann/json.hpp>

#include "nccllog/parser.h"
#include "nccllog/render.h"
#include "util/json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  coldstart::nccllog::Parser p("fuzz");
  size_t chunk = size ? data[0] % 61 + 1 : 1;
  for (size_t i = 0; i < text.size(); i += chunk) p.feed(text.substr(i, chunk));
  coldstart::nccllog::LogSummary s = p.take();
  (void)coldstart::nccllog::render_table(s);
  (void)coldstart::dump_json(coldstart::nccllog::to_json(s));
  return 0;
}
