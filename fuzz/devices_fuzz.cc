// libFuzzer target: CUDA_VISIBLE_DEVICES and --visible parsing either succeed or throw InputError, nothing else.
#include <cstddef>
#include <cstdint>
#include <string>

#include "lab/visibility.h"
#include "util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  try {
    auto gpus = coldstart::lab::parse_device_list(text, "fuzz");
    for (int r = 0; r < static_cast<int>(gpus.size()); ++r)
      for (auto m : {coldstart::Mode::shared, coldstart::Mode::isolated, coldstart::Mode::remap})
        (void)coldstart::lab::visibility_for({m, {}}, r, gpus);
  } catch (const coldstart::InputError&) {
  }
  try {
    auto lists = coldstart::lab::parse_explicit_lists(text);
    std::vector<std::string> gpus{"0", "1"};
    for (int r = 0; r < 2; ++r) (void)coldstart::lab::visibility_for({coldstart::Mode::explicit_list, lists}, r, gpus);
  } catch (const coldstart::InputError&) {
  }
  return 0;
}
