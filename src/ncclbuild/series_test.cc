// The series as nccl build reads it: the project's own ports, its hash computed as build_nccl.sh computes it, and
// where the shipped files are found (an install's share/coldstart beside the binary, $COLDSTART_SHARE_DIR, the
// checkout a build folder's binary was made from).
#include "ncclbuild/series.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <functional>

#include "ncclbuild/fake_share_test.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/run_for_test.h"

namespace coldstart::ncclbuild {
namespace {
namespace fs = std::filesystem;
const Share kCheckout{COLDSTART_SOURCE_DIR, "the source checkout"};

}  // namespace

TEST(NcclSeries, ThePortsAreTheReleaseFoldersOfTheSeriesWithTheirTagsAndCommits) {
  auto ports = read_ports(kCheckout);
  ASSERT_EQ(ports.size(), 2u);
  EXPECT_EQ(ports[0].version, "2.28.9");
  EXPECT_EQ(ports[0].tag, "v2.28.9-1");
  EXPECT_EQ(ports[0].commit, "dbc86fd06e8b0c4517b95d8958a09ccacf9520c9");
  EXPECT_EQ(ports[1].version, "2.30.7");
  EXPECT_EQ(ports[1].tag, "v2.30.7-1");
  EXPECT_EQ(ports[1].commit, "73cf112295c33aee2b895f329f592f2a9b4b0f97");
  for (const auto& p : ports) {
    ASSERT_EQ(p.patches.size(), 8u) << p.version;
    EXPECT_EQ(p.patches[0].rfind("v" + p.version + "/0001-", 0), 0u) << p.patches[0];
  }
  EXPECT_EQ(port_list(ports), "2.28.9, 2.30.7");
  // build_nccl.sh knows the same commits: the two never disagree on a release
  const std::string script = read_file(kCheckout.script());
  for (const auto& p : ports) EXPECT_NE(script.find("[" + p.version + "]=" + p.commit), std::string::npos) << p.version;
  EXPECT_EQ(release_url(ports[1]), "https://github.com/NVIDIA/nccl/archive/refs/tags/v2.30.7-1.tar.gz");
}

TEST(NcclSeries, TheHashIsBuildNcclShsOwn) {
  for (const auto& p : read_ports(kCheckout)) {
    auto out = test_cli::run_shell("cd " + kCheckout.series_dir() + " && for p in $(grep '^v" + p.version +
                                   "/' series); do sha256sum \"$p\"; done | sha256sum | cut -c1-16");
    ASSERT_EQ(out.status, 0) << out.text;
    EXPECT_EQ(series_hash(kCheckout, p) + "\n", out.text) << p.version;
  }
}

TEST(NcclSeries, OnlyReleaseNumbersAreVersions) {
  for (const char* v : {"2.30.7", "2.28.9", "10.0.1"}) EXPECT_TRUE(is_release(v)) << v;
  for (const char* v : {"", "2.30", "v2.30.7", "2.30.7-1", "2.30.7+peer-regions", "latest", "2..7"})
    EXPECT_FALSE(is_release(v)) << v;
}

TEST(NcclSeries, TheInstalledFilesBesideTheBinaryComeFirstThenTheCheckout) {
  testing::FakeShare installed_share;
  TempDir wheel("coldstart-wheel-");
  // The wheel's layout: site-packages/coldstart/_bin/coldstart and site-packages/coldstart/share/coldstart/
  const fs::path pkg = fs::path(wheel.path()) / "coldstart";
  fs::create_directories(pkg / "_bin");
  fs::create_directories(pkg / "share");
  fs::copy(installed_share.path(), pkg / "share" / "coldstart", fs::copy_options::recursive);
  ::unsetenv("COLDSTART_SHARE_DIR");
  Share s = find_share((pkg / "_bin" / "coldstart").string(), COLDSTART_SOURCE_DIR);
  EXPECT_EQ(s.root, (pkg / "share" / "coldstart").string());
  EXPECT_EQ(s.how, "installed beside the binary");
  // A build folder's binary: nothing beside it, the checkout it was built from
  s = find_share("/nonexistent/build/coldstart", COLDSTART_SOURCE_DIR);
  EXPECT_EQ(s.root, COLDSTART_SOURCE_DIR);
  // $COLDSTART_SHARE_DIR before both, and refused when it holds no series
  ::setenv("COLDSTART_SHARE_DIR", installed_share.path().c_str(), 1);
  EXPECT_EQ(find_share((pkg / "_bin" / "coldstart").string(), COLDSTART_SOURCE_DIR).root, installed_share.path());
  ::setenv("COLDSTART_SHARE_DIR", "/nonexistent", 1);
  EXPECT_NE(
      testing::input_error_of([] { find_share("/x/coldstart", COLDSTART_SOURCE_DIR); }).find("COLDSTART_SHARE_DIR"),
      std::string::npos);
  ::unsetenv("COLDSTART_SHARE_DIR");
  // Nothing anywhere: the places looked at, and the fix
  std::string e = testing::runtime_error_of([] { find_share("/nonexistent/bin/coldstart", "/nonexistent/checkout"); });
  EXPECT_NE(e.find("/nonexistent/share/coldstart"), std::string::npos) << e;
  EXPECT_NE(e.find("reinstall the coldstart wheel"), std::string::npos) << e;
}

}  // namespace coldstart::ncclbuild
