#include "gpu/libpaths.h"

#include <cstdlib>
#include <filesystem>

#include "util/strings.h"

namespace coldstart::gpu {
namespace fs = std::filesystem;

std::vector<std::string> python_site_files(const std::string& relative) {
  std::vector<std::string> out;
  const char* path = std::getenv("PATH");
  if (!path) return out;
  for (const auto& dir : split(path, ':')) {
    if (dir.empty()) continue;
    fs::path py = fs::path(dir) / "python3";
    std::error_code ec;
    if (!fs::exists(py, ec)) continue;
    // A venv's bin/python3 links to the base interpreter: look beside both the link and its target.
    std::vector<fs::path> prefixes{fs::path(dir).parent_path()};
    auto real = fs::canonical(py, ec);
    if (!ec) prefixes.push_back(real.parent_path().parent_path());
    for (const auto& prefix : prefixes)
      for (const char* libdir : {"lib", "lib64"}) {
        fs::path base = prefix / libdir;
        if (!fs::is_directory(base, ec)) continue;
        for (const auto& entry : fs::directory_iterator(base, ec)) {
          if (!starts_with(entry.path().filename().string(), "python3")) continue;
          for (const char* site : {"site-packages", "dist-packages"}) {
            fs::path f = entry.path() / site / relative;
            if (fs::exists(f, ec)) out.push_back(f.string());
          }
        }
      }
    break;  // only the python3 that PATH would run
  }
  return out;
}

}  // namespace coldstart::gpu
