// A library that looks like NCCL 2.18.5 to the loader (the symbols it checks, no communicator API of 2.19): the
// "too old" case of --nccl-lib, which no real NCCL on a CI machine provides.
extern "C" {
int ncclGetVersion(int* v) {
  *v = 21805;
  return 0;
}
#include "loader_stubs.h"
}
