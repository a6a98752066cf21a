// CUDA_VISIBLE_DEVICES as the CUDA runtime reads it: entries left to right, each an index, a GPU UUID (or a unique
// prefix of one), or a MIG id; the first entry that names no device ends the list (what follows is ignored), and an
// empty value or -1 hides every GPU.
#pragma once
#include <string>
#include <vector>

#include "gpu/nvml.h"

namespace coldstart::doctor {

struct CvdEntry {
  std::string text;
  std::string kind;      // "index", "uuid", "uuid-prefix", "mig", "invalid"
  int nvml_index = -1;   // the physical GPU it names, when known
  std::string note;      // why it is invalid, ambiguous or ignored
  bool visible = false;  // CUDA will show it
};

struct CvdAnalysis {
  bool set = false;
  std::string text;
  std::vector<CvdEntry> entries;
  std::vector<int> visible_nvml;      // physical GPUs visible, in CUDA's order
  bool hides_all = false;             // empty or -1
  std::vector<std::string> problems;  // one line each
};

CvdAnalysis analyze_cvd(bool set, const std::string& text, const std::vector<gpu::NvmlGpu>& gpus);

}  // namespace coldstart::doctor
