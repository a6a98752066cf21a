// The topology file NCCL reads in place of its own detection (NCCL_TOPO_FILE), and what NCCL needs of it that a file
// can lack: a plugin or a vendor ships one per instance type, and one without a CPU's arch made every init fail with
// "internal error" (NVIDIA/nccl#1726; NCCL's own message, at WARN: "Attribute arch of node cpu not found").
#include <algorithm>
#include <exception>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "doctor/facts.h"
#include "util/error.h"
#include "util/fs.h"

namespace coldstart::doctor {
namespace {
constexpr size_t kMaxTopoBytes = size_t{16} << 20;  // a topology file is kilobytes; more is not one

// What separates a tag's name and its attributes here: a space, a tab or a newline.
bool blank(char c) { return c == ' ' || c == '\t' || c == '\n'; }

// The value of attribute `name` in a tag's text (`<cpu numaid="0" arch="x86_64">`), or nothing.
std::optional<std::string> attribute(std::string_view tag, std::string_view name) {
  for (size_t at = tag.find(name); at != std::string_view::npos; at = tag.find(name, at + 1)) {
    const bool starts = at > 0 && blank(tag[at - 1]);
    size_t eq = at + name.size();
    if (!starts || eq >= tag.size() || tag[eq] != '=' || eq + 1 >= tag.size()) continue;
    const char quote = tag[eq + 1];
    if (quote != '"' && quote != '\'') continue;
    const size_t end = tag.find(quote, eq + 2);
    if (end == std::string_view::npos) return std::nullopt;
    return std::string(tag.substr(eq + 2, end - eq - 2));
  }
  return std::nullopt;
}

size_t line_of(std::string_view xml, size_t pos) {
  return 1 + static_cast<size_t>(std::count(xml.begin(), xml.begin() + static_cast<std::ptrdiff_t>(pos), '\n'));
}
}  // namespace

std::string topo_xml_problem(std::string_view xml) {
  if (xml.find("<system") == std::string_view::npos) return "no <system> element (NCCL reads the topology under one)";
  for (size_t at = xml.find("<cpu"); at != std::string_view::npos; at = xml.find("<cpu", at + 4)) {
    const size_t after = at + 4;
    if (after < xml.size() && !blank(xml[after]) && xml[after] != '>' && xml[after] != '/')
      continue;  // <cpuset ...>, another element
    const size_t close = xml.find('>', after);
    if (close == std::string_view::npos)
      return fmt::format("line {}: a <cpu> element that never closes", line_of(xml, at));
    const std::string_view tag = xml.substr(at, close - at);
    // What NCCL's ncclTopoAddCpu requires: numaid and arch; on x86_64 the vendor; on Intel (and Zhaoxin) the family
    // and model, from which it picks its CPU model.
    std::vector<std::string> need = {"numaid", "arch"};
    const auto arch = attribute(tag, "arch");
    const auto vendor = attribute(tag, "vendor");
    if (arch == "x86_64") need.push_back("vendor");
    if (arch == "x86_64" && (vendor == "GenuineIntel" || vendor == "CentaurHauls" || vendor == "  Shanghai  "))
      need.insert(need.end(), {"familyid", "modelid"});
    for (const auto& a : need)
      if (!attribute(tag, a))
        return fmt::format(
            "line {}: a <cpu> element without its {} attribute (NCCL: \"Attribute {} of node cpu not "
            "found\", then internal error)",
            line_of(xml, at), a, a);
  }
  return "";
}

TopoFileFact read_topo_file(const std::string& path) {
  TopoFileFact t;
  t.path = path;
  if (path.empty()) return t;
  // The message of read_file_limited without the path it starts with (the finding names the variable's value).
  const auto reason = [&](std::string what, std::string_view lead) {
    return what.starts_with(lead) ? what.substr(lead.size()) : what;
  };
  std::string xml;
  try {
    xml = read_file_limited(path, kMaxTopoBytes, "not a topology file");
  } catch (const InputError& e) {  // a FIFO, a device or a socket (never read or waited on), or too large
    t.readable = 1;                // NCCL opens it, and cannot use it
    t.problem = reason(e.what(), path + ": ");
    return t;
  } catch (const std::exception& e) {  // it cannot be opened: NCCL skips it
    t.readable = 0;
    t.problem = "cannot be read: " + reason(e.what(), "cannot read " + path + ": ");
    return t;
  }
  t.readable = 1;
  t.problem = topo_xml_problem(xml);
  return t;
}

}  // namespace coldstart::doctor
