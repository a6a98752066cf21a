// The phase table and the documentation's list of phases name the same phases.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include "model/phases.h"

namespace coldstart {
namespace {

// docs/bench.md's "## Phases" section, up to the next heading.
std::string documented_phases() {
  std::ifstream in(std::string(COLDSTART_SOURCE_DIR) + "/docs/bench.md");
  std::stringstream all;
  all << in.rdbuf();
  std::string text = all.str();
  auto start = text.find("\n## Phases\n");
  if (start == std::string::npos) return "";
  auto end = text.find("\n## ", start + 1);
  return text.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

TEST(Phases, EveryPhaseOfTheTableIsDocumented) {
  std::string docs = documented_phases();
  ASSERT_FALSE(docs.empty()) << "docs/bench.md has no ## Phases section";
  for (const auto& p : kPhaseTable) {
    std::string quoted(1, '`');
    quoted.append(p.name).push_back('`');
    EXPECT_NE(docs.find(quoted), std::string::npos)
        << p.name << " is in src/model/phases.h but not in docs/bench.md's phase list";
  }
}

TEST(Phases, EveryDocumentedPhaseIsInTheTable) {
  // The first column of each row: `name`, or `a`, `b` for phases documented together.
  const std::regex row(R"(^\| (`[^|]*) \|)"), name_in(R"(`([^`]+)`)");
  std::istringstream rows(documented_phases());
  int checked = 0;
  for (std::string line; std::getline(rows, line);) {
    std::smatch first;
    if (!std::regex_search(line, first, row)) continue;
    const std::string column = first[1];
    for (std::sregex_iterator it(column.begin(), column.end(), name_in), end; it != end; ++it) {
      std::string name = (*it)[1];
      if (name.starts_with("cover.")) name = "coverage";  // cover.<collective>.<size>
      EXPECT_NE(phase_info(name), nullptr) << name << " is documented but not in the phase table";
      ++checked;
    }
  }
  EXPECT_GE(checked, static_cast<int>(std::size(kPhaseTable)));
}

}  // namespace
}  // namespace coldstart
