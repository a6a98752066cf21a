#include "ncclbuild/detect.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "gpu/nccl.h"
#include "launch/process.h"
#include "launch/trial.h"
#include "util/clock.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/strings.h"

namespace coldstart::ncclbuild {
namespace fs = std::filesystem;

namespace {
// Where torch's NCCL is, in the order torch itself looks (its libtorch_global_deps' RPATH, its own lib/, then every
// sys.path entry's nvidia/nccl/lib): printed as JSON. Python 3.9 and later.
constexpr const char* kLocate = R"py(
import importlib.util, json, os, sys
out = {"python": sys.executable, "torch": None, "torch_version": None, "candidates": []}
spec = importlib.util.find_spec("torch")
if spec is not None and spec.origin:
    tdir = os.path.dirname(os.path.abspath(spec.origin))
    out["torch"] = tdir
    try:
        import importlib.metadata as md
        out["torch_version"] = md.version("torch")
    except Exception:
        pass
    rel = os.path.join("nvidia", "nccl", "lib", "libnccl.so.2")
    c = [os.path.join(os.path.dirname(tdir), rel), os.path.join(tdir, "lib", "libnccl.so.2")]
    c += [os.path.join(p, rel) for p in sys.path if p]
    out["candidates"] = c
print(json.dumps(out))
)py";
// The last max_bytes of a file (a command's output): what it said last is what explains how it ended. `cut` gets how
// many bytes before them were left out.
std::string read_tail(const std::string& path, size_t max_bytes, uint64_t* cut) {
  *cut = 0;
  std::string text;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return text;
  struct stat st {};
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
    const auto size = static_cast<uint64_t>(st.st_size);
    *cut = size > max_bytes ? size - max_bytes : 0;
    text.resize(static_cast<size_t>(size - *cut));
    const ssize_t n = ::pread(fd, text.data(), text.size(), static_cast<off_t>(*cut));
    text.resize(n > 0 ? static_cast<size_t>(n) : 0);
  }
  ::close(fd);
  return text;
}
}  // namespace

CommandOutput run_command(const std::vector<std::string>& argv, double timeout_s) {
  TempDir tmp("coldstart-cmd");
  const std::string out_path = tmp.path() + "/out";
  SpawnSpec spec;
  spec.argv = argv;
  spec.env = make_env({}, {});
  spec.output_path = out_path;
  CommandOutput r;
  pid_t pid = spawn(spec);
  const int64_t deadline = mono_ns() + static_cast<int64_t>(timeout_s * 1e9);
  for (;;) {
    if (auto st = try_reap(pid)) {
      r.wait_status = *st;
      break;
    }
    if (interrupted()) {  // Ctrl-C where the caller handles it (nccl build): the command goes with us
      kill_group(pid, SIGKILL);
      reap_group(pid);
      throw Interrupted("interrupted while " + shown(argv[0]) + " ran; nothing was changed");
    }
    if (mono_ns() > deadline) {
      kill_group(pid, SIGKILL);
      int st = 0;
      ::waitpid(pid, &st, 0);
      r.wait_status = st;
      r.timed_out = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  kill_group(pid, SIGKILL);  // what it started goes with it
  r.text = read_tail(out_path, kMaxCommandOutput, &r.cut_bytes);
  return r;
}

TorchNccl detect_torch_nccl(const std::string& python) {
  const std::string around = "; or give --version, the NCCL release to build";
  auto exe = find_on_path(python);
  if (!exe) throw InputError("--python " + shown(python) + ": no such interpreter on PATH" + around);
  CommandOutput r;
  try {
    r = run_command({*exe, "-c", kLocate}, 60);
  } catch (const RuntimeError& e) {
    throw InputError("--python " + shown(python) + ": cannot run it (" + e.what() + ")" + around);
  }
  std::string last;
  for (const auto& line : split(r.text, '\n'))
    if (!trim(line).empty()) last = std::string(trim(line));
  nlohmann::json j = nlohmann::json::parse(last, nullptr, false);
  if (r.timed_out || !WIFEXITED(r.wait_status) || WEXITSTATUS(r.wait_status) != 0 || !j.is_object())
    throw InputError("--python " + shown(python) + ": it did not say where torch is (" +
                     (r.timed_out ? std::string("no answer in 60 s") : describe_wait_status(r.wait_status)) +
                     (last.empty() ? "" : ": its last line " + shown(last, 200)) +
                     (r.cut_bytes ? fmt::format(", after {} bytes of other output", r.cut_bytes) : "") + ")" + around);
  TorchNccl t;
  t.python = j.value("python", *exe);
  if (!j["torch"].is_string())
    throw InputError("PyTorch is not installed for " + shown(t.python) + " (--python " + shown(python) +
                     "): run this with the interpreter of your job (--python PATH)" + around);
  t.torch_dir = j["torch"].get<std::string>();
  if (j["torch_version"].is_string()) t.torch_version = j["torch_version"].get<std::string>();
  std::vector<std::string> looked;
  for (const auto& c : j["candidates"]) {
    if (!c.is_string()) continue;
    const std::string path = c.get<std::string>();
    std::error_code ec;
    if (fs::is_regular_file(path, ec)) {
      t.library = path;  // as torch finds it (a link stays a link: the file named is what its job loads)
      break;
    }
    if (std::find(looked.begin(), looked.end(), path) == looked.end()) looked.push_back(path);
  }
  if (t.library.empty())
    throw InputError(
        "PyTorch at " + t.torch_dir + " carries no libnccl.so.2 (looked at " +
        join(std::vector<std::string>(looked.begin(), looked.begin() + std::min<size_t>(2, looked.size())), ", ") +
        " and sys.path's nvidia/nccl/lib; a torch with NCCL linked in takes no other)" + around);
  try {
    t.version = nccl::load(t.library).version_string();
  } catch (const std::exception& e) {
    std::string why = e.what();
    if (const std::string flag = "--nccl-lib " + t.library + ": "; why.starts_with(flag)) why = why.substr(flag.size());
    throw InputError("PyTorch's NCCL, " + t.library + ", cannot be read: " + why + around);
  }
  return t;
}

}  // namespace coldstart::ncclbuild
