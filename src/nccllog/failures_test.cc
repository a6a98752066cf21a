#include "nccllog/failures.h"

#include <gtest/gtest.h>

#include <string>

namespace coldstart::nccllog {
namespace {

bool names(const std::string& error, const std::string& word) {
  return known_failure(error).find(word) != std::string::npos;
}

// The /dev/shm, duplicate-GPU and calloc lines are from real runs (docs/results/2026-12-06-h100x1-casebook-shm,
// 2026-12-06-h100x1-wheel-onegpu, 2026-12-05-h100x1-growth); the others in the words of NCCL 2.30.7's source
// (bootstrap.cc, graph/xml.h), of CUDA's error string, or of a report (NVIDIA/nccl#879).
TEST(KnownFailures, NcclsMessagesNameTheirCause) {
  EXPECT_TRUE(
      names("ncclCommInitRankConfig: unhandled system error (run with NCCL_DEBUG=INFO for details) (Error while "
            "creating shared memory segment /dev/shm/nccl-iPnU3d (size 34210176), error: No space left on "
            "device (28))",
            "shm-small"));
  EXPECT_TRUE(names("init.cc:904 NCCL WARN Duplicate GPU detected : rank 0 and rank 1 both on CUDA device 60",
                    "NCCL_MULTI_RANK_GPU_ENABLE=1"));
  EXPECT_TRUE(names("bootstrap.cc:126 NCCL WARN Bootstrap : no socket interface found", "NCCL_SOCKET_IFNAME"));
  EXPECT_TRUE(
      names("ncclCommInitRankConfig: internal error - please report this issue to the NCCL developers "
            "(Attribute arch of node cpu not found)",
            "topo-file"));
  EXPECT_TRUE(
      names("ncclCommInitRankConfig: unhandled cuda error (run with NCCL_DEBUG=INFO for details) (no kernel "
            "image is available for execution on the device)",
            "nccl-no-arch"));
  EXPECT_TRUE(
      names("ncclCommInitRankConfig: unhandled cuda error (run with NCCL_DEBUG=INFO for details) (Failed to "
            "CUDA calloc 536870912 bytes)",
            "cuMem on"));
  EXPECT_TRUE(names("Proxy Call to rank 1 failed (Connect)", "host-id"));
}

// Words alone that are not the message: nothing is named, rather than a wrong cause.
TEST(KnownFailures, OtherErrorsNameNothing) {
  EXPECT_EQ(known_failure(""), "");
  EXPECT_EQ(known_failure("all_reduce: unhandled system error (run with NCCL_DEBUG=INFO for details)"), "");
  EXPECT_EQ(known_failure("No space left on device writing /tmp/out.json"), "");  // not /dev/shm
  EXPECT_EQ(known_failure("Attribute arch of node cpu"), "");                     // not "not found"
}

}  // namespace
}  // namespace coldstart::nccllog
