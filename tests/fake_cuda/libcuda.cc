// A stand-in for libcuda.so.1 with the few driver calls cumem_share_bench makes, on host memory: an allocation is a
// memfd, an export is a dup of it, a mapping is an mmap of it. Two processes that share a "buffer" this way really
// share its pages, so the program's whole path (ranks, sockets, fds, verification through the mappings) runs on a CPU.
//   FAKE_CUDA_DEVICES=0       cuInit answers CUDA_ERROR_NO_DEVICE
//   FAKE_CUDA_BROKEN_IMPORT=1 an imported allocation maps private memory: writes never reach the owner
#include <cuda.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>

namespace {
std::mutex mutex;
std::set<CUmemGenericAllocationHandle> imported;
bool env_is(const char* name, const char* value) {
  const char* v = std::getenv(name);
  return v && std::strcmp(v, value) == 0;
}
}  // namespace

extern "C" {
CUresult cuInit(unsigned int) { return env_is("FAKE_CUDA_DEVICES", "0") ? CUDA_ERROR_NO_DEVICE : CUDA_SUCCESS; }
CUresult cuDriverGetVersion(int* v) {
  *v = 13000;
  return CUDA_SUCCESS;
}
CUresult cuGetErrorString(CUresult, const char** s) {
  *s = "fake driver error";
  return CUDA_SUCCESS;
}
CUresult cuGetErrorName(CUresult, const char** s) {
  *s = "CUDA_ERROR_FAKE";
  return CUDA_SUCCESS;
}
CUresult cuDeviceGetCount(int* n) {
  *n = 1;
  return CUDA_SUCCESS;
}
CUresult cuDeviceGet(CUdevice* d, int ordinal) {
  *d = ordinal;
  return ordinal == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}
CUresult cuDeviceGetName(char* name, int len, CUdevice) {
  std::strncpy(name, "Fake GPU", len);
  return CUDA_SUCCESS;
}
CUresult cuDeviceGetPCIBusId(char* bus, int len, CUdevice) {
  std::strncpy(bus, "0000:00:00.0", len);
  return CUDA_SUCCESS;
}
CUresult cuDeviceGetAttribute(int* v, CUdevice_attribute, CUdevice) {
  *v = 1;
  return CUDA_SUCCESS;
}
CUresult cuDevicePrimaryCtxRetain(CUcontext* c, CUdevice) {
  *c = reinterpret_cast<CUcontext>(0x1);
  return CUDA_SUCCESS;
}
CUresult cuDevicePrimaryCtxRelease(CUdevice) { return CUDA_SUCCESS; }
CUresult cuCtxSetCurrent(CUcontext) { return CUDA_SUCCESS; }
CUresult cuCtxSynchronize() { return CUDA_SUCCESS; }
CUresult cuMemGetAllocationGranularity(size_t* g, const CUmemAllocationProp*, CUmemAllocationGranularity_flags) {
  *g = 2u << 20;
  return CUDA_SUCCESS;
}
CUresult cuMemCreate(CUmemGenericAllocationHandle* h, size_t size, const CUmemAllocationProp*, unsigned long long) {
  int fd = memfd_create("fake-cumem", MFD_CLOEXEC);
  if (fd < 0 || ftruncate(fd, static_cast<off_t>(size)) != 0) return CUDA_ERROR_OUT_OF_MEMORY;
  *h = static_cast<CUmemGenericAllocationHandle>(fd);
  return CUDA_SUCCESS;
}
CUresult cuMemRelease(CUmemGenericAllocationHandle h) {
  std::lock_guard<std::mutex> lock(mutex);
  imported.erase(h);
  return close(static_cast<int>(h)) == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
CUresult cuMemExportToShareableHandle(void* out, CUmemGenericAllocationHandle h, CUmemAllocationHandleType,
                                      unsigned long long) {
  int fd = dup(static_cast<int>(h));
  std::memcpy(out, &fd, sizeof fd);
  return fd >= 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
CUresult cuMemImportFromShareableHandle(CUmemGenericAllocationHandle* h, void* os, CUmemAllocationHandleType) {
  int fd = dup(static_cast<int>(reinterpret_cast<uintptr_t>(os)));
  if (fd < 0) return CUDA_ERROR_INVALID_VALUE;
  *h = static_cast<CUmemGenericAllocationHandle>(fd);
  std::lock_guard<std::mutex> lock(mutex);
  imported.insert(*h);
  return CUDA_SUCCESS;
}
CUresult cuMemAddressReserve(CUdeviceptr* p, size_t size, size_t, CUdeviceptr, unsigned long long) {
  void* m = mmap(nullptr, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (m == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
  *p = reinterpret_cast<CUdeviceptr>(m);
  return CUDA_SUCCESS;
}
CUresult cuMemAddressFree(CUdeviceptr p, size_t size) {
  return munmap(reinterpret_cast<void*>(p), size) == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
CUresult cuMemMap(CUdeviceptr p, size_t size, size_t offset, CUmemGenericAllocationHandle h, unsigned long long) {
  bool broken = false;
  {
    std::lock_guard<std::mutex> lock(mutex);
    broken = env_is("FAKE_CUDA_BROKEN_IMPORT", "1") && imported.count(h);
  }
  void* m = broken ? mmap(reinterpret_cast<void*>(p), size, PROT_READ | PROT_WRITE,
                          MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0)
                   : mmap(reinterpret_cast<void*>(p), size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED,
                          static_cast<int>(h), static_cast<off_t>(offset));
  return m == MAP_FAILED ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}
CUresult cuMemUnmap(CUdeviceptr p, size_t size) {
  void* m =
      mmap(reinterpret_cast<void*>(p), size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
  return m == MAP_FAILED ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}
CUresult cuMemSetAccess(CUdeviceptr, size_t, const CUmemAccessDesc*, size_t) { return CUDA_SUCCESS; }
CUresult cuMemsetD8(CUdeviceptr p, unsigned char v, size_t n) {
  std::memset(reinterpret_cast<void*>(p), v, n);
  return CUDA_SUCCESS;
}
CUresult cuMemcpyDtoH(void* dst, CUdeviceptr src, size_t n) {
  std::memcpy(dst, reinterpret_cast<const void*>(src), n);
  return CUDA_SUCCESS;
}
}
