// The CUDA driver API, loaded at run time from libcuda.so.1: the benchmark needs no driver library to build and runs
// on a node that has only the driver. The types come from the toolkit's cuda.h; every call goes through one table, and
// each symbol is looked up under the name cuda.h maps it to (cuMemcpyDtoH is cuMemcpyDtoH_v2).
#pragma once
#include <cuda.h>

#include <string>

namespace coldstart::micro {

#define COLDSTART_CU_FUNCTIONS(X)   \
  X(cuInit)                         \
  X(cuDriverGetVersion)             \
  X(cuGetErrorString)               \
  X(cuGetErrorName)                 \
  X(cuDeviceGetCount)               \
  X(cuDeviceGet)                    \
  X(cuDeviceGetName)                \
  X(cuDeviceGetPCIBusId)            \
  X(cuDeviceGetAttribute)           \
  X(cuDevicePrimaryCtxRetain)       \
  X(cuDevicePrimaryCtxRelease)      \
  X(cuCtxSetCurrent)                \
  X(cuCtxSynchronize)               \
  X(cuMemGetAllocationGranularity)  \
  X(cuMemCreate)                    \
  X(cuMemRelease)                   \
  X(cuMemAddressReserve)            \
  X(cuMemAddressFree)               \
  X(cuMemMap)                       \
  X(cuMemUnmap)                     \
  X(cuMemSetAccess)                 \
  X(cuMemExportToShareableHandle)   \
  X(cuMemImportFromShareableHandle) \
  X(cuMemsetD8)                     \
  X(cuMemcpyDtoH)

struct CuDriver {
#define COLDSTART_CU_MEMBER(name) decltype(&::name) name = nullptr;
  COLDSTART_CU_FUNCTIONS(COLDSTART_CU_MEMBER)
#undef COLDSTART_CU_MEMBER
  void* handle = nullptr;
};

// Opens libcuda.so.1 and looks every symbol up. False with *error set ("no CUDA driver: ...") when it cannot.
bool load_cu_driver(CuDriver* driver, std::string* error);

// "cuMemCreate: out of memory (CUDA_ERROR_OUT_OF_MEMORY, 2)"
std::string cu_error(const CuDriver& driver, CUresult result, const char* call);

}  // namespace coldstart::micro
