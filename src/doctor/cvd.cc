#include "doctor/cvd.h"

#include <algorithm>
#include <cctype>
#include <set>

#include "util/strings.h"

namespace coldstart::doctor {

CvdAnalysis analyze_cvd(bool set, const std::string& text, const std::vector<gpu::NvmlGpu>& gpus) {
  CvdAnalysis a;
  a.set = set;
  a.text = text;
  if (!set) {
    for (const auto& g : gpus) a.visible_nvml.push_back(g.index);
    return a;
  }
  std::string_view t = trim(text);
  if (t.empty() || t == "-1") {
    a.hides_all = true;
    a.problems.push_back("CUDA_VISIBLE_DEVICES=" + text + " hides every GPU from CUDA in this process");
    return a;
  }
  bool ended = false;
  std::set<int> seen;
  for (const auto& raw : split(t, ',')) {
    CvdEntry e;
    e.text = std::string(trim(raw));
    if (ended) {
      e.kind = "ignored";
      e.note = "after an invalid entry: CUDA ignores it";
      a.entries.push_back(e);
      continue;
    }
    if (auto idx = parse_int(e.text)) {
      e.kind = "index";
      if (*idx < 0 || *idx >= static_cast<int64_t>(gpus.size())) {
        e.kind = "invalid";
        e.note = *idx < 0 ? "a negative index ends the list"
                          : "index " + e.text + " is out of range (" + std::to_string(gpus.size()) + " GPUs)";
      } else {
        e.nvml_index = static_cast<int>(*idx);
      }
    } else if (starts_with(e.text, "MIG-")) {
      e.kind = "mig";
      e.note = "a MIG instance: NCCL cannot use MIG instances for peer-to-peer";
    } else if (starts_with(e.text, "GPU-")) {
      std::vector<int> matches;
      for (const auto& g : gpus)
        if (starts_with(g.uuid, e.text)) matches.push_back(g.index);
      bool full = std::any_of(gpus.begin(), gpus.end(), [&](const gpu::NvmlGpu& g) { return g.uuid == e.text; });
      e.kind = full ? "uuid" : "uuid-prefix";
      if (matches.size() == 1) {
        e.nvml_index = matches[0];
      } else {
        e.kind = "invalid";
        e.note = matches.empty() ? "no GPU has this UUID" : "this UUID prefix matches several GPUs";
      }
    } else {
      e.kind = "invalid";
      e.note = "not an index, GPU UUID or MIG id";
    }
    if (e.nvml_index >= 0 && !seen.insert(e.nvml_index).second) {
      e.note = "names a GPU already listed; list each GPU once";
      e.nvml_index = -1;
      a.problems.push_back("CUDA_VISIBLE_DEVICES entry '" + e.text + "': " + e.note);
    }
    if (e.kind == "invalid") {
      ended = true;
      a.problems.push_back("CUDA_VISIBLE_DEVICES entry '" + e.text + "': " + e.note +
                           "; CUDA stops reading the list there");
    } else if (e.nvml_index >= 0) {
      e.visible = true;
      a.visible_nvml.push_back(e.nvml_index);
    }
    a.entries.push_back(e);
  }
  return a;
}

}  // namespace coldstart::doctor
