// Files: results are written so that nothing finished is lost (append + fsync per trial, atomic rename at the end).
#pragma once
#include <optional>
#include <string>

namespace coldstart {

std::string read_file(const std::string& path);  // throws RuntimeError naming the path
// A regular file of at most max_bytes: a FIFO, a device or a socket is refused at once (never read or waited on), and
// a larger file too; both as InputError naming the path.
// `fix` ends each message: what to give instead.
std::string read_file_limited(const std::string& path, size_t max_bytes,
                              const std::string& fix = "give a regular file");
// read_file_limited, where `path` "-" is standard input (a pipe, a file or a terminal): read to its end once, bounded
// by max_bytes as a file is (past it: InputError naming standard input), and kept, so that a second read in the same
// process (the loader tries one kind of file, then another) sees the same text.
std::string read_input_limited(const std::string& path, size_t max_bytes,
                               const std::string& fix = "give a regular file");
// Writes a whole file so that readers see the old or the new one: a private temporary (exclusive, unguessable name,
// no link followed) renamed over it. A character device or FIFO (/dev/stdout) is written in place; another kind of
// non-file is refused (InputError).
void write_file_atomic(const std::string& path, const std::string& data);
void append_line_durable(const std::string& path, const std::string& line);
// Creates the folder (exclusively: two runs never share one) and its parents; throws InputError naming the folder when
// it exists (unless allow_existing), is a file, or cannot be made.
void make_output_dir(const std::string& path, bool allow_existing);
// A default output folder: `base`, or base-2, base-3, ... when a run of the same second has it.
std::string make_unique_output_dir(const std::string& base);
std::string self_exe();
// A command's path: as given when it holds a '/', else the first executable of that name on PATH.
std::optional<std::string> find_on_path(const std::string& cmd);
std::string hostname();

// A private folder (mkdtemp under $TMPDIR or /tmp) removed with everything in it when the object goes, by the process
// that made it (a forked child that ends with exit() leaves it to its parent).
class TempDir {
 public:
  explicit TempDir(const std::string& prefix);  // throws RuntimeError
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int owner_;  // the pid that made it
};

}  // namespace coldstart
