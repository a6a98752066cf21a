// The release PyTorch loads, found in a real install's layout: a site-packages folder with torch (a stand-in package
// the interpreter finds through PYTHONPATH) and NVIDIA's nvidia/nccl/lib/libnccl.so.2 (the CUDA toolkit's real
// library, 2.28.9 on the build machine), or torch/lib/libnccl.so.2 as older wheels have it; and each way it can fail.
#include "ncclbuild/detect.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <functional>

#include "gpu/nccl.h"
#include "ncclbuild/fake_share_test.h"
#include "util/error.h"
#include "util/fs.h"

namespace coldstart::ncclbuild {
namespace {
namespace fs = std::filesystem;

std::string toolkit_nccl() { return std::string(COLDSTART_CUDA_LIB_DIR) + "/libnccl.so.2"; }

// PYTHONPATH set for the interpreter the detection runs, and put back after.
class PythonPath {
 public:
  explicit PythonPath(const std::string& path) {
    if (const char* old = std::getenv("PYTHONPATH")) saved_ = old, had_ = true;
    ::setenv("PYTHONPATH", path.c_str(), 1);
  }
  ~PythonPath() { had_ ? (void)::setenv("PYTHONPATH", saved_.c_str(), 1) : (void)::unsetenv("PYTHONPATH"); }

 private:
  std::string saved_;
  bool had_ = false;
};

// site/torch/__init__.py, and the library where `where` says (relative to site), linked to the toolkit's.
std::string fake_site(const TempDir& tmp, const std::string& where) {
  const fs::path site = fs::path(tmp.path()) / "site-packages";
  fs::create_directories(site / "torch");
  write_file_atomic((site / "torch" / "__init__.py").string(), "raise SystemExit('torch must not be imported')\n");
  if (!where.empty()) {
    fs::create_directories((site / where).parent_path());
    fs::create_symlink(toolkit_nccl(), site / where);
  }
  return site.string();
}
}  // namespace

TEST(NcclDetect, TheReleaseIsReadFromTheLibraryBesideTorch) {
  if (!fs::exists(toolkit_nccl())) GTEST_SKIP() << "no " << toolkit_nccl() << " (the CUDA toolkit's NCCL) here";
  const std::string want = nccl::load(toolkit_nccl()).version_string();
  for (const std::string where : {"nvidia/nccl/lib/libnccl.so.2", "torch/lib/libnccl.so.2"}) {
    TempDir tmp("coldstart-torch-");
    const std::string site = fake_site(tmp, where);
    PythonPath pp(site);
    TorchNccl t = detect_torch_nccl("python3");
    EXPECT_EQ(t.torch_dir, site + "/torch") << where;
    EXPECT_EQ(t.library, site + "/" + where);
    EXPECT_EQ(t.version, want);
    EXPECT_FALSE(t.python.empty());
  }
}

TEST(NcclDetect, NoTorchNoLibraryOrNoInterpreterIsRefusedNamingVersion) {
  TempDir tmp("coldstart-torch-");
  {
    PythonPath pp(tmp.path());  // no torch there (and none installed on the build machine's python3)
    std::string e = testing::input_error_of([] { detect_torch_nccl("python3"); });
    if (e.empty()) GTEST_SKIP() << "this python3 has a torch of its own";
    EXPECT_NE(e.find("PyTorch is not installed for"), std::string::npos) << e;
    EXPECT_NE(e.find("--version"), std::string::npos) << e;
  }
  {
    PythonPath pp(fake_site(tmp, ""));
    std::string e = testing::input_error_of([] { detect_torch_nccl("python3"); });
    EXPECT_NE(e.find("carries no libnccl.so.2"), std::string::npos) << e;
    EXPECT_NE(e.find("nvidia/nccl/lib/libnccl.so.2"), std::string::npos) << e;
    EXPECT_NE(e.find("--version"), std::string::npos) << e;
  }
  {
    // A file that is no NCCL where torch's library would be
    const std::string site = tmp.path() + "/site-packages";
    fs::create_directories(site + "/nvidia/nccl/lib");
    write_file_atomic(site + "/nvidia/nccl/lib/libnccl.so.2", "not a library");
    PythonPath pp(site);
    std::string e = testing::input_error_of([] { detect_torch_nccl("python3"); });
    EXPECT_NE(e.find("PyTorch's NCCL, " + site + "/nvidia/nccl/lib/libnccl.so.2, cannot be read: not a shared library"),
              std::string::npos)
        << e;
  }
  std::string e = testing::input_error_of([] { detect_torch_nccl("no-such-python3"); });
  EXPECT_NE(e.find("--python no-such-python3: no such interpreter on PATH"), std::string::npos) << e;
  e = testing::input_error_of([] { detect_torch_nccl("/bin/false"); });
  EXPECT_NE(e.find("it did not say where torch is"), std::string::npos) << e;
}

}  // namespace coldstart::ncclbuild
