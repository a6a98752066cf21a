#include "worker/collective.h"

#include <algorithm>

namespace coldstart::worker {

Shape shape_for(Collective c, size_t size, int nranks) {
  auto n = static_cast<size_t>(std::max(nranks, 1));
  size_t elems = std::max<size_t>(size / sizeof(float), n);  // at least one element per rank
  elems -= elems % n;
  size_t bytes = elems * sizeof(float);
  switch (c) {
    case Collective::all_reduce:
    case Collective::broadcast:
    case Collective::sendrecv: return {bytes, bytes, elems};
    case Collective::all_gather: return {bytes / n, bytes, elems / n};
    case Collective::reduce_scatter: return {bytes, bytes / n, elems / n};
    case Collective::all_to_all: return {bytes, bytes, elems / n};
  }
  return {};
}

double bus_factor(Collective c, int nranks) {
  double n = nranks;
  switch (c) {
    case Collective::all_reduce: return 2 * (n - 1) / n;
    case Collective::all_gather:
    case Collective::reduce_scatter:
    case Collective::all_to_all: return (n - 1) / n;
    case Collective::broadcast:
    case Collective::sendrecv: return 1;
  }
  return 1;
}

nccl::Result enqueue(const nccl::Table& t, Collective c, const Shape& s, const void* send, void* recv, int rank,
                     int nranks, nccl::Comm comm, cudaStream_t stream) {
  switch (c) {
    case Collective::all_reduce: return t.AllReduce(send, recv, s.count, nccl::Float32, nccl::Sum, comm, stream);
    case Collective::all_gather: return t.AllGather(send, recv, s.count, nccl::Float32, comm, stream);
    case Collective::reduce_scatter:
      return t.ReduceScatter(send, recv, s.count, nccl::Float32, nccl::Sum, comm, stream);
    case Collective::broadcast: return t.Broadcast(send, recv, s.count, nccl::Float32, 0, comm, stream);
    case Collective::sendrecv: {
      t.GroupStart();
      t.Send(send, s.count, nccl::Float32, (rank + 1) % nranks, comm, stream);
      t.Recv(recv, s.count, nccl::Float32, (rank - 1 + nranks) % nranks, comm, stream);
      return t.GroupEnd();
    }
    case Collective::all_to_all: {
      t.GroupStart();
      size_t chunk = s.count * sizeof(float);
      for (int p = 0; p < nranks; ++p) {
        t.Send(static_cast<const char*>(send) + chunk * static_cast<size_t>(p), s.count, nccl::Float32, p, comm,
               stream);
        t.Recv(static_cast<char*>(recv) + chunk * static_cast<size_t>(p), s.count, nccl::Float32, p, comm, stream);
      }
      return t.GroupEnd();
    }
  }
  return nccl::Success;
}

}  // namespace coldstart::worker
