// Launch models. A model decides only what each rank sees: its CUDA_VISIBLE_DEVICES and the device index it selects.
// Everything else about a trial is the same for every model.
//
//   shared    all GPUs visible, device = local rank                (torchrun)
//   isolated  only the rank's own GPU visible, device 0            (Ray actors with num_gpus=1, "virtual visible")
//   remap     all GPUs visible, the rank's own GPU first, device 0
//   explicit  a list per rank given by the user (--visible)
//   ray       (bench --launcher ray) a Ray actor with num_gpus=1: Ray chooses the GPU and sets the list, device 0
//   ray-noset (bench --launcher ray) the same with RAY_EXPERIMENTAL_NOSET_CUDA_VISIBLE_DEVICES=1: every GPU
//             visible, device = the GPU Ray assigned
#pragma once
#include <string>
#include <vector>

#include "model/spec.h"

namespace coldstart::lab {

struct ModeSpec {
  Mode mode = Mode::shared;
  std::vector<RankView> per_rank;  // explicit only
};

struct Visibility {
  std::string cuda_visible_devices;
  int device_index = 0;
};

// gpus: the job's GPUs; rank r owns gpus[r / ranks_per_gpu] (the ranks of one GPU are neighbours). Throws InputError
// when the rank has no GPU, or an explicit list lacks the rank or its index.
Visibility visibility_for(const ModeSpec& spec, int local_rank, const std::vector<std::string>& gpus,
                          int ranks_per_gpu = 1);

// Parses a device list as CUDA_VISIBLE_DEVICES allows it: non-negative indices, GPU-<uuid> (or a unique prefix),
// MIG-<uuid>. Rejects empty entries and duplicates. `what` names the input in errors.
std::vector<std::string> parse_device_list(const std::string& text, const std::string& what);

// --visible "0,1/1,0@0": one list per rank separated by '/', each optionally ending in @DEVICE_INDEX.
std::vector<RankView> parse_explicit_lists(const std::string& text);

}  // namespace coldstart::lab
