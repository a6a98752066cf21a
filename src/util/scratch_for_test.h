// Tests that write folders: each a fresh path inside one private folder of the test program, which goes with
// everything in it when the program ends (a test that fails leaves nothing behind in /tmp either).
#pragma once
#include <string>

#include "util/fs.h"
#include "util/random.h"

namespace coldstart::test_scratch {

// A path not yet there, `name` and a random suffix, in the program's scratch folder.
inline std::string fresh_path(const std::string& name) {
  static const TempDir root("coldstart-test-");
  return root.path() + "/" + name + "-" + random_hex(6);
}

}  // namespace coldstart::test_scratch
