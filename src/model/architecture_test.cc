// The map of the code (docs/architecture.md) held to the code: every folder of src/ is in its table and every row is
// a folder; each folder's files (tests aside) include only what its row allows; a row allows only lower floors, so
// the layers have no cycle. The top-level folders are named too.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <regex>
#include <set>

#include "util/fs.h"
#include "util/strings.h"

namespace coldstart {
namespace {

namespace fs = std::filesystem;
const fs::path kRoot = COLDSTART_SOURCE_DIR;

struct Row {
  int floor = 0;
  std::set<std::string> may_include;
};

// The code map's rows: | `folder` | floor | may include | what lives there |
std::map<std::string, Row> code_map() {
  static const std::regex row_pattern(R"re(^\| `([a-z_]+)` \| (\d+) \| ([^|]*) \|)re");
  std::map<std::string, Row> out;
  for (const auto& line : split(read_file((kRoot / "docs/architecture.md").string()), '\n')) {
    std::smatch m;
    const std::string text(line);
    if (!std::regex_search(text, m, row_pattern)) continue;
    Row row;
    row.floor = std::stoi(m[2]);
    for (const auto& name : split(m[3].str(), ','))
      if (std::string folder(trim(name)); folder != "—" && !folder.empty()) row.may_include.insert(folder);
    out[m[1]] = row;
  }
  return out;
}

std::set<std::string> src_folders() {
  std::set<std::string> out;
  for (const auto& e : fs::directory_iterator(kRoot / "src"))
    if (e.is_directory()) out.insert(e.path().filename().string());
  return out;
}

std::vector<std::string> includes_of(const fs::path& file) {
  static const std::regex inc(R"re(#include "([a-z_]+)/)re");
  std::vector<std::string> out;
  std::string text = read_file(file.string());
  for (auto it = std::sregex_iterator(text.begin(), text.end(), inc); it != std::sregex_iterator(); ++it)
    out.push_back((*it)[1]);
  return out;
}

// Each `namespace coldstart...` a file opens, with its block's text (up to the line that closes it by name).
struct Opened {
  std::string name, block;
};
std::vector<Opened> namespaces_of(const fs::path& file) {
  static const std::regex open(R"re(^namespace (coldstart[a-z_:]*) \{)re");
  std::vector<Opened> out;
  Opened* inside = nullptr;
  for (const auto& line : split(read_file(file.string()), '\n')) {
    std::smatch m;
    if (!inside && std::regex_search(line, m, open)) {
      out.push_back({m[1].str(), ""});
      inside = &out.back();
    } else if (inside && line == "}  // namespace " + inside->name) {
      inside = nullptr;
    } else if (inside) {
      inside->block += line + "\n";
    }
  }
  return out;
}

// Whether folder/file may open `ns`: util/ and model/ (the vocabulary every layer speaks) are coldstart itself, every
// other folder F is coldstart::F (or below it), save these exceptions, kept on purpose (issue 42):
//  - a `namespace coldstart` block of EnumNames<...> specialisations, which must be in EnumNames' own namespace;
//  - model/net.h's coldstart::net: doctor net's data, which net/ and report/ both read;
//  - gpu/nccl.h's coldstart::nccl: NCCL's own API under its own prefix.
// Test-only files (foo_test.h, foo_for_test.h, test_foo.h) are not held to it.
bool namespace_allowed(const std::string& folder, const std::string& file, const Opened& ns) {
  if (ns.name == "coldstart")
    return folder == "util" || folder == "model" || ns.block.find("EnumNames<") != std::string::npos;
  if (folder == "model" && file == "net.h" && ns.name == "coldstart::net") return true;
  if (folder == "gpu" && file == "nccl.h" && ns.name == "coldstart::nccl") return true;
  if (folder == "util" || folder == "model") return false;
  return ns.name == "coldstart::" + folder || ns.name.starts_with("coldstart::" + folder + "::");
}

}  // namespace

TEST(Architecture, TheMapNamesEveryFolderOfSrcAndNoOther) {
  const auto map = code_map();
  ASSERT_GE(map.size(), 10u) << "no code map found in docs/architecture.md";
  for (const auto& folder : src_folders())
    EXPECT_TRUE(map.count(folder)) << "src/" << folder << "/ is not in docs/architecture.md's code map: add its row";
  for (const auto& [folder, row] : map)
    EXPECT_TRUE(fs::is_directory(kRoot / "src" / folder)) << "the code map names src/" << folder << "/, which is gone";
}

TEST(Architecture, EveryFolderIncludesOnlyWhatItsRowAllows) {
  const auto map = code_map();
  size_t files = 0;
  for (const auto& [folder, row] : map) {
    if (!fs::is_directory(kRoot / "src" / folder)) continue;
    for (const auto& e : fs::directory_iterator(kRoot / "src" / folder)) {
      const std::string name = e.path().filename().string();
      if (name.ends_with("_test.cc") || name.ends_with("_test.h")) continue;
      ++files;
      for (const auto& included : includes_of(e.path()))
        EXPECT_TRUE(included == folder || row.may_include.count(included))
            << "src/" << folder << "/" << name << " includes " << included << "/, which the map does not allow "
            << folder << "/ (docs/architecture.md)";
    }
  }
  EXPECT_GT(files, 50u);
}

TEST(Architecture, ARowAllowsOnlyLowerFloors) {
  const auto map = code_map();
  for (const auto& [folder, row] : map)
    for (const auto& below : row.may_include) {
      auto it = map.find(below);
      ASSERT_NE(it, map.end()) << folder << " may include " << below << ", which the map does not name";
      EXPECT_LT(it->second.floor, row.floor) << folder << " (floor " << row.floor << ") may include " << below
                                             << " (floor " << it->second.floor << "): a layer climbs";
    }
}

// The model is the vocabulary everything reads: it includes nothing above util/ (said by its row, and kept here in
// so many words).
TEST(Architecture, TheModelIncludesNothingAboveUtil) {
  EXPECT_EQ(code_map().at("model").may_include, (std::set<std::string>{"util"}));
}

// A file of src/ past some 600 lines says at its top why it is one file (its opening comment gives its size and the
// reason), so that length is a decision, not an accident.
TEST(Architecture, ALongFileSaysWhyAtItsTop) {
  for (const auto& e : fs::recursive_directory_iterator(kRoot / "src")) {
    if (!e.is_regular_file()) continue;
    const std::string text = read_file(e.path().string());
    const auto lines = std::count(text.begin(), text.end(), '\n');
    if (lines <= 650) continue;
    const std::string top = text.substr(0, text.find("#include"));
    EXPECT_TRUE(top.find("lines") != std::string::npos)
        << e.path() << " has " << lines << " lines and its opening comment does not say why it is one file";
  }
}

TEST(Architecture, EachFolderIsItsOwnNamespace) {
  size_t headers = 0;
  for (const auto& folder : src_folders())
    for (const auto& e : fs::directory_iterator(kRoot / "src" / folder)) {
      const std::string name = e.path().filename().string();
      if (!name.ends_with(".h") || name.ends_with("_test.h") || name.starts_with("test_")) continue;
      ++headers;
      for (const auto& ns : namespaces_of(e.path()))
        EXPECT_TRUE(namespace_allowed(folder, name, ns))
            << "src/" << folder << "/" << name << " opens namespace " << ns.name << "; src/" << folder << "/ is "
            << (folder == "util" || folder == "model" ? std::string("coldstart") : "coldstart::" + folder)
            << " (issue 42; the exceptions are listed above namespace_allowed)";
    }
  EXPECT_GT(headers, 50u);
}

TEST(Architecture, TheTopLevelFoldersAreNamed) {
  const std::string text = read_file((kRoot / "docs/architecture.md").string());
  for (const auto& e : fs::directory_iterator(kRoot)) {
    const std::string name = e.path().filename().string();
    // what a build or a run leaves (build*/, dist/, coldstart-out/) and hidden folders are not the tree's own
    if (!e.is_directory() || name.starts_with(".") || name.starts_with("build") || name == "dist" ||
        name == "coldstart-out" || name == "src")
      continue;
    EXPECT_NE(text.find("| `" + name + "/` |"), std::string::npos)
        << name << "/ is not in docs/architecture.md's table of folders outside src/";
  }
}

}  // namespace coldstart
