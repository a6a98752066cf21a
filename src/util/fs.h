// Files: results are written so that nothing finished is lost (append + fsync per trial, atomic rename at the end).
#pragma once
#include <optional>
#include <string>

namespace coldstart {

std::string read_file(const std::string& path);  // throws RuntimeError naming the path
void write_file_atomic(const std::string& path, const std::string& data);
void append_line_durable(const std::string& path, const std::string& line);
// Creates the folder and its parents; throws InputError naming the folder when it exists (unless allow_existing) or
// cannot be made.
void make_output_dir(const std::string& path, bool allow_existing);
std::string self_exe();
// A command's path: as given when it holds a '/', else the first executable of that name on PATH.
std::optional<std::string> find_on_path(const std::string& cmd);
std::string hostname();

// A private folder (mkdtemp under $TMPDIR or /tmp) removed with everything in it when the object goes.
class TempDir {
 public:
  explicit TempDir(const std::string& prefix);  // throws RuntimeError
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace coldstart
