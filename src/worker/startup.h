// The job's own start-up work (bench --startup), done by a rank on its main thread between creating its communicator
// and its first collective, as loading a model is: CPU work for a time, or host-to-device copies of a size.
#pragma once
#include <cstddef>

#include "model/spec.h"

namespace coldstart::worker {

// What the start-up leaves on the GPU (the "weights" it copied), kept until the rank ends, as a model's are. Memory
// readings leave it out, so that they still say what NCCL holds.
class StartupBuffer {
 public:
  StartupBuffer() = default;
  ~StartupBuffer();
  StartupBuffer(const StartupBuffer&) = delete;
  StartupBuffer& operator=(const StartupBuffer&) = delete;
  size_t bytes() const { return bytes_; }

 private:
  friend void run_startup(const Startup& s, StartupBuffer& keep, bool touch_gpu);
  void* device_ = nullptr;
  size_t bytes_ = 0;
};

// cpu:T spins for T; h2d:SIZE copies SIZE bytes from pageable host memory, a piece at a time (256 MiB unless
// h2d:SIZE/PIECE), into one device buffer on a stream of its own; h2d-pinned:SIZE the same from page-locked host
// memory. Without touch_gpu (--dry-run) the copies are skipped. Throws RuntimeError on CUDA errors.
void run_startup(const Startup& s, StartupBuffer& keep, bool touch_gpu);

}  // namespace coldstart::worker
