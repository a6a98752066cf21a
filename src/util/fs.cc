#include "util/fs.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include "util/error.h"
#include "util/random.h"

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

std::string read_file_limited(const std::string& path, size_t max_bytes, const std::string& fix) {
  // Non-blocking, and fstat before any read: a FIFO without a writer is refused at once instead of waited on.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) throw RuntimeError("cannot read " + path + ": " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    const char* kind = S_ISFIFO(st.st_mode)                         ? "a FIFO (named pipe)"
                       : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "a device"
                       : S_ISSOCK(st.st_mode)                       ? "a socket"
                       : S_ISDIR(st.st_mode)                        ? "a folder"
                                                                    : "not a file";
    ::close(fd);
    throw InputError(path + ": " + kind + ", not a regular file; " + fix);
  }
  std::string out;
  char buf[1 << 16];
  while (true) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int e = errno;
      ::close(fd);
      throw RuntimeError("cannot read " + path + ": " + std::strerror(e));
    }
    if (n == 0) break;
    if (out.size() + static_cast<size_t>(n) > max_bytes) {
      ::close(fd);
      throw InputError(path + ": larger than the " + std::to_string(max_bytes >> 20) +
                       " MiB coldstart reads from one file; " + fix);
    }
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

std::string read_input_limited(const std::string& path, size_t max_bytes, const std::string& fix) {
  if (path != "-") return read_file_limited(path, max_bytes, fix);
  static std::optional<std::string> kept;  // standard input is read once; the process's readers share its text
  if (kept) return *kept;
  std::string out;
  char buf[1 << 16];
  while (true) {
    ssize_t n = ::read(STDIN_FILENO, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0)
      throw InputError(std::string("- (standard input): cannot be read (") + std::strerror(errno) + "); " + fix);
    if (n == 0) break;
    if (out.size() + static_cast<size_t>(n) > max_bytes)
      throw InputError("- (standard input): larger than the " + std::to_string(max_bytes >> 20) +
                       " MiB coldstart reads from one file; " + fix);
    out.append(buf, static_cast<size_t>(n));
  }
  kept = out;
  return out;
}

void write_file_atomic(const std::string& path, const std::string& data) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    // A device or a pipe (/dev/stdout, /dev/null, a FIFO) is written in place, never replaced by a file.
    if (!S_ISCHR(st.st_mode) && !S_ISFIFO(st.st_mode))
      throw InputError(path +
                       ": exists and is not a regular file (a folder, socket or block device); give a file path");
    int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) throw RuntimeError("cannot write " + path + ": " + std::strerror(errno));
    try {
      write_all(fd, data, path);
    } catch (...) {
      ::close(fd);
      throw;
    }
    ::close(fd);
    return;
  }
  // A temporary beside the target, made exclusively under a name nobody can guess, never through a link, private
  // until it is complete; then renamed over the target.
  int fd = -1;
  std::string tmp;
  for (int attempt = 0; fd < 0 && attempt < 16; ++attempt) {
    tmp = path + ".tmp-" + random_hex(8);
    fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0 && errno != EEXIST) throw RuntimeError("cannot write " + tmp + ": " + std::strerror(errno));
  }
  if (fd < 0) throw RuntimeError("cannot create a temporary file beside " + path);
  try {
    write_all(fd, data, tmp);
    const mode_t mask = ::umask(0);
    ::umask(mask);
    if (::fchmod(fd, 0666 & ~mask) != 0 || ::fsync(fd) != 0)
      throw RuntimeError("cannot write " + tmp + ": " + std::strerror(errno));
  } catch (...) {
    ::close(fd);
    ::unlink(tmp.c_str());
    throw;
  }
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int e = errno;
    ::unlink(tmp.c_str());
    throw RuntimeError("cannot rename " + tmp + " to " + path + ": " + std::strerror(e));
  }
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
  fs::path p(path);
  if (p.has_parent_path()) fs::create_directories(p.parent_path(), ec);
  // The folder itself exclusively: two runs never share one.
  if (::mkdir(path.c_str(), 0777) != 0) {
    if (errno != EEXIST)
      throw InputError("--out " + path + ": cannot create the folder (" + std::strerror(errno) +
                       "); give a writable path");
    if (!fs::is_directory(path, ec)) throw InputError("--out " + path + ": exists and is a file; give a folder");
    if (!allow_existing)
      throw InputError("--out " + path + ": the folder exists; give a new folder (results are never overwritten)");
  }
  if (::access(path.c_str(), W_OK) != 0)
    throw InputError("--out " + path + ": the folder is not writable; give a writable path");
}

std::string make_unique_output_dir(const std::string& base) {
  for (int n = 1; n < 1000; ++n) {
    std::string path = n == 1 ? base : base + "-" + std::to_string(n);
    try {
      make_output_dir(path, false);
      return path;
    } catch (const InputError&) {
      if (!std::filesystem::exists(path)) throw;  // not a name clash: a real problem
    }
  }
  throw InputError(base + ": 999 folders of that name exist; give --out");
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
  owner_ = ::getpid();
}

TempDir::~TempDir() {
  if (::getpid() != owner_) return;
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

}  // namespace coldstart
