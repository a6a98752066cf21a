// A streaming reader of NCCL debug logs: any size in constant memory (state grows with processes and
// communicators, never with lines). Unknown lines are skipped; a known line that does not parse is recorded as a
// Problem with its line number. Lines may end in LF or CRLF; a last line without a newline is read too.
#pragma once
#include <string>
#include <string_view>
#include <unordered_map>

#include "nccllog/log.h"

namespace coldstart::nccllog {

inline constexpr size_t kMaxLine = 64 << 10;                   // longer lines are cut (and counted as problems)
inline constexpr uint64_t kMaxInputBytes = uint64_t{4} << 30;  // what parse_files reads of one file (/dev/zero)

class Parser {
 public:
  explicit Parser(std::string file_name = "") : file_(std::move(file_name)) {}
  // Feeds any chunk of the log; lines may span chunks.
  void feed(std::string_view chunk);
  // Ends the input: reads a last line that had no newline.
  void finish();
  // Starts a new file (line numbers restart), keeping what was read so far.
  void next_file(std::string file_name);
  void line(std::string_view text);  // one line, without its newline

  LogSummary take();  // what was read; the parser is empty afterwards

 private:
  void problem(const std::string& what);
  Process& process(std::string_view host, int pid);
  void on_info(Process& p, int tid, std::string_view msg, std::optional<double> t);

  std::string file_;
  uint64_t line_no_ = 0;
  std::string partial_;
  bool cut_ = false;  // partial_ reached kMaxLine: the rest of the line is dropped
  LogSummary out_;
  std::unordered_map<std::string, size_t> process_index_;  // "host:pid" -> index
  std::string last_host_;                                  // the process of the previous line, looked up once
  int last_pid_ = -1;
  size_t last_index_ = 0;
  std::unordered_map<uint64_t, std::string> thread_comm_;  // (pid, tid) -> the comm that thread last named
};

// Reads files one after another with a fixed buffer. Throws InputError naming a file that cannot be read, or where
// the input passes kMaxInputBytes (an endless device, a runaway file).
LogSummary parse_files(const std::vector<std::string>& paths);

// "[2026-11-29 17:45:40.123456] " at the start of a line: seconds since the epoch (local time, as NCCL writes it),
// and the length consumed. Nothing when the text is not such a timestamp.
std::optional<double> parse_timestamp(std::string_view text, size_t* consumed);

}  // namespace coldstart::nccllog
