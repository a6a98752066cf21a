// Libraries loaded at run time (NCCL, NVML, CUPTI): one way to bind a symbol into a typed function pointer.
#pragma once
#include <dlfcn.h>

namespace coldstart {

// Sets *slot to the symbol `name` of the dlopen'ed `handle` (nullptr when absent); returns whether it was found.
template <class F>
bool bind_symbol(void* handle, const char* name, F* slot) {
  *slot = reinterpret_cast<F>(dlsym(handle, name));
  return *slot != nullptr;
}

}  // namespace coldstart
