#include "worker/startup.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>

#include "gpu/cuda.h"
#include "util/clock.h"

namespace coldstart::worker {

StartupBuffer::~StartupBuffer() {
  if (device_) cudaFree(device_);
}

void run_startup(const Startup& s, StartupBuffer& keep, bool touch_gpu) {
  switch (s.kind) {
    case Startup::Kind::none: return;
    case Startup::Kind::cpu: {
      // Arithmetic the compiler cannot drop, checking the clock every few thousand steps.
      const int64_t until = mono_ns() + static_cast<int64_t>(s.seconds * 1e9);
      volatile uint64_t x = 88172645463325252ull;
      while (mono_ns() < until)
        for (int i = 0; i < 4096; ++i) {
          uint64_t v = x;
          v ^= v << 13, v ^= v >> 7, v ^= v << 17;
          x = v;
        }
      return;
    }
    case Startup::Kind::h2d:
    case Startup::Kind::h2d_pinned: {
      if (!touch_gpu) return;
      const size_t chunk = std::min<size_t>(s.bytes, s.piece);
      const bool pinned = s.kind == Startup::Kind::h2d_pinned;
      // Pageable (and touched, as a file read leaves it) or page-locked: the driver copies pageable memory through
      // staging buffers, holding other threads' driver calls back for each chunk; page-locked memory is copied by DMA.
      std::unique_ptr<char[]> pageable;
      char* host = nullptr;
      if (pinned) {
        gpu::cuda_check(cudaMallocHost(reinterpret_cast<void**>(&host), chunk), "cudaMallocHost (start-up)");
      } else {
        pageable.reset(new char[chunk]);
        host = pageable.get();
      }
      std::memset(host, 1, chunk);
      gpu::cuda_check(cudaMalloc(&keep.device_, s.bytes), "cudaMalloc (start-up weights)");
      keep.bytes_ = s.bytes;
      cudaStream_t stream = nullptr;
      gpu::cuda_check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
      for (size_t off = 0; off < s.bytes; off += chunk)
        gpu::cuda_check(cudaMemcpyAsync(static_cast<char*>(keep.device_) + off, host, std::min(chunk, s.bytes - off),
                                        cudaMemcpyHostToDevice, stream),
                        "cudaMemcpyAsync (start-up weights)");
      gpu::cuda_check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
      cudaStreamDestroy(stream);
      if (pinned) cudaFreeHost(host);
      return;
    }
  }
}

}  // namespace coldstart::worker
