// The terminal table: per configuration, median [min–max] of the main phases, bus bandwidth and NCCL's memory.
#pragma once
#include <string>
#include <vector>

#include "model/result.h"

namespace coldstart::report {

// The summary's cells, one row per configuration; shared by the terminal table, Markdown and HTML.
struct SummaryRows {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  bool have_log = false;  // NCCL's log was read (lazy connections, init.* columns)
};
SummaryRows summary_rows(const BenchResults& r);
// What the table's numbers are, under every rendering of it.
inline constexpr const char* kTableNote =
    "ready: cold start, from a rank's process start to its first collective done, the slowest rank of each ok trial "
    "(median [min–max] over trials, ms); phases: median [min–max] over rank-samples of ok trials, ms; NCCL mem: GPU "
    "memory NCCL added once its communicator exists / after the first collective";

std::string render_table(const BenchResults& r);
// A line per configuration whose NCCL init went mostly to loading its kernels (init.kernels, from NCCL's log, at
// least kSlowKernelsMs in its slowest rank-sample and the largest of init.*): what it was, where the run read the
// library's GPU code (NcclLibInfo::kernels), else what it could be. Loading SASS takes some hundred ms a process, and
// seconds where many ranks share a GPU and load at once; a JIT of NCCL's PTX, seconds to minutes (doctor's
// nccl-no-sass), and with the JIT cache on only the starts that fill it (the line then gives the spread).
inline constexpr double kSlowKernelsMs = 1000;
std::string kernels_note(const BenchResults& r);
// --worker torch: per configuration, the rendezvous store's share of each phase its calls fell in.
std::string store_note(const BenchResults& r);
// The same table as GitHub Markdown.
std::string render_markdown(const BenchResults& r);
// Rows under a header as the terminal shows them (columns aligned, the first to the left, the others to the right)
// and as GitHub Markdown (a cell's pipes escaped).
std::string render_rows(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& body);
std::string render_markdown_rows(const std::vector<std::string>& header,
                                 const std::vector<std::vector<std::string>>& body);
// "152 [148–160]" (ms) or "5.1 [4.9–5.6]"; "–" when there are no samples.
std::string format_ms_spread(const Stats& s);

}  // namespace coldstart::report
