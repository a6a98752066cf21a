#include "ncclbuild/series.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <regex>

#include "util/error.h"
#include "util/fs.h"
#include "util/sha256.h"
#include "util/strings.h"

#ifndef COLDSTART_CHECKOUT_DIR
#define COLDSTART_CHECKOUT_DIR ""
#endif

namespace coldstart::ncclbuild {
namespace fs = std::filesystem;

namespace {
bool holds_share(const std::string& root) {
  std::error_code ec;
  return !root.empty() && fs::is_regular_file(root + "/scripts/build_nccl.sh", ec) &&
         fs::is_regular_file(root + "/nccl/series", ec);
}

// Release numbers compared as numbers: 2.9.9 before 2.28.9.
bool older(const std::string& a, const std::string& b) {
  auto pa = split(a, '.'), pb = split(b, '.');
  for (size_t i = 0; i < std::min(pa.size(), pb.size()); ++i) {
    auto x = parse_int(pa[i]), y = parse_int(pb[i]);
    if (x && y && *x != *y) return *x < *y;
  }
  return pa.size() < pb.size();
}
}  // namespace

Share find_share(const std::string& exe, const std::string& checkout) {
  std::vector<std::string> looked;
  if (const char* env = std::getenv("COLDSTART_SHARE_DIR"); env && *env) {
    if (holds_share(env)) return {env, "$COLDSTART_SHARE_DIR"};
    throw InputError("COLDSTART_SHARE_DIR=" + shown(env) +
                     " holds no scripts/build_nccl.sh and nccl/series; unset it or name such a folder");
  }
  if (!exe.empty()) {
    std::string installed = (fs::path(exe).parent_path().parent_path() / "share" / "coldstart").lexically_normal();
    if (holds_share(installed)) return {installed, "installed beside the binary"};
    looked.push_back(installed);
  }
  if (holds_share(checkout)) return {checkout, "the source checkout"};
  if (!checkout.empty()) looked.push_back(checkout);
  throw RuntimeError("the NCCL patch series is not installed (no scripts/build_nccl.sh and nccl/series in " +
                     join(looked, " or ") + "); reinstall the coldstart wheel, or set COLDSTART_SHARE_DIR to a " +
                     "coldstart source checkout");
}

Share find_share() { return find_share(self_exe(), COLDSTART_CHECKOUT_DIR); }

bool is_release(const std::string& version) {
  // X.Y.Z, each 1 to 3 digits (a loop, not std::regex: libstdc++'s recurses per character of its input)
  if (version.size() > 11) return false;
  const auto parts = split(version, '.');
  return parts.size() == 3 &&
         std::all_of(parts.begin(), parts.end(), [](const std::string& x) { return x.size() <= 3 && all_digits(x); });
}

std::vector<Port> read_ports(const Share& share) {
  const std::string dir = share.series_dir();
  std::map<std::string, std::vector<std::string>> patches;
  for (const auto& raw : split(read_file(dir + "/series"), '\n')) {
    std::string line(trim(raw));
    if (line.empty() || line[0] == '#') continue;
    auto slash = line.find('/');
    if (slash == std::string::npos || line[0] != 'v') continue;
    patches[line.substr(1, slash - 1)].push_back(line);
  }
  std::vector<Port> out;
  for (auto& [version, list] : patches) {
    if (!is_release(version)) continue;
    const std::string tree = dir + "/v" + version + "/source-tree";
    std::error_code ec;
    if (!fs::is_regular_file(tree, ec)) continue;
    Port p{version, "", "", list};
    for (const auto& raw : split(read_file(tree), '\n')) {
      auto words = split(std::string(trim(raw)), ' ');
      if (words.size() == 2 && words[0] == "release") p.tag = words[1];
      if (words.size() == 2 && words[0] == "commit") p.commit = words[1];
    }
    if (p.tag.empty()) p.tag = "v" + version + "-1";  // NCCL's tags: v<version>-<package revision>
    out.push_back(std::move(p));
  }
  std::sort(out.begin(), out.end(), [](const Port& a, const Port& b) { return older(a.version, b.version); });
  return out;
}

std::string port_list(const std::vector<Port>& ports) {
  std::vector<std::string> v;
  for (const auto& p : ports) v.push_back(p.version);
  return join(v, ", ");
}

std::string series_hash(const Share& share, const Port& port) {
  std::string lines;
  for (const auto& p : port.patches) lines += sha256_hex(read_file(share.series_dir() + "/" + p)) + "  " + p + "\n";
  return sha256_hex(lines).substr(0, 16);
}

std::string release_url(const Port& port) {
  return "https://github.com/NVIDIA/nccl/archive/refs/tags/" + port.tag + ".tar.gz";
}

}  // namespace coldstart::ncclbuild
