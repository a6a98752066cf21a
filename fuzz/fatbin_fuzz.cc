// libFuzzer target: any bytes read as a shared library's GPU code give an answer or a one-line reason, never a read
// past their end.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "gpu/fatbin.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string problem;
  auto code =
      coldstart::gpu::parse_gpu_code(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz", &problem);
  if (!code && problem.find('\n') != std::string::npos) std::abort();
  if (code && code->ptx.size() != code->ptx_bytes.size()) std::abort();
  return 0;
}
