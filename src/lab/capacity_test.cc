// Whether the node can hold the job: contexts that cannot fit refused in one line naming the GPU and the fix, NCCL's
// buffers that may not fit said, a job that fits left alone.
#include "lab/capacity.h"

#include <gtest/gtest.h>

namespace coldstart::lab {
namespace {

constexpr uint64_t kGiB = uint64_t{1} << 30;

TEST(Capacity, ContextsThatCannotFitAreRefusedNamingTheGpu) {
  // 64 ranks' contexts (about 31 GiB) on a GPU with 30 GiB free.
  auto refusal = capacity_refusal({{"GPU 0 (0000:00:06.0)", 80 * kGiB, 30 * kGiB, 64}});
  ASSERT_TRUE(refusal);
  EXPECT_NE(refusal->find("--ranks-per-gpu 64: GPU 0 (0000:00:06.0) has 30 GiB free of 80 GiB"), std::string::npos)
      << *refusal;
  EXPECT_NE(refusal->find("give fewer ranks per GPU"), std::string::npos) << *refusal;
  EXPECT_EQ(refusal->find('\n'), std::string::npos);
}

TEST(Capacity, BuffersThatMayNotFitAreSaidAndAJobThatFitsIsLeftAlone) {
  // 32 ranks on an empty 80 GB GPU: the contexts fit, contexts and NCCL's buffers (about 64 GiB) too.
  EXPECT_FALSE(capacity_refusal({{"GPU 0", 80 * kGiB, 79 * kGiB, 32}}));
  EXPECT_FALSE(capacity_warning({{"GPU 0", 80 * kGiB, 79 * kGiB, 32}}));
  // 64 ranks there: the contexts fit (about 31 GiB), not with the buffers (about 128 GiB).
  EXPECT_FALSE(capacity_refusal({{"GPU 0", 80 * kGiB, 79 * kGiB, 64}}));
  auto warning = capacity_warning({{"GPU 0", 80 * kGiB, 79 * kGiB, 64}});
  ASSERT_TRUE(warning);
  EXPECT_NE(warning->find("64 ranks on GPU 0 may not fit"), std::string::npos) << *warning;
  // One rank a GPU is what every job has always been: not warned of.
  EXPECT_FALSE(capacity_warning({{"GPU 0", 80 * kGiB, 1 * kGiB, 1}}));
}

}  // namespace
}  // namespace coldstart::lab
