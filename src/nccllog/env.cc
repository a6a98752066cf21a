#include "nccllog/env.h"

namespace coldstart::nccllog {

std::vector<std::pair<std::string, std::string>> nccl_log_env(NcclLog level, const std::string& file,
                                                              const std::function<bool(const std::string&)>& user_set) {
  if (level == NcclLog::off) return {};
  std::vector<std::pair<std::string, std::string>> want{
      {"NCCL_DEBUG", "INFO"},
      {"NCCL_DEBUG_SUBSYS", level == NcclLog::full ? "ALL" : "INIT,BOOTSTRAP,ENV,COLL"},
      {"NCCL_DEBUG_TIMESTAMP_LEVELS", "WARN,INFO"},
      {"NCCL_DEBUG_TIMESTAMP_FORMAT", "[%F %T.%6f] "}};
  if (!file.empty()) want.emplace_back("NCCL_DEBUG_FILE", file);
  std::vector<std::pair<std::string, std::string>> out;
  for (auto& kv : want)
    if (!user_set(kv.first)) out.push_back(std::move(kv));
  return out;
}

}  // namespace coldstart::nccllog
