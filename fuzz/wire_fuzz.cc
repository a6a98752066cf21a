// libFuzzer target: the coordinator's frame reader and message parser on arbitrary bytes from a peer.
#include <cstddef>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "coord/wire.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  coldstart::coord::FrameReader r;
  size_t chunk = size ? data[0] % 17 + 1 : 1;
  for (size_t i = 0; i < size; i += chunk) {
    r.feed(reinterpret_cast<const char*>(data) + i, std::min(chunk, size - i));
    std::string payload, err;
    while (true) {
      auto st = r.next(&payload, &err);
      if (st != coldstart::coord::FrameReader::Status::frame) {
        if (st == coldstart::coord::FrameReader::Status::error) return 0;
        break;
      }
      nlohmann::json msg;
      coldstart::coord::parse_message(payload, &msg, &err);
    }
  }
  return 0;
}
