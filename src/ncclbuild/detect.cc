#include "ncclbuild/detect.h"

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "gpu/nccl.h"
#include "launch/trial.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/process.h"
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
}  // namespace

RunResult run_tool(const std::vector<std::string>& argv, double timeout_s) {
  RunSpec spec;
  spec.argv = argv;
  spec.timeout_s = timeout_s;
  spec.max_output = kMaxCommandOutput;
  spec.keep_tail = true;
  spec.with_stderr = true;
  spec.stop = launch::interrupted;  // Ctrl-C where the caller handles it (nccl build): the command goes with us
  RunResult r = run_command(spec);
  switch (r.end) {
    case RunEnd::not_found:
    case RunEnd::not_executable: throw RuntimeError("cannot start " + argv[0] + ": " + r.why());
    case RunEnd::cannot_start: throw RuntimeError(r.why());
    case RunEnd::stopped: throw Interrupted("interrupted while " + shown(argv[0]) + " ran; nothing was changed");
    default: return r;
  }
}

TorchNccl detect_torch_nccl(const std::string& python) {
  const std::string around = "; or give --version, the NCCL release to build";
  auto exe = find_on_path(python);
  if (!exe) throw InputError("--python " + shown(python) + ": no such interpreter on PATH" + around);
  RunResult r;
  try {
    r = run_tool({*exe, "-c", kLocate}, 60);
  } catch (const RuntimeError& e) {
    throw InputError("--python " + shown(python) + ": cannot run it (" + e.what() + ")" + around);
  }
  std::string last;
  for (const auto& line : split(r.output, '\n'))
    if (!trim(line).empty()) last = std::string(trim(line));
  nlohmann::json j = nlohmann::json::parse(last, nullptr, false);
  if (!r.ok() || !j.is_object())
    throw InputError("--python " + shown(python) + ": it did not say where torch is (" + r.why() +
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
