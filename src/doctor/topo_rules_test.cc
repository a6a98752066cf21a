// NCCL_TOPO_FILE (facts_topo.cc and the topo-file rule): what a topology file must hold for NCCL, read from real
// files, and the finding on the recorded 2x H200 fact set with the file's fact changed.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "doctor/rules.h"
#include "doctor/test_facts.h"
#include "util/error.h"
#include "util/fs.h"

namespace coldstart::doctor {
namespace {

// NVIDIA/nccl#1726's shape: a plugin's file for its instance type, here whole, then with one attribute taken out.
constexpr std::string_view kTopo = R"(<system version="1">
  <cpu numaid="0" affinity="ffffffff" arch="x86_64" vendor="GenuineIntel" familyid="6" modelid="143">
    <pci busid="0000:53:00.0" class="0x060400" link_speed="32.0 GT/s PCIe" link_width="16">
      <gpu dev="0" sm="90" rank="0" gdr="1"/>
    </pci>
  </cpu>
  <cpu numaid="1" affinity="ffffffff00000000" arch="x86_64" vendor="AuthenticAMD">
  </cpu>
</system>
)";

std::string without(std::string_view xml, std::string_view attr) {
  std::string s(xml);
  const size_t at = s.find(attr);
  s.erase(at, s.find('"', s.find('"', at) + 1) + 1 - at);
  return s;
}

std::optional<Finding> topo_finding(const TopoFileFact& t) {
  Facts f = test::recorded_facts("h200x2.json");
  f.topo_file = t;
  for (Finding& x : evaluate({&f, {}, nullptr}))
    if (x.id == "topo-file") return x;
  return std::nullopt;
}

TEST(TopoFile, AWholeFileHasNothingNcclLacks) { EXPECT_EQ(topo_xml_problem(kTopo), ""); }

TEST(TopoFile, ACpuWithoutWhatNcclRequiresIsNamedWithItsLine) {
  EXPECT_NE(topo_xml_problem(without(kTopo, "arch=")).find("line 2: a <cpu> element without its arch attribute"),
            std::string::npos);
  EXPECT_NE(topo_xml_problem(without(kTopo, "numaid=\"1\"")).find("line 7: a <cpu> element without its numaid"),
            std::string::npos);
  // The vendor on x86_64 only, and an Intel CPU's family and model; an AMD CPU needs neither.
  EXPECT_NE(topo_xml_problem(without(kTopo, "vendor=\"GenuineIntel\"")).find("without its vendor"), std::string::npos);
  EXPECT_NE(topo_xml_problem(without(kTopo, "modelid=")).find("without its modelid"), std::string::npos);
  std::string arm = without(without(kTopo, "vendor=\"GenuineIntel\""), "vendor=\"AuthenticAMD\"");
  for (size_t at = arm.find("x86_64"); at != std::string::npos; at = arm.find("x86_64")) arm.replace(at, 6, "arm64");
  EXPECT_EQ(topo_xml_problem(arm), "");
}

TEST(TopoFile, NoSystemOrACutTagIsNamed) {
  EXPECT_NE(topo_xml_problem("<cpu numaid=\"0\" arch=\"arm64\"/>").find("no <system> element"), std::string::npos);
  EXPECT_NE(topo_xml_problem("<system><cpu numaid=\"0\"").find("never closes"), std::string::npos);
  EXPECT_EQ(topo_xml_problem("<system><cpuset/></system>"), "");  // another element's name, not a <cpu>
}

TEST(TopoFile, TheFileIsReadOrSaysWhyNot) {
  const TempDir dir("coldstart-topo-");
  const std::string good = dir.path() + "/good.xml", bad = dir.path() + "/bad.xml";
  write_file_atomic(good, std::string(kTopo));
  write_file_atomic(bad, without(kTopo, "arch="));
  EXPECT_EQ(read_topo_file(good).readable, 1);
  EXPECT_EQ(read_topo_file(good).problem, "");
  EXPECT_NE(read_topo_file(bad).problem.find("arch"), std::string::npos);
  const TopoFileFact missing = read_topo_file(good + ".not-there");
  EXPECT_EQ(missing.readable, 0);
  EXPECT_NE(missing.problem.find("cannot be read"), std::string::npos);
  EXPECT_EQ(read_topo_file("").readable, -1);             // unset: nothing read
  const TopoFileFact zero = read_topo_file("/dev/zero");  // never read: a device, which NCCL opens and cannot use
  EXPECT_EQ(zero.readable, 1);
  EXPECT_EQ(zero.problem, "a device, not a regular file; not a topology file");
  const std::string fifo = dir.path() + "/topo.fifo";  // a FIFO without a writer: refused at once, never waited on
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(read_topo_file(fifo).problem, "a FIFO (named pipe), not a regular file; not a topology file");
  const std::string big = dir.path() + "/big.xml";
  write_file_atomic(big, std::string(kTopo) + std::string(17 << 20, ' '));
  EXPECT_NE(read_topo_file(big).problem.find("larger than the 16 MiB"), std::string::npos)
      << read_topo_file(big).problem;
}

TEST(TopoFile, DoctorNamesAFileNcclCannotUseAndItsFix) {
  EXPECT_FALSE(topo_finding({}));                             // unset
  EXPECT_FALSE(topo_finding({"/etc/nccl-topo.xml", 1, ""}));  // a file with what NCCL needs
  auto d = topo_finding({"/opt/plugin/p5-topo.xml", 1, topo_xml_problem(without(kTopo, "arch="))});
  ASSERT_TRUE(d);
  EXPECT_EQ(d->severity, Severity::error);
  EXPECT_NE(d->evidence.find("NCCL_TOPO_FILE=/opt/plugin/p5-topo.xml: line 2"), std::string::npos) << d->evidence;
  EXPECT_NE(d->evidence.find("NVIDIA/nccl#1726"), std::string::npos);
  ASSERT_FALSE(d->fixes.empty());
  EXPECT_NE(d->fixes[0].what.find("unset NCCL_TOPO_FILE"), std::string::npos);
  // One NCCL cannot open it skips (an INFO line) and detects the node itself: a warning, not a failed init. A path
  // with a newline stays one line.
  d = topo_finding({"/tmp/a\nb.xml", 0, "cannot be read: No such file or directory"});
  ASSERT_TRUE(d);
  EXPECT_EQ(d->severity, Severity::warn);
  EXPECT_NE(d->evidence.find("detects the node itself"), std::string::npos) << d->evidence;
  EXPECT_EQ(d->evidence.find('\n'), std::string::npos) << d->evidence;
}

TEST(TopoFile, AFactSetWithAnImpossibleReadableIsRefused) {
  nlohmann::json j = test::recorded_facts_json("h200x2.json");
  j["topo_file"] = {{"path", "/x.xml"}, {"readable", 7}, {"problem", ""}};
  EXPECT_THROW(facts_from_json(j), InputError);
}

}  // namespace
}  // namespace coldstart::doctor
