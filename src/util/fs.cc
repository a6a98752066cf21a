#include "util/fs.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "util/error.h"

namespace coldstart {
namespace {
void write_all(int fd, const std::string& data, const std::string& path) {
  size_t off = 0;
  while (off < data.size()) {
    ssize_t w = ::write(fd, data.data() + off, data.size() - off);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) throw RuntimeError("cannot write " + path + ": " + std::strerror(errno));
    off += static_cast<size_t>(w);
  }
}
}  // namespace

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw RuntimeError("cannot read " + path + ": " + std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_file_atomic(const std::string& path, const std::string& data) {
  std::string tmp = path + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw RuntimeError("cannot write " + tmp + ": " + std::strerror(errno));
  write_all(fd, data, tmp);
  ::fsync(fd);
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0)
    throw RuntimeError("cannot rename " + tmp + " to " + path + ": " + std::strerror(errno));
}

void append_line_durable(const std::string& path, const std::string& line) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) throw RuntimeError("cannot append to " + path + ": " + std::strerror(errno));
  write_all(fd, line + "\n", path);
  ::fdatasync(fd);
  ::close(fd);
}

void make_output_dir(const std::string& path, bool allow_existing) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::exists(path, ec) && !allow_existing)
    throw InputError("--out " + path + ": the folder exists; give a new folder (results are never overwritten)");
  fs::create_directories(path, ec);
  if (ec) throw InputError("--out " + path + ": cannot create the folder (" + ec.message() + "); give a writable path");
  if (::access(path.c_str(), W_OK) != 0)
    throw InputError("--out " + path + ": the folder is not writable; give a writable path");
}

std::string self_exe() {
  std::error_code ec;
  auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : p.string();
}

std::string hostname() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

std::optional<std::string> find_on_path(const std::string& cmd) {
  if (cmd.find('/') != std::string::npos) return cmd;
  const char* path = std::getenv("PATH");
  std::string all = path ? path : "/usr/bin:/bin";
  size_t start = 0;
  while (start <= all.size()) {
    size_t end = all.find(':', start);
    if (end == std::string::npos) end = all.size();
    std::string dir = all.substr(start, end - start);
    std::string candidate = (dir.empty() ? "." : dir) + "/" + cmd;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    start = end + 1;
  }
  return std::nullopt;
}

TempDir::TempDir(const std::string& prefix) {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/" + prefix + "XXXXXX";
  if (!::mkdtemp(pattern.data()))
    throw RuntimeError("cannot create a folder like " + pattern + ": " + std::strerror(errno));
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

}  // namespace coldstart
