// A library that looks like a build of coldstart's NCCL series to the loader and to patches_in: the symbols the loader
// binds, the version $FAKE_NCCL_VERSION says (default 2.30.7), and the series' parameter names in its .rodata (not
// with FAKE_NCCL_UNPATCHED). What `coldstart nccl build`'s tests have a stand-in build_nccl.sh make, without NCCL.
#include <cstdlib>

#ifndef FAKE_NCCL_UNPATCHED
// extern "C" on the definition itself gives it external linkage (a const at namespace scope would have none and go)
extern "C" const char* const coldstart_fake_series_marks[] = {"NCCL_P2P_PEER_REGION", "NCCL_FD_TABLE_RESERVE"};
#endif

extern "C" {
int ncclGetVersion(int* v) {
  const char* s = std::getenv("FAKE_NCCL_VERSION");
  *v = s && *s ? std::atoi(s) : 23007;
  return 0;
}
#include "loader_stubs.h"
STUB(ncclCommInitRankConfig)
STUB(ncclCommSplit)
}
