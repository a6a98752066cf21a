// The layering, checked on the sources: the model includes nothing above util/, and no layer the lab uses includes
// the lab or the commands.
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>

#include "util/fs.h"

namespace coldstart {
namespace {

std::vector<std::string> includes_of(const std::filesystem::path& file) {
  static const std::regex inc(R"re(#include "([a-z_]+)/)re");
  std::vector<std::string> out;
  std::string text = read_file(file.string());
  for (auto it = std::sregex_iterator(text.begin(), text.end(), inc); it != std::sregex_iterator(); ++it)
    out.push_back((*it)[1]);
  return out;
}

void expect_layer_includes_only(const std::string& layer, const std::vector<std::string>& allowed) {
  const std::filesystem::path dir = std::filesystem::path(COLDSTART_SOURCE_DIR) / "src" / layer;
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().string().ends_with("_test.cc")) continue;
    ++files;
    for (const auto& folder : includes_of(e.path()))
      EXPECT_NE(std::find(allowed.begin(), allowed.end(), folder), allowed.end())
          << e.path().filename() << " includes " << folder << "/";
  }
  EXPECT_GT(files, 0) << layer;
}

TEST(Layers, TheModelIncludesNothingAboveUtil) { expect_layer_includes_only("model", {"model", "util"}); }

TEST(Layers, NoLayerBelowTheLabIncludesTheLabOrTheCommands) {
  for (const char* layer : {"report", "doctor", "worker", "trace", "nccllog", "gpu", "coord", "launch"})
    for (const char* above : {"lab", "cli"}) {
      const std::filesystem::path dir = std::filesystem::path(COLDSTART_SOURCE_DIR) / "src" / layer;
      for (const auto& e : std::filesystem::directory_iterator(dir))
        for (const auto& folder : includes_of(e.path())) EXPECT_NE(folder, above) << e.path() << " includes " << above;
    }
}

}  // namespace
}  // namespace coldstart
