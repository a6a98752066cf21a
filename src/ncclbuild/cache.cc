#include "ncclbuild/cache.h"

#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <thread>

#include <fmt/format.h>

#include "launch/trial.h"
#include "ncclbuild/series.h"
#include "util/clock.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/json.h"
#include "util/strings.h"

namespace coldstart::ncclbuild {
namespace fs = std::filesystem;
using nlohmann::json;

std::string default_cache_dir() {
  // XDG: a relative XDG_CACHE_HOME is invalid and ignored
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && x[0] == '/') return std::string(x) + "/coldstart/nccl";
  std::string home;
  if (const char* h = std::getenv("HOME"); h && *h) home = h;
  if (home.empty())
    if (const passwd* pw = ::getpwuid(::getuid()); pw && pw->pw_dir) home = pw->pw_dir;
  if (home.empty()) throw InputError("no home folder ($HOME is unset): give --cache-dir DIR");
  return home + "/.cache/coldstart/nccl";
}

std::string which_name(Which w) { return w == Which::stock ? "stock" : "patched"; }

std::string entry_name(const std::string& version, Which which) {
  return version + (which == Which::stock ? "+stock" : "+peer-regions");
}

std::string built_for(const std::vector<std::string>& arch, const std::string& series) {
  return "for " + join(arch, ",") + " with series " + series;
}

std::string manifest_json(const Manifest& m) {
  json j = {{"schema", kManifestSchema},
            {"name", m.name},
            {"which", which_name(m.which)},
            {"version", m.version},
            {"arch", m.arch},
            {"series", m.series},
            {"source", m.source},
            {"library", m.library},
            {"patches", m.patches},
            {"built_at", m.built_at},
            {"coldstart_version", m.coldstart_version}};
  return dump_json(j, 1) + "\n";
}

Manifest parse_manifest(const std::string& text, const std::string& path) {
  const std::string fix = ": not a manifest of coldstart nccl build (" + std::string(kManifestSchema) + ")";
  json j = json::parse(text, nullptr, false);
  if (!j.is_object() || j.value("schema", json()) != kManifestSchema) throw InputError(path + fix);
  Manifest m;
  auto str = [&](const char* key, std::string* out) {
    if (!j.contains(key) || !j[key].is_string()) throw InputError(path + fix + ": no string '" + key + "'");
    *out = j[key].get<std::string>();
  };
  auto list = [&](const char* key, std::vector<std::string>* out) {
    if (!j.contains(key) || !j[key].is_array()) throw InputError(path + fix + ": no list '" + key + "'");
    for (const auto& v : j[key]) {
      if (!v.is_string()) throw InputError(path + fix + ": '" + key + "' holds a non-string");
      out->push_back(v.get<std::string>());
    }
  };
  str("name", &m.name);
  if (j.contains("which")) {
    std::string which;
    str("which", &which);
    if (which != "patched" && which != "stock")
      throw InputError(path + fix + ": 'which' is " + shown(which, 32) + ", not patched or stock");
    m.which = which == "stock" ? Which::stock : Which::patched;
  }
  str("version", &m.version);
  list("arch", &m.arch);
  str("series", &m.series);
  str("source", &m.source);
  str("library", &m.library);
  list("patches", &m.patches);
  str("built_at", &m.built_at);
  if (j.contains("coldstart_version") && j["coldstart_version"].is_string())
    m.coldstart_version = j["coldstart_version"].get<std::string>();
  return m;
}

namespace {

// A build folder's stamp (kBuiltForFile), "" when it has none or it cannot be read.
std::string read_stamp(const std::string& path) {
  std::error_code ec;
  if (!fs::is_regular_file(fs::symlink_status(path, ec))) return "";
  try {
    return std::string(trim(read_file_limited(path, 4096)));
  } catch (const std::exception&) {
    return "";
  }
}

uint64_t folder_size(const fs::path& dir) {
  uint64_t total = 0;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec), end;
       !ec && it != end; it.increment(ec)) {
    std::error_code e2;
    if (it->is_symlink(e2) || !it->is_regular_file(e2)) continue;
    uint64_t n = it->file_size(e2);
    if (!e2) total += n;
  }
  return total;
}

// Why `library` (a manifest's) is not this entry's own library, or "" when it is: an absolute path inside the entry,
// reached without leaving it through a link, a regular file.
std::string library_problem(const fs::path& dir, const std::string& library) {
  const fs::path lib(library);
  if (!lib.is_absolute()) return "build.json names its library by a relative path, " + shown(library);
  const fs::path normal = lib.lexically_normal();
  const fs::path rel = normal.lexically_relative(dir.lexically_normal());
  if (rel.empty() || *rel.begin() == "..") return "build.json names a library outside its folder, " + shown(library);
  std::error_code ec;
  const fs::path real = fs::weakly_canonical(normal, ec), real_dir = fs::weakly_canonical(dir, ec);
  const fs::path real_rel = real.lexically_relative(real_dir);
  if (ec || real_rel.empty() || *real_rel.begin() == "..")
    return "its library " + shown(library) + " leads outside its folder through a link";
  if (!fs::is_regular_file(normal, ec)) return "its library " + shown(library) + " is gone";
  return "";
}

Entry read_entry(const fs::path& dir, bool with_sizes) {
  Entry e;
  e.name = dir.filename().string();
  e.path = dir.string();
  const std::string mpath = (dir / kManifestFile).string();
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(mpath, ec))) {
    e.state = "no build.json: building, failed or interrupted (coldstart nccl build continues it)";
  } else {
    try {
      if (fs::is_symlink(fs::symlink_status(mpath, ec)))
        throw InputError(shown(mpath) + " is a symbolic link, not a manifest nccl build wrote");
      Manifest m = parse_manifest(read_file_limited(mpath, 1 << 20), mpath);
      const std::string stamp = read_stamp((dir / "build" / kBuiltForFile).string());
      if (m.name != e.name)
        e.state = "build.json names " + shown(m.name) + ", not this folder";
      else if (std::string why = library_problem(dir, m.library); !why.empty())
        e.state = why;
      else if (!stamp.empty() && stamp != built_for(m.arch, m.series))
        e.state = fmt::format(
            "build.json is for {} (series {}) but build/ holds a build {}: a switch to a new build was interrupted "
            "(coldstart nccl build finishes it)",
            join(m.arch, ","), shown(m.series, 32), shown(stamp, 64));
      else
        e.complete = true;
      e.manifest = std::move(m);
    } catch (const std::exception& err) {
      e.state = err.what();
    }
  }
  if (with_sizes) e.size_bytes = folder_size(dir);
  return e;
}

}  // namespace

std::vector<Entry> list_entries(const std::string& cache_dir, bool with_sizes) {
  std::vector<Entry> out;
  std::error_code ec;
  if (!fs::is_directory(cache_dir, ec)) return out;
  for (const auto& d : fs::directory_iterator(cache_dir, ec)) {
    std::error_code e2;
    const std::string name = d.path().filename().string();
    if (name.starts_with(".") || d.is_symlink(e2) || !d.is_directory(e2)) continue;
    out.push_back(read_entry(d.path(), with_sizes));
  }
  std::sort(out.begin(), out.end(), [](const Entry& a, const Entry& b) { return a.name < b.name; });
  return out;
}

std::optional<Entry> find_complete(const std::string& cache_dir, const std::string& name) {
  std::optional<Entry> best;
  for (auto& e : list_entries(cache_dir, false)) {
    if (!e.complete || (!name.empty() && e.name != name)) continue;
    if (name.empty() && e.manifest->which != Which::patched) continue;
    if (!best || e.manifest->built_at > best->manifest->built_at) best = std::move(e);
  }
  return best;
}

int version_code(const std::string& release) {
  if (!is_release(release)) return 0;
  const auto parts = split(release, '.');
  if (parts[1].size() > 2 || parts[2].size() > 2) return 0;  // NCCL_VERSION's code has two digits for each
  return std::stoi(parts[0]) * 10000 + std::stoi(parts[1]) * 100 + std::stoi(parts[2]);
}

std::optional<Entry> newest_complete_from(const std::string& cache_dir, int min_version, Which which) {
  std::optional<Entry> best;
  int best_code = 0;
  for (auto& e : list_entries(cache_dir, false)) {
    const int code = e.complete && e.manifest->which == which ? version_code(e.manifest->version) : 0;
    if (code == 0 || code < min_version) continue;
    if (!best || code > best_code || (code == best_code && e.manifest->built_at > best->manifest->built_at)) {
      best_code = code;
      best = std::move(e);
    }
  }
  return best;
}

bool looks_like_entry_name(const std::string& word) {
  // X.Y.Z+tail, tail of letters, digits and ._+- (a loop, not std::regex: libstdc++'s recurses per character, and a
  // 100k-character word overflowed the stack)
  const size_t plus = word.find('+');
  if (word.size() > kMaxEntryName || plus == std::string::npos || plus + 1 == word.size()) return false;
  const auto parts = split(std::string_view(word).substr(0, plus), '.');
  return parts.size() == 3 &&
         std::all_of(parts.begin(), parts.end(), [](const std::string& x) { return all_digits(x); }) &&
         std::all_of(word.begin() + static_cast<std::ptrdiff_t>(plus) + 1, word.end(), [](char c) {
           return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
                  c == '+' || c == '-';
         });
}

std::string library_for(const std::string& nccl_lib, const std::string& cache_dir, const std::string& what) {
  if (!looks_like_entry_name(nccl_lib)) return nccl_lib;
  if (auto e = find_complete(cache_dir, nccl_lib)) return e->manifest->library;
  const std::string version = nccl_lib.substr(0, nccl_lib.find('+'));
  std::error_code ec;
  if (fs::is_directory(fs::symlink_status(cache_dir + "/" + nccl_lib, ec))) {
    const Entry e = read_entry(cache_dir + "/" + nccl_lib, false);
    throw InputError(fmt::format(
        "{} {}: its build in {} is not complete ({}); finish it with `coldstart nccl build --version {}`", what,
        nccl_lib, shown(cache_dir), e.state.starts_with("no build.json") ? "no build.json" : e.state, version));
  }
  throw InputError(
      fmt::format("{} {}: no build of that name in {} (`coldstart nccl list` shows the cache); make it with `coldstart "
                  "nccl build --version {}`, or give a library's path",
                  what, nccl_lib, shown(cache_dir), version));
}

std::string library_for(const std::string& nccl_lib) {
  if (!looks_like_entry_name(nccl_lib)) return nccl_lib;
  return library_for(nccl_lib, default_cache_dir(), "--nccl-lib");
}

void check_cache_dir(const std::string& dir, const std::string& what) {
  std::error_code ec;
  const auto st = fs::status(dir, ec);
  if (fs::exists(st) && !fs::is_directory(st))
    throw InputError(fmt::format("{} {}: not a folder ({}); give the folder of the cache, or none for the default",
                                 what, shown(dir), fs::is_regular_file(st) ? "a file" : "a device, FIFO or socket"));
}

void make_writable_dir(const std::string& dir, const std::string& what) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir))
    throw InputError(fmt::format("{} {} cannot be made ({}): give a folder you can write with --cache-dir", what, dir,
                                 ec ? ec.message() : "a file is in the way"));
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    throw InputError(fmt::format("{} {} cannot be written ({}): give a folder you can write with --cache-dir", what,
                                 dir, std::strerror(errno)));
}

EntryLock::EntryLock(const std::string& entry_dir, const std::function<void(const std::string& holder)>& waiting) {
  const std::string path = entry_dir + "/lock";
  // Not O_CLOEXEC: the build's processes inherit it and keep the entry locked while any of them runs. A link planted
  // there is never followed (its target would be truncated and written), nor a FIFO opened that would block.
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK, 0644);
  if (fd_ < 0 && errno == ELOOP)
    throw InputError(shown(path) + " is a symbolic link, which nccl build never follows: remove it and run again");
  if (fd_ < 0)
    throw InputError(shown(path) + " cannot be opened (" + std::strerror(errno) + "): give a folder you can write");
  struct stat st {};
  if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd_);
    throw InputError(shown(path) + " is not a regular file (a FIFO, device or socket): remove it and run again");
  }
  bool told = false;
  while (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK && errno != EINTR) {
      int e = errno;
      ::close(fd_);
      throw RuntimeError(path + ": flock: " + std::strerror(e));
    }
    if (!told) {
      std::string holder;
      char buf[512];
      ssize_t n = ::pread(fd_, buf, sizeof buf - 1, 0);
      if (n > 0) holder.assign(buf, static_cast<size_t>(n));
      while (!holder.empty() && (holder.back() == '\n' || holder.back() == '\r')) holder.pop_back();
      int pid = 0;
      if (std::sscanf(holder.c_str(), "pid %d", &pid) == 1 && pid > 0 && ::kill(pid, 0) != 0 && errno == ESRCH)
        holder += " (gone; the processes its build started still hold the lock)";
      waiting(holder.empty() ? "another process" : holder);
      told = true;
    }
    if (launch::interrupted()) {
      ::close(fd_);
      throw Interrupted("interrupted while waiting for " + shown(path) + "; nothing was changed");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  std::string me = fmt::format("pid {} on {} since {} UTC\n", ::getpid(), hostname(), format_now("%F %T", true));
  if (::ftruncate(fd_, 0) == 0) {
    ssize_t ignored = ::pwrite(fd_, me.data(), me.size(), 0);
    (void)ignored;
  }
}

EntryLock::~EntryLock() {
  if (fd_ >= 0) ::close(fd_);
}

std::string shell_word(const std::string& s) {
  const bool plain = !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
           std::string_view("_./+:=,@%-").find(c) != std::string_view::npos;
  });
  if (plain) return s;
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

LoadLines load_lines(const std::string& library, const std::string& version, JobShape job) {
  LoadLines l;
  l.env = {{"LD_PRELOAD", library}};
  // Where the version is not known (a library named by path), the lines do not claim it can share a GPU.
  const bool multi = job.shares_gpu() && version_code(version) >= 23000;
  if (multi) l.env.emplace_back("NCCL_MULTI_RANK_GPU_ENABLE", "1");
  std::vector<std::string> shell, ray;
  for (const auto& [key, value] : l.env) {
    shell.push_back(key + "=" + shell_word(value));
    ray.push_back(dump_json(key) + ": " + dump_json(value));
  }
  // torchrun's processes: the node's GPUs times the ranks each holds, where both are known
  const int per_gpu = job.ranks_per_gpu > 0 ? job.ranks_per_gpu : (job.shares_gpu() ? 2 : 1);
  const std::string nproc = job.gpus > 0 ? std::to_string(job.gpus * per_gpu) : "N";
  l.torchrun = join(shell, " ") + " torchrun --nproc-per-node " + nproc + " train.py";
  l.ray = "ray.init(runtime_env={\"env_vars\": {" + join(ray, ", ") + "}})";
  l.slurm = "srun --export=ALL," + join(shell, ",") + " python train.py";
  return l;
}

}  // namespace coldstart::ncclbuild
