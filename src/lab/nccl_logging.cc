#include "lab/nccl_logging.h"

#include "util/error.h"

namespace coldstart {

const char* nccl_log_name(NcclLog l) {
  switch (l) {
    case NcclLog::off: return "off";
    case NcclLog::light: return "light";
    case NcclLog::full: return "full";
  }
  return "?";
}

NcclLog parse_nccl_log(const std::string& s) {
  for (NcclLog l : {NcclLog::off, NcclLog::light, NcclLog::full})
    if (s == nccl_log_name(l)) return l;
  throw InputError("--nccl-log: unknown level '" + s + "'; use off, light or full (or a list: off,light)");
}

std::vector<std::pair<std::string, std::string>> nccl_log_env(NcclLog level, const std::string& file,
                                                              const std::function<bool(const std::string&)>& user_set) {
  if (level == NcclLog::off) return {};
  std::vector<std::pair<std::string, std::string>> want{
      {"NCCL_DEBUG", "INFO"},
      {"NCCL_DEBUG_SUBSYS", level == NcclLog::full ? "ALL" : "INIT,BOOTSTRAP,ENV,COLL"},
      {"NCCL_DEBUG_TIMESTAMP_LEVELS", "WARN,INFO"},
      {"NCCL_DEBUG_TIMESTAMP_FORMAT", "[%F %T.%6f] "},
      {"NCCL_DEBUG_FILE", file}};
  std::vector<std::pair<std::string, std::string>> out;
  for (auto& kv : want)
    if (!user_set(kv.first)) out.push_back(std::move(kv));
  return out;
}

}  // namespace coldstart
