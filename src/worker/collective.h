// The collectives a trial can time, with nccl-tests' conventions for sizes and bus bandwidth, so that numbers compare.
#pragma once
#include <cstddef>

#include "gpu/nccl.h"
#include "model/spec.h"

namespace coldstart::worker {

// Buffer sizes for one call moving `size` bytes (nccl-tests' "size": the larger of send and receive) among n ranks.
struct Shape {
  size_t send_bytes = 0;
  size_t recv_bytes = 0;
  size_t count = 0;  // the element count argument (float32), per rank or per peer as the call takes it
};
Shape shape_for(Collective c, size_t size, int nranks);

// nccl-tests' factor from algorithm bandwidth (size / time) to bus bandwidth.
double bus_factor(Collective c, int nranks);

// Enqueues one call on stream. For sendrecv each rank sends to rank+1 and receives from rank-1 (a ring); all_to_all is
// grouped send/recv with every peer.
nccl::Result enqueue(const nccl::Table& t, Collective c, const Shape& s, const void* send, void* recv, int rank,
                     int nranks, nccl::Comm comm, cudaStream_t stream);

}  // namespace coldstart::worker
