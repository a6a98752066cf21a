#include "trace/inject.h"

#include <cstdlib>
#include <filesystem>

#include "gpu/libpaths.h"
#include "util/error.h"
#include "util/fs.h"

namespace coldstart::trace {

std::string injection_library() {
  namespace fs = std::filesystem;
  if (const char* p = std::getenv("COLDSTART_CUPTI_INJECTION"); p && *p) return p;
  fs::path beside = fs::path(self_exe()).parent_path() / "libcoldstart_cupti.so";
  std::error_code ec;
  if (!fs::exists(beside, ec))
    throw RuntimeError("libcoldstart_cupti.so is not beside " + self_exe() +
                       "; build it (it is part of the build) or set COLDSTART_CUPTI_INJECTION to its path");
  return fs::canonical(beside, ec).string();
}

std::vector<std::pair<std::string, std::string>> trace_env(const std::string& out_dir, const std::string& nccl_log_file,
                                                           NcclLog level,
                                                           const std::function<bool(const std::string&)>& user_set) {
  std::vector<std::pair<std::string, std::string>> env{{"CUDA_INJECTION64_PATH", injection_library()},
                                                       {"COLDSTART_TRACE_DIR", out_dir}};
  if (!user_set("NCCL_SET_THREAD_NAME")) env.emplace_back("NCCL_SET_THREAD_NAME", "1");
  // The injection library looks for CUPTI on the loader's path and in the CUDA toolkit; a pip wheel's copy (PyTorch
  // brings one) is found here and handed over.
  if (!user_set("COLDSTART_CUPTI_LIB"))
    for (const char* rel : {"nvidia/cuda_cupti/lib/libcupti.so.13", "nvidia/cuda_cupti/lib/libcupti.so.12"})
      if (auto found = gpu::python_site_files(rel); !found.empty()) {
        env.emplace_back("COLDSTART_CUPTI_LIB", found.front());
        break;
      }
  auto log = nccllog::nccl_log_env(level, nccl_log_file, user_set);
  env.insert(env.end(), log.begin(), log.end());
  return env;
}

}  // namespace coldstart::trace
