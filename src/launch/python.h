// coldstart's Python side (python/coldstart: the torch probe and the Ray launcher) as the lab starts it: which
// interpreter, where the package is, and a local Ray instance owned by the run.
#pragma once
#include <sys/types.h>

#include <string>
#include <utility>
#include <vector>

namespace coldstart::launch {

struct PythonSide {
  std::string python;  // the interpreter's path: $COLDSTART_PYTHON, else python3 on PATH
  std::string path;    // the folder holding coldstart/: $COLDSTART_PYTHONPATH, else beside the binary
  // PYTHONPATH for the children: ours first, then the one inherited.
  std::pair<std::string, std::string> pythonpath_env() const;
};

// Throws InputError naming `who` (the flag that needs Python) and the fix when either is missing.
PythonSide find_python_side(const std::string& who);

// Throws InputError naming `who` and the install command when `module` cannot be imported by py.python (with the
// PYTHONPATH ranks get). Looks the module up without importing it.
void require_python_module(const PythonSide& py, const std::string& module, const std::string& who,
                           const std::string& install);

// A local Ray instance for one bench run (python -m coldstart.ray_cluster): started with the run's GPUs
// declared, stopped when this object goes (or when the lab dies: its stdin closes).
class RayInstance {
 public:
  // visible: CUDA_VISIBLE_DEVICES for Ray, so that the GPU ids it hands out are the run's devices.
  // Throws InputError when Ray is not installed (with the install command), RuntimeError when it does not start.
  RayInstance(const PythonSide& py, int num_gpus, const std::string& visible, int timeout_s = 180);
  ~RayInstance();
  RayInstance(const RayInstance&) = delete;
  RayInstance& operator=(const RayInstance&) = delete;
  const std::string& address() const { return address_; }
  const std::string& version() const { return version_; }

 private:
  void stop();
  pid_t pid_ = 0;
  int stdin_fd_ = -1;
  std::string address_, version_;
};

}  // namespace coldstart::launch
