#include "model/phases.h"

namespace coldstart {

const PhaseInfo* phase_info(std::string_view name) {
  for (const auto& p : kPhaseTable)
    if (p.name == name) return &p;
  return nullptr;
}

int phase_order(std::string_view name) {
  for (size_t i = 0; i < std::size(kPhaseTable); ++i)
    if (kPhaseTable[i].name == name) return static_cast<int>(i);
  return static_cast<int>(std::size(kPhaseTable));
}

}  // namespace coldstart
