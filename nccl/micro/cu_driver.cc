#include "micro/cu_driver.h"

#include <dlfcn.h>

namespace coldstart::micro {

#define COLDSTART_CU_STR2(x) #x
#define COLDSTART_CU_STR(x) COLDSTART_CU_STR2(x)

bool load_cu_driver(CuDriver* driver, std::string* error) {
  void* handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* why = dlerror();
    *error = std::string("no CUDA driver: libcuda.so.1 does not load (") + (why ? why : "unknown") + ")";
    return false;
  }
  driver->handle = handle;
#define COLDSTART_CU_LOOKUP(name)                                                                 \
  driver->name = reinterpret_cast<decltype(driver->name)>(dlsym(handle, COLDSTART_CU_STR(name))); \
  if (!driver->name) {                                                                            \
    *error = "the CUDA driver lacks " COLDSTART_CU_STR(name) ": update the NVIDIA driver";        \
    return false;                                                                                 \
  }
  COLDSTART_CU_FUNCTIONS(COLDSTART_CU_LOOKUP)
#undef COLDSTART_CU_LOOKUP
  return true;
}

std::string cu_error(const CuDriver& driver, CUresult result, const char* call) {
  const char* text = nullptr;
  const char* name = nullptr;
  if (driver.cuGetErrorString) driver.cuGetErrorString(result, &text);
  if (driver.cuGetErrorName) driver.cuGetErrorName(result, &name);
  return std::string(call) + ": " + (text ? text : "unknown error") + " (" + (name ? name : "?") + ", " +
         std::to_string(static_cast<int>(result)) + ")";
}

}  // namespace coldstart::micro
