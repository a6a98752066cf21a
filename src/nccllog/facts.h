// A rank's NCCL log reduced to what a bench result keeps (RankNccl).
#pragma once
#include <string>

#include "model/result.h"
#include "nccllog/log.h"

namespace coldstart::nccllog {

// The first communicator is the world one; transports are counted over all of them. Warnings: the first few.
RankNccl rank_facts(const LogSummary& log, const std::string& path);

}  // namespace coldstart::nccllog
