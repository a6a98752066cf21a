#include "launch/python.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "util/clock.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/process.h"

namespace coldstart::launch {

std::pair<std::string, std::string> PythonSide::pythonpath_env() const {
  const char* inherited = std::getenv("PYTHONPATH");
  return {"PYTHONPATH", inherited && *inherited ? path + ":" + inherited : path};
}

PythonSide find_python_side(const std::string& who) {
  PythonSide py;
  const char* python = std::getenv("COLDSTART_PYTHON");
  auto found = find_on_path(python && *python ? python : "python3");
  if (!found)
    throw InputError(who + ": no python3 on PATH; install Python 3 or set COLDSTART_PYTHON to an interpreter");
  py.python = *found;
  namespace fs = std::filesystem;
  std::vector<fs::path> candidates;
  if (const char* p = std::getenv("COLDSTART_PYTHONPATH"); p && *p) candidates.emplace_back(p);
  fs::path exe_dir = fs::path(self_exe()).parent_path();
  candidates.push_back(exe_dir / ".." / "python");  // the source tree (build/coldstart)
  candidates.push_back(exe_dir / ".." / "..");      // a wheel: site-packages/coldstart/_bin/coldstart
  for (const auto& c : candidates)
    if (fs::exists(c / "coldstart" / "__init__.py")) {
      py.path = fs::weakly_canonical(c).string();
      return py;
    }
  throw InputError(who + ": coldstart's Python package (python/coldstart) is not beside " + self_exe() +
                   "; set COLDSTART_PYTHONPATH to the folder that holds coldstart");
}

void require_python_module(const PythonSide& py, const std::string& module, const std::string& who,
                           const std::string& install) {
  SpawnSpec check;
  check.argv = {py.python, "-c",
                "import importlib.util, sys; sys.exit(0 if importlib.util.find_spec(sys.argv[1]) else 3)", module};
  check.env = make_env({py.pythonpath_env()}, {});
  check.output_path = "/dev/null";
  int status = 0;
  try {
    pid_t pid = spawn(check);
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
  } catch (const RuntimeError& e) {
    throw InputError(who + ": cannot run " + py.python + " (" + e.what() + "); set COLDSTART_PYTHON to an interpreter");
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return;
  throw InputError(who + ": " + module + " is not installed for " + py.python + "; install it with: " + py.python +
                   " -m pip install " + install + " (or set COLDSTART_PYTHON to an interpreter that has it)");
}

RayInstance::RayInstance(const PythonSide& py, int num_gpus, const std::string& visible, int timeout_s) {
  int in[2], out[2];
  if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0)
    throw RuntimeError(std::string("cannot start Ray: pipe: ") + std::strerror(errno));
  std::vector<std::pair<std::string, std::string>> set{py.pythonpath_env()};
  if (!visible.empty()) set.emplace_back("CUDA_VISIBLE_DEVICES", visible);
  SpawnSpec helper;
  helper.argv = {py.python, "-m", "coldstart.ray_cluster", "--num-gpus", std::to_string(num_gpus)};
  helper.env = make_env(set, {});
  helper.stdin_fd = in[0];
  helper.stdout_fd = out[1];
  helper.death_signal = SIGTERM;  // the helper shuts Ray down on its way out
  try {
    pid_ = spawn(helper);
  } catch (const RuntimeError& e) {
    for (int fd : {in[0], in[1], out[0], out[1]}) ::close(fd);
    throw RuntimeError(std::string("cannot start Ray: ") + e.what());
  }
  ::close(in[0]);
  ::close(out[1]);
  stdin_fd_ = in[1];
  // Read its lines until it says where Ray listens, or why it cannot.
  std::string buf;
  const int64_t deadline = mono_ns() + int64_t{timeout_s} * 1'000'000'000;
  std::string problem;
  while (address_.empty() && problem.empty()) {
    int64_t left_ms = (deadline - mono_ns()) / 1'000'000;
    if (left_ms <= 0) {
      problem = "Ray did not start within " + std::to_string(timeout_s) + " s";
      break;
    }
    pollfd p{out[0], POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left_ms)) <= 0) continue;
    char chunk[4096];
    ssize_t n = ::read(out[0], chunk, sizeof chunk);
    if (n <= 0) {
      problem = "Ray's helper exited before it said where Ray listens";
      break;
    }
    buf.append(chunk, static_cast<size_t>(n));
    for (size_t nl; (nl = buf.find('\n')) != std::string::npos; buf.erase(0, nl + 1)) {
      std::string line = buf.substr(0, nl);
      if (line.rfind("address ", 0) == 0)
        address_ = line.substr(8);
      else if (line.rfind("ray ", 0) == 0)
        version_ = line.substr(4);
      else if (line.rfind("error ", 0) == 0)
        problem = line.substr(6);
    }
  }
  // The version line follows the address at once.
  for (int i = 0; i < 50 && version_.empty() && !address_.empty(); ++i) {
    pollfd p{out[0], POLLIN, 0};
    if (::poll(&p, 1, 20) <= 0) continue;
    char chunk[512];
    ssize_t n = ::read(out[0], chunk, sizeof chunk);
    if (n <= 0) break;
    buf.append(chunk, static_cast<size_t>(n));
    if (auto at = buf.find("ray "); at != std::string::npos && buf.find('\n', at) != std::string::npos)
      version_ = buf.substr(at + 4, buf.find('\n', at) - at - 4);
  }
  ::close(out[0]);
  if (!problem.empty()) {
    stop();
    if (problem.rfind("Ray is not installed", 0) == 0) throw InputError("--launcher ray: " + problem);
    throw RuntimeError("--launcher ray: " + problem);
  }
}

RayInstance::~RayInstance() { stop(); }

void RayInstance::stop() {
  if (stdin_fd_ >= 0) ::close(stdin_fd_);  // the helper shuts Ray down on EOF
  stdin_fd_ = -1;
  if (pid_ <= 0) return;
  for (int i = 0; i < 300; ++i) {  // up to 15 s for ray.shutdown()
    if (::waitpid(pid_, nullptr, WNOHANG) == pid_) {
      pid_ = 0;
      return;
    }
    ::usleep(50'000);
  }
  ::kill(-pid_, SIGKILL);
  ::waitpid(pid_, nullptr, 0);
  pid_ = 0;
}

}  // namespace coldstart::launch
