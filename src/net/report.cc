#include "net/report.h"

#include <sys/stat.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "util/error.h"
#include "util/fs.h"
#include "util/json.h"
#include "util/strings.h"

namespace coldstart::net {
namespace {
constexpr const char* kGiveReport = "give a file doctor net --json wrote";
}  // namespace

NetReport load_net_report(const std::string& path) {
  const std::string source = path == "-" ? "- (standard input)" : shown(path);
  struct stat st {};
  if (path != "-" && ::stat(path.c_str(), &st) != 0) throw InputError(source + ": no such file; " + kGiveReport);
  std::string text;
  try {
    text = read_input_limited(path, kMaxNetReportBytes, kGiveReport);
  } catch (const RuntimeError& e) {
    throw InputError(std::string(e.what()) + "; " + kGiveReport);
  }
  return net_report_from_text(text, source);
}

NetReport net_report_from_text(std::string_view text, const std::string& source) {
  const std::string what = source.empty() ? "doctor net report" : source + ": doctor net report";
  if (text.size() > kMaxNetReportBytes)
    throw InputError(fmt::format("{}: larger than the {} MiB coldstart reads from one file; {}",
                                 source.empty() ? "doctor net report" : source, kMaxNetReportBytes >> 20, kGiveReport));
  NetReport r = net_report_data_from_text(text, what);
  r.verdict = decide_verdict(r);
  return r;
}

NetReport net_report_from_json(const nlohmann::json& j) { return net_report_from_text(dump_json(j)); }

}  // namespace coldstart::net
