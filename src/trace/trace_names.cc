#include "trace/trace_names.h"

namespace coldstart::trace {
namespace {
bool starts(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
}  // namespace

const char* category_name(Category c) {
  switch (c) {
    case Category::context: return "context";
    case Category::kernel_loading: return "kernel_loading";
    case Category::mem_create: return "create";
    case Category::mem_reserve: return "reserve";
    case Category::mem_map: return "map";
    case Category::mem_set_access: return "set_access";
    case Category::mem_export: return "export";
    case Category::mem_import: return "import";
    case Category::mem_release: return "release";
    case Category::ipc_get: return "ipc_get";
    case Category::ipc_open: return "ipc_open";
    case Category::peer_query: return "peer_query";
    case Category::alloc: return "alloc";
    case Category::launch: return "launch";
    case Category::sync: return "sync";
    case Category::other: return "other";
  }
  return "?";
}

Category category_of(std::string_view f) {
  if (starts(f, "cuDevicePrimaryCtxRetain") || starts(f, "cuCtxCreate") || f == "cuInit") return Category::context;
  if (starts(f, "cuLibraryLoad") || starts(f, "cuModuleLoad") || starts(f, "cuLibraryGetKernel") ||
      starts(f, "cuModuleGetFunction") || starts(f, "cuKernelGetFunction") || f == "cudaFuncGetAttributes")
    return Category::kernel_loading;
  if (f == "cuMemCreate") return Category::mem_create;
  if (f == "cuMemAddressReserve") return Category::mem_reserve;
  if (f == "cuMemMap") return Category::mem_map;
  if (f == "cuMemSetAccess") return Category::mem_set_access;
  if (f == "cuMemExportToShareableHandle") return Category::mem_export;
  if (f == "cuMemImportFromShareableHandle") return Category::mem_import;
  if (f == "cuMemRelease" || f == "cuMemUnmap" || f == "cuMemAddressFree") return Category::mem_release;
  if (starts(f, "cuIpcGetMemHandle") || starts(f, "cudaIpcGetMemHandle")) return Category::ipc_get;
  if (starts(f, "cuIpcOpenMemHandle") || starts(f, "cudaIpcOpenMemHandle")) return Category::ipc_open;
  if (starts(f, "cuDeviceGetPCIBusId") || starts(f, "cuDeviceCanAccessPeer") || starts(f, "cuCtxEnablePeerAccess") ||
      starts(f, "cudaDeviceGetPCIBusId") || starts(f, "cudaDeviceCanAccessPeer"))
    return Category::peer_query;
  if (starts(f, "cuMemAlloc") || starts(f, "cuMemHostAlloc") || starts(f, "cudaMalloc") || starts(f, "cudaHostAlloc"))
    return Category::alloc;
  if (starts(f, "cuLaunch") || starts(f, "cudaLaunchKernel")) return Category::launch;
  if (f.find("Synchronize") != std::string_view::npos) return Category::sync;
  return Category::other;
}

bool recorded_call(const char* function) {
  std::string_view f(function);
  if (starts(f, "cuMemcpy") || starts(f, "cuMemset") || starts(f, "cudaMemcpy") || starts(f, "cudaMemset") ||
      starts(f, "cuMemGetInfo") || starts(f, "cuMemGetAddressRange"))
    return false;
  if (category_of(f) != Category::other) return true;
  return starts(f, "cuMem") || starts(f, "cuIpc") || f == "cudaSetDevice" || f == "cudaFree" ||
         starts(f, "cuStreamCreate") || starts(f, "cuGraphics");
}

}  // namespace coldstart::trace
