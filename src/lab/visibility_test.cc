#include "lab/visibility.h"

#include <gtest/gtest.h>

#include "lab/flags.h"

#include "util/error.h"

namespace coldstart::lab {
namespace {
const std::vector<std::string> kFour{"0", "1", "2", "3"};
}

TEST(Visibility, SharedSeesAllAndSelectsLocalRank) {
  for (int r = 0; r < 4; ++r) {
    Visibility v = visibility_for({Mode::shared, {}}, r, kFour);
    EXPECT_EQ(v.cuda_visible_devices, "0,1,2,3");
    EXPECT_EQ(v.device_index, r);
  }
}

TEST(Visibility, IsolatedSeesOnlyItsOwnGpu) {
  Visibility v = visibility_for({Mode::isolated, {}}, 2, kFour);
  EXPECT_EQ(v.cuda_visible_devices, "2");
  EXPECT_EQ(v.device_index, 0);
}

TEST(Visibility, RemapPutsOwnGpuFirstAndKeepsTheOrderOfTheRest) {
  Visibility v = visibility_for({Mode::remap, {}}, 2, kFour);
  EXPECT_EQ(v.cuda_visible_devices, "2,0,1,3");
  EXPECT_EQ(v.device_index, 0);
}

TEST(Visibility, SeveralRanksPerGpuAreNeighboursOnTheirGpu) {
  const std::vector<std::string> two{"0", "1"};
  // Four ranks on two GPUs: ranks 0 and 1 on GPU 0, ranks 2 and 3 on GPU 1, in every launch model.
  for (int r = 0; r < 4; ++r) {
    std::string own = r < 2 ? "0" : "1";
    EXPECT_EQ(visibility_for({Mode::isolated, {}}, r, two, 2).cuda_visible_devices, own);
    EXPECT_EQ(visibility_for({Mode::shared, {}}, r, two, 2).device_index, r / 2);
    EXPECT_EQ(visibility_for({Mode::remap, {}}, r, two, 2).cuda_visible_devices, r < 2 ? "0,1" : "1,0");
  }
  // Two ranks on one GPU, each seeing only it: what --visible 0/0 means on a one-GPU node.
  ModeSpec both{Mode::explicit_list, parse_explicit_lists("0/0")};
  EXPECT_EQ(visibility_for(both, 1, {"0"}, 2).cuda_visible_devices, "0");
  try {
    visibility_for({Mode::isolated, {}}, 4, two, 2);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--ranks-per-gpu"), std::string::npos) << e.what();
  }
}

TEST(Visibility, UuidsPassThroughUnchanged) {
  std::vector<std::string> gpus{"GPU-a390360c-6a4d-65f3-b22b-46e59f013066", "GPU-9c9995c4"};
  EXPECT_EQ(visibility_for({Mode::isolated, {}}, 1, gpus).cuda_visible_devices, "GPU-9c9995c4");
  EXPECT_EQ(visibility_for({Mode::remap, {}}, 1, gpus).cuda_visible_devices,
            "GPU-9c9995c4,GPU-a390360c-6a4d-65f3-b22b-46e59f013066");
  EXPECT_EQ(visibility_for({Mode::shared, {}}, 1, gpus).device_index, 1);
}

TEST(Visibility, ExplicitListsFindTheRanksGpuOrUseTheGivenIndex) {
  ModeSpec spec{Mode::explicit_list, parse_explicit_lists("0,1/0,1@0")};
  Visibility r0 = visibility_for(spec, 0, {"0", "1"});
  EXPECT_EQ(r0.cuda_visible_devices, "0,1");
  EXPECT_EQ(r0.device_index, 0);
  Visibility r1 = visibility_for(spec, 1, {"0", "1"});
  EXPECT_EQ(r1.device_index, 0);  // @0 given: both ranks on GPU 0
  ModeSpec found{Mode::explicit_list, parse_explicit_lists("1,0/1,0")};
  EXPECT_EQ(visibility_for(found, 0, {"0", "1"}).device_index, 1);
  EXPECT_EQ(visibility_for(found, 1, {"0", "1"}).device_index, 0);
}

TEST(Visibility, ExplicitErrorsNameTheInput) {
  ModeSpec one{Mode::explicit_list, parse_explicit_lists("0")};
  EXPECT_THROW(visibility_for(one, 1, {"0", "1"}), InputError);  // no list for rank 1
  ModeSpec missing{Mode::explicit_list, parse_explicit_lists("1/1")};
  try {
    visibility_for(missing, 0, {"0", "1"});
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--visible"), std::string::npos);
  }
  ModeSpec out_of_range{Mode::explicit_list, parse_explicit_lists("0@3/1")};
  EXPECT_THROW(visibility_for(out_of_range, 0, {"0", "1"}), InputError);
  EXPECT_THROW(parse_explicit_lists("0@x"), InputError);
}

TEST(Visibility, RankBeyondTheGpuListIsAnInputError) {
  EXPECT_THROW(visibility_for({Mode::shared, {}}, 4, kFour), InputError);
  EXPECT_THROW(visibility_for({Mode::shared, {}}, -1, kFour), InputError);
}

TEST(Visibility, ModeNamesRoundTrip) {
  for (Mode m : {Mode::shared, Mode::isolated, Mode::remap, Mode::explicit_list})
    EXPECT_EQ(parse_mode(std::string(name_of(m))), m);
  EXPECT_THROW(parse_mode("torchrun"), InputError);
}

TEST(DeviceList, AcceptsIndicesUuidsAndMig) {
  EXPECT_EQ(parse_device_list("0,1", "x"), (std::vector<std::string>{"0", "1"}));
  EXPECT_EQ(parse_device_list(" 3 , GPU-98734c ", "x"), (std::vector<std::string>{"3", "GPU-98734c"}));
  EXPECT_EQ(parse_device_list("MIG-a1b2", "x").size(), 1u);
}

TEST(DeviceList, RejectsBadForms) {
  for (const char* bad : {"", "0,,1", "-1", "a", "GPU-", "GPU-xyz", "0,0", "1.5"}) {
    EXPECT_THROW(parse_device_list(bad, "--devices"), InputError) << bad;
  }
  try {
    parse_device_list("0,zz", "--devices");
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("--devices: 'zz'", 0), 0u) << e.what();
  }
}

}  // namespace coldstart::lab
