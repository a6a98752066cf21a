// The tracer when CUPTI is already taken: this program subscribes to CUPTI itself (as a profiler would), then
// initialises CUDA with the tracer named in CUDA_INJECTION64_PATH, makes a few CUDA calls and exits 0. The tracer must
// let it run and say once (stderr and its file) that it could not trace. Run on a GPU node:
//   COLDSTART_TRACE_DIR=/tmp/t CUDA_INJECTION64_PATH=$PWD/build/libcoldstart_cupti.so build/cupti_taken_check
#include <cupti.h>
#include <dlfcn.h>

#include <cstdio>
#include <initializer_list>

namespace {
void CUPTIAPI ignore(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void*) {}
}  // namespace

int main() {
  void* cupti = nullptr;
  for (const char* name : {"libcupti.so.13", "libcupti.so.12", "libcupti.so"})
    if ((cupti = dlopen(name, RTLD_NOW | RTLD_LOCAL))) break;
  void* cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!cupti || !cuda) {
    std::fprintf(stderr, "cupti_taken_check: needs libcupti and libcuda.so.1\n");
    return 2;
  }
  using Subscribe = CUptiResult (*)(CUpti_SubscriberHandle*, CUpti_CallbackFunc, void*);
  using Init = int (*)(unsigned);
  using Count = int (*)(int*);
  auto subscribe = reinterpret_cast<Subscribe>(dlsym(cupti, "cuptiSubscribe"));
  auto init = reinterpret_cast<Init>(dlsym(cuda, "cuInit"));
  auto count = reinterpret_cast<Count>(dlsym(cuda, "cuDeviceGetCount"));
  CUpti_SubscriberHandle mine = nullptr;
  CUptiResult sub = subscribe(&mine, ignore, nullptr);
  std::printf("this program's cuptiSubscribe: %d (%s)\n", static_cast<int>(sub),
              sub == CUPTI_SUCCESS ? "ok" : "failed");
  int rc = init(0), n = -1;
  if (rc == 0) count(&n);
  std::printf("cuInit: %d, devices: %d\n", rc, n);
  return rc == 0 && n > 0 ? 0 : 1;
}
