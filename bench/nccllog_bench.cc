// NCCL log parser throughput and memory: builds a log of the requested size from real lines (the fixture logs of a
// 2x H200 run, repeated), parses it on one thread and prints MB/s and the process's peak resident memory.
// Target: >= 300 MB/s on one core on a 1 GB log; memory independent of file size (<= 32 MiB).
//   nccllog_bench FIXTURE_DIR [MiB=1024] [OUT_FILE=/tmp/coldstart-nccllog-bench.log]
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include <fmt/format.h>

#include "nccllog/parser.h"

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  if (argc < 2) {
    std::cerr << "usage: nccllog_bench FIXTURE_DIR [MiB] [OUT_FILE]\n";
    return 2;
  }
  const uint64_t want = (argc > 2 ? std::stoull(argv[2]) : 1024) << 20;
  const std::string out = argc > 3 ? argv[3] : "/tmp/coldstart-nccllog-bench.log";
  std::string lines;
  for (const auto& e : fs::directory_iterator(argv[1])) {
    std::ifstream in(e.path());
    std::stringstream ss;
    ss << in.rdbuf();
    lines += ss.str();
  }
  if (lines.empty()) {
    std::cerr << "no fixture lines in " << argv[1] << "\n";
    return 1;
  }
  if (!fs::exists(out) || fs::file_size(out) < want) {
    std::ofstream f(out, std::ios::binary | std::ios::trunc);
    for (uint64_t written = 0; written < want; written += lines.size()) f << lines;
  }
  uint64_t size = fs::file_size(out);
  const std::clock_t cpu0 = std::clock();  // the process's own CPU time: what a busy machine does not inflate
  auto t0 = std::chrono::steady_clock::now();
  coldstart::nccllog::LogSummary s = coldstart::nccllog::parse_files({out});
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  double cpu = static_cast<double>(std::clock() - cpu0) / CLOCKS_PER_SEC;
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  std::cout << fmt::format(
      "parsed {:.0f} MiB ({} lines, {} processes, {} problems) in {:.2f} s: {:.0f} MB/s; "
      "peak RSS {:.1f} MiB; CPU time {:.2f} s: {:.0f} MB per CPU second\n",
      size / 1048576.0, s.lines, s.processes.size(), s.problem_count, secs, size / secs / 1e6, ru.ru_maxrss / 1024.0,
      cpu, size / cpu / 1e6);
  return 0;
}
