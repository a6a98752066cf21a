// The symbols coldstart's NCCL loader (src/gpu/nccl.cc) binds from every library, as stubs that do nothing: the part
// the fake NCCLs share. Include it inside extern "C".
#define STUB(name) \
  int name() { return 0; }
STUB(ncclGetUniqueId)
STUB(ncclCommDestroy)
STUB(ncclAllReduce)
STUB(ncclAllGather)
STUB(ncclReduceScatter)
STUB(ncclBroadcast)
STUB(ncclSend)
STUB(ncclRecv)
STUB(ncclGroupStart)
STUB(ncclGroupEnd)
STUB(ncclCommGetAsyncError)
const char* ncclGetErrorString(int) { return "fake"; }
