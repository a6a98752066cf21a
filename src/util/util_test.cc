#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <memory>

#include "util/fs.h"
#include "util/random.h"
#include "util/stats.h"
#include "util/strings.h"

namespace coldstart {

// A TempDir goes with the process that made it: a forked child that ends with exit(), running the destructors of its
// copies, leaves it to the parent, which removes it.
TEST(TempDir, ItGoesWithTheProcessThatMadeIt) {
  auto dir = std::make_unique<TempDir>("coldstart-tempdir-");
  const std::string path = dir->path();
  const pid_t pid = ::fork();
  if (pid == 0) {
    dir.reset();
    ::_exit(std::filesystem::exists(path) ? 0 : 1);
  }
  int status = -1;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the child removed its parent's folder";
  EXPECT_TRUE(std::filesystem::exists(path));
  dir.reset();
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST(Strings, SplitKeepsEmptyFields) {
  EXPECT_EQ(split("a,,b", ','), (std::vector<std::string>{"a", "", "b"}));
  EXPECT_EQ(split("", ','), (std::vector<std::string>{""}));
  EXPECT_EQ(split(",0", ','), (std::vector<std::string>{"", "0"}));
}

TEST(Strings, AsciiCase) {
  EXPECT_EQ(lower("ETH0 Docker-1"), "eth0 docker-1");
  EXPECT_EQ(upper("http_proxy"), "HTTP_PROXY");
  EXPECT_EQ(lower("\xc3\x89t\xc3\xa9"), "\xc3\x89t\xc3\xa9");  // "Été": UTF-8 bytes as they are
  EXPECT_TRUE(iequals("Docker0", "dOCKER0"));
  EXPECT_TRUE(iequals("", ""));
  EXPECT_FALSE(iequals("docker0", "docker"));
  EXPECT_FALSE(iequals("a", "b"));
}

TEST(Strings, UrlCredentialsAreHidden) {
  EXPECT_EQ(redact_url_credentials("http://user:secret@proxy:3128/"), "http://***@proxy:3128/");
  EXPECT_EQ(redact_url_credentials("user:pw@proxy:3128"), "***@proxy:3128");
  EXPECT_EQ(redact_url_credentials("http://proxy:3128/a@b"), "http://proxy:3128/a@b");
  EXPECT_EQ(redact_url_credentials("http://127.0.0.1:7890"), "http://127.0.0.1:7890");
}

TEST(Strings, ShownValuesAreOneLineWithControlCharactersEscaped) {
  EXPECT_EQ(shown("10.0.0.1"), "10.0.0.1");
  EXPECT_EQ(shown("a\nb\tc\rd"), "a\\nb\\tc\\rd");
  EXPECT_EQ(shown("\x1b[2J\x7f"), "\\x1b[2J\\x7f");
  EXPECT_EQ(shown(std::string("a\0b", 3)), "a\\x00b");
  EXPECT_EQ(shown("\xc2\x85x"), "\\u0085x");                                 // NEL, a C1 control in UTF-8
  EXPECT_EQ(shown("caf\xc3\xa9 \xe2\x86\x92"), "caf\xc3\xa9 \xe2\x86\x92");  // other UTF-8 as it is
  EXPECT_EQ(shown(std::string(100000, 'x'), 4), "xxxx...(100000 bytes)");
  EXPECT_EQ(shown("\n\n", 1), "\\n...(2 bytes)");
}

TEST(Strings, ParseSize) {
  EXPECT_EQ(parse_size("64MiB"), 64ull << 20);
  EXPECT_EQ(parse_size("64M"), 64ull << 20);
  EXPECT_EQ(parse_size("1G"), 1ull << 30);
  EXPECT_EQ(parse_size("1.5KiB"), 1536u);
  EXPECT_EQ(parse_size("4096"), 4096u);
  EXPECT_EQ(parse_size("0"), 0u);
  EXPECT_FALSE(parse_size("64 parsecs"));
  EXPECT_FALSE(parse_size("-1"));
  EXPECT_FALSE(parse_size(""));
  EXPECT_FALSE(parse_size("0.3"));  // not a whole number of bytes
}

TEST(Strings, ParseDuration) {
  EXPECT_DOUBLE_EQ(*parse_duration("30"), 30);
  EXPECT_DOUBLE_EQ(*parse_duration("500ms"), 0.5);
  EXPECT_DOUBLE_EQ(*parse_duration("2m"), 120);
  EXPECT_FALSE(parse_duration("soon"));
}

TEST(Strings, HexRoundTrip) {
  std::string bytes("\x00\x01\xfe\xff", 4);
  EXPECT_EQ(hex(bytes.data(), bytes.size()), "0001feff");
  EXPECT_EQ(unhex("0001feff"), bytes);
  EXPECT_FALSE(unhex("abc"));
  EXPECT_FALSE(unhex("zz"));
}

TEST(Strings, FormatBytes) {
  EXPECT_EQ(format_bytes(512), "512 B");
  EXPECT_EQ(format_bytes(64.0 * 1024 * 1024), "64 MiB");
  EXPECT_EQ(format_bytes(1.5 * 1024 * 1024 * 1024), "1.5 GiB");
}

TEST(Stats, MedianPercentilesAndExtremes) {
  Stats s = summarize({5, 1, 4, 2, 3});
  EXPECT_EQ(s.n, 5);
  EXPECT_DOUBLE_EQ(s.median, 3);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 5);
  EXPECT_DOUBLE_EQ(s.mean, 3);
  EXPECT_DOUBLE_EQ(s.p90, 4.6);  // numpy.percentile([1..5], 90)
  Stats even = summarize({1, 2, 3, 4});
  EXPECT_DOUBLE_EQ(even.median, 2.5);
  EXPECT_EQ(summarize({}).n, 0);
}

TEST(Rng, SameSeedSameShuffleAndAPermutation) {
  std::vector<int> a(50), b;
  for (int i = 0; i < 50; ++i) a[static_cast<size_t>(i)] = i;
  b = a;
  Rng(42).shuffle(a);
  Rng(42).shuffle(b);
  EXPECT_EQ(a, b);
  std::vector<int> c = a;
  std::sort(c.begin(), c.end());
  for (int i = 0; i < 50; ++i) EXPECT_EQ(c[static_cast<size_t>(i)], i);
  std::vector<int> d = c;
  Rng(43).shuffle(d);
  EXPECT_NE(a, d);
}

TEST(Random, TokensDiffer) {
  std::string a = random_hex(16), b = random_hex(16);
  EXPECT_EQ(a.size(), 32u);
  EXPECT_NE(a, b);
}

TEST(BusId, OneFormWhoeverWroteIt) {
  EXPECT_EQ(format_bus_id(0, 0, 6), "0000:00:06.0");
  EXPECT_EQ(format_bus_id(0x1, 0x3b, 0x1f, 1), "0001:3b:1f.1");
  EXPECT_EQ(normalize_bus_id("00000000:00:06.0"), "0000:00:06.0");  // torch and NVML: an 8-digit domain
  EXPECT_EQ(normalize_bus_id("0000:3B:00.0"), "0000:3b:00.0");
  EXPECT_EQ(normalize_bus_id("0000:00:06.0"), "0000:00:06.0");
  EXPECT_EQ(normalize_bus_id("60"), "60");  // NCCL's packed form is not a bus id string: left alone
  EXPECT_EQ(normalize_bus_id(""), "");
}

}  // namespace coldstart
