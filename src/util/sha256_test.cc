// SHA-256 against FIPS 180-4's examples and against coreutils' sha256sum at every length around the block edges
// (55, 56, 63, 64 bytes: where the padding takes a second block).
#include "util/sha256.h"

#include <gtest/gtest.h>

#include <string>

#include "util/run_for_test.h"

namespace coldstart {

TEST(Sha256, FipsExamples) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(sha256_hex(std::string(1000000, 'a')), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, AgreesWithSha256sumAtEveryLengthAroundTheBlockEdges) {
  for (size_t n : {1, 55, 56, 57, 63, 64, 65, 119, 120, 127, 128, 129}) {
    std::string text;
    for (size_t i = 0; i < n; ++i) text += static_cast<char>('a' + i % 26);
    auto out = test_cli::run_shell("printf '%s' '" + text + "' | sha256sum | cut -c1-64");
    ASSERT_EQ(out.status, 0);
    EXPECT_EQ(sha256_hex(text) + "\n", out.text) << n << " bytes";
  }
}

}  // namespace coldstart
