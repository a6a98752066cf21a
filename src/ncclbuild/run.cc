// run_build (build.h): the source, build_nccl.sh under the entry's lock with its output relayed and its progress
// condensed, then the library checked and the manifest written.
#include <fcntl.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <thread>

#include <fmt/format.h>

#include "gpu/nccl.h"
#include "launch/trial.h"
#include "ncclbuild/build.h"
#include "util/clock.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/process.h"
#include "util/strings.h"

namespace coldstart::ncclbuild {
namespace fs = std::filesystem;

namespace {
constexpr const char* kScriptMark = ".coldstart-build-nccl";  // build_nccl.sh's mark on every folder it makes
constexpr const char* kArchFile = "arch";                     // the architectures the entry's build is for
constexpr const char* kScriptOutput = "build.out";            // what build_nccl.sh said, this run
constexpr const char* kScriptErrors = "build.err";            // and what it wrote to stderr
constexpr unsigned kRenameExchange = 1U << 1;                 // renameat2's RENAME_EXCHANGE (linux/fs.h)

using Say = std::function<void(const std::string&)>;

// A file's new lines, as they come. With hold_last, the last complete line is held back until the next one (or the
// end) arrives.
class LineRelay {
 public:
  LineRelay(std::string path, bool hold_last) : path_(std::move(path)), hold_last_(hold_last) {}
  std::vector<std::string> poll() {
    int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd >= 0) {
      char buf[8192];
      ssize_t n;
      while ((n = ::pread(fd, buf, sizeof buf, static_cast<off_t>(offset_))) > 0) {
        offset_ += static_cast<uint64_t>(n);
        partial_.append(buf, static_cast<size_t>(n));
      }
      ::close(fd);
    }
    std::vector<std::string> out;
    size_t nl;
    while ((nl = partial_.find('\n')) != std::string::npos) {
      if (held_) out.push_back(*held_);
      held_ = partial_.substr(0, nl);
      partial_.erase(0, nl + 1);
      if (!hold_last_) {
        out.push_back(*held_);
        held_.reset();
      }
    }
    return out;
  }
  // Everything left, at the end: the held line and an unterminated rest.
  std::vector<std::string> rest() {
    std::vector<std::string> out = poll();
    if (held_) out.push_back(*held_);
    if (!trim(partial_).empty()) out.push_back(partial_);
    held_.reset();
    partial_.clear();
    return out;
  }

 private:
  std::string path_, partial_;
  bool hold_last_;
  uint64_t offset_ = 0;
  std::optional<std::string> held_;
};

// Removes a folder build_nccl.sh made (it holds the script's mark); anything else is left alone and named.
void remove_script_folder(const std::string& dir) {
  std::error_code ec;
  if (!fs::exists(dir, ec)) return;
  if (fs::is_symlink(dir, ec) || !fs::is_regular_file(dir + "/" + kScriptMark, ec))
    throw InputError(dir + " was not made by build_nccl.sh (no " + kScriptMark + " in it): move it away and run again");
  fs::remove_all(dir, ec);
  if (ec) throw RuntimeError("cannot remove " + dir + ": " + ec.message());
}

std::string read_small(const std::string& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return "";
  try {
    return std::string(trim(read_file_limited(path, 1 << 16)));
  } catch (const std::exception&) {
    return "";
  }
}

// The release's tarball from GitHub with curl (or Python's urllib where curl is missing), to `dest` whole or not at
// all; InputError naming --src when it cannot be fetched.
void download(const BuildPlan& p, const Say& say) {
  std::error_code ec;
  const auto st = fs::symlink_status(p.src, ec);
  if (fs::is_symlink(st) || (fs::exists(st) && !fs::is_regular_file(st)))
    throw InputError(shown(p.src) + " is not a file nccl build downloaded (" +
                     (fs::is_symlink(st) ? "a symbolic link" : "not a regular file") +
                     "), and nccl build never follows one: remove it and run again, or give --src");
  if (fs::is_regular_file(st)) {
    say(fmt::format("no --src: using {}, downloaded before", p.src));
    return;
  }
  say(fmt::format("no --src: downloading NCCL {}'s source from {} to {}", p.port.tag, p.download, p.src));
  // A new file of its own (exclusive, unguessable): nothing planted at a known name is written through
  std::string part = p.src + ".part-XXXXXX";
  const int fd = ::mkstemp(part.data());
  if (fd < 0) throw InputError("--cache-dir: " + shown(part) + " cannot be made (" + std::strerror(errno) + ")");
  ::close(fd);
  std::vector<std::string> argv;
  if (auto curl = find_on_path("curl")) {
    argv = {*curl, "-fsSL", "--connect-timeout", "20", "--retry", "2", "-o", part, p.download};
  } else if (auto py = find_on_path("python3")) {
    argv = {*py, "-c", "import sys, urllib.request; urllib.request.urlretrieve(sys.argv[1], sys.argv[2])", p.download,
            part};
  } else {
    fs::remove(part, ec);
    throw InputError("no --src, and neither curl nor python3 is here to download " + p.download +
                     ": fetch it elsewhere and give --src FILE");
  }
  RunResult r;
  try {
    r = run_tool(argv, 900);
  } catch (...) {  // interrupted, or it could not start: no partial file stays
    fs::remove(part, ec);
    throw;
  }
  if (!r.ok()) {
    fs::remove(part, ec);
    std::string why;
    for (const auto& l : split(r.output, '\n'))
      if (!trim(l).empty()) why = std::string(trim(l));
    throw InputError(
        fmt::format("no --src, and {} could not be downloaded ({}): offline? fetch it elsewhere and "
                    "give --src FILE",
                    p.download, why.empty() ? r.why() : why.substr(0, 200)));
  }
  fs::rename(part, p.src, ec);
  if (ec) throw RuntimeError("cannot move " + part + " to " + p.src + ": " + ec.message());
}

// How build_nccl.sh ended: its wait status (nothing when interrupted) and, when it refused (exit status 2), the line
// it refused with (not relayed: it becomes the command's own one line).
struct ScriptEnd {
  std::optional<int> status;
  std::string refusal;
  std::string last_error;  // the last line it wrote to stderr: why it failed, where it says
  // "exit status 1: <its last line on stderr>", for a message
  std::string why() const {
    std::string w = describe_wait_status(status.value_or(0));
    return last_error.empty() ? w : w + ": " + shown(last_error, 300);
  }
};

// Runs build_nccl.sh into out_dir, relaying what it says and, while make runs, a progress line every
// progress_every_s. Its stdout is relayed as it comes; its stderr a line late, so that a refusal's line (exit status 2,
// on stderr) is told from the rest.
ScriptEnd run_script(const BuildPlan& p, const std::string& out_dir, bool check_only, const Say& say) {
  const fs::path parent = fs::path(out_dir).parent_path();
  const std::string out = (parent / kScriptOutput).string(), err = (parent / kScriptErrors).string();
  std::error_code ec;
  fs::remove(out, ec);
  fs::remove(err, ec);
  SpawnSpec spec;
  spec.argv = p.script_argv(out_dir, check_only);
  // stderr to a file of its own: bash -c 'exec "$0" "$@" 2>>FILE' BASH SCRIPT ARGS...
  const std::string bash = spec.argv[0];
  spec.argv.insert(spec.argv.begin() + 1, {"-c", "exec \"$0\" \"$@\" 2>>\"$COLDSTART_SCRIPT_ERRORS\"", bash});
  spec.env = make_env({{"COLDSTART_SCRIPT_ERRORS", err}}, {});
  spec.output_path = out;
  spec.death_signal = SIGTERM;
  pid_t pid = spawn(spec);
  LineRelay said(out, false), errors(err, true);
  const std::string which = which_name(p.which);
  MakeLogReader make(out_dir + "/" + which + ".log", out_dir + "/src-" + which, out_dir + "/" + which + "/obj");
  const MakeProgress at_start = make.read();
  const int64_t t0 = mono_ns();
  int64_t last_report = t0;
  size_t last_compiled = at_start.compiled;
  bool stopping = false;
  int64_t stop_deadline = 0;
  std::string last_error;
  auto say_error = [&](const std::string& line) {
    if (stopping && line == "Terminated") return;  // bash's word for the make we stopped
    say(line);
    if (!trim(line).empty()) last_error = line;
  };
  for (;;) {
    for (const auto& line : said.poll()) say(line);
    for (const auto& line : errors.poll()) say_error(line);
    if (auto st = try_reap(pid)) {
      kill_group(pid, SIGKILL);
      ScriptEnd end;
      for (const auto& line : said.rest()) say(line);
      auto rest = errors.rest();
      if (WIFEXITED(*st) && WEXITSTATUS(*st) == 2 && !rest.empty()) {
        end.refusal = rest.back();
        rest.pop_back();
        if (end.refusal.starts_with("build_nccl: ")) end.refusal = end.refusal.substr(12);
      }
      for (const auto& line : rest) say_error(line);
      if (!stopping) end.status = *st;
      end.last_error = last_error;
      return end;
    }
    if (launch::interrupted() && !stopping) {
      // make stops its jobs and deletes the files they were writing; build_nccl.sh waits for it and exits (130)
      say("nccl build: interrupted: stopping make");
      kill_group(pid, SIGTERM);
      stopping = true;
      stop_deadline = mono_ns() + int64_t{60} * 1000000000;
    } else if (stopping && mono_ns() > stop_deadline) {
      kill_group(pid, SIGKILL);  // the next run removes what a killed make wrote last (build_nccl.sh's marker)
    }
    const int64_t now = mono_ns();
    const double since = static_cast<double>(now - last_report) / 1e9;
    if (!check_only && !stopping && since >= p.progress_every_s) {
      MakeProgress m = make.read();
      if (m.compiled != last_compiled || since >= 6 * p.progress_every_s) {
        if (m.compiled > 0 || m.total > 0)
          say("nccl build: " + progress_line(m, at_start, static_cast<double>(now - t0) / 1e9));
        last_compiled = m.compiled;
        last_report = now;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

// A scratch folder inside the cache (hidden from its listing), removed with what is in it.
class Scratch {
 public:
  explicit Scratch(const std::string& parent) {
    std::string t = parent + "/.dry-run-XXXXXX";
    if (!::mkdtemp(t.data())) throw InputError("--cache-dir " + parent + " cannot be written: " + std::strerror(errno));
    path_ = t;
  }
  ~Scratch() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Puts the finished build `built` in place of `build` in one step (renameat2's RENAME_EXCHANGE: readers see the old
// folder or the new one, never neither); `built` then holds the old build. Where the file system cannot exchange, the
// old folder is moved aside first (for that moment the entry has no library: it reads as incomplete, never wrong).
void switch_to(const std::string& entry, const std::string& built, const std::string& build, const Say& note) {
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(build, ec))) {
    fs::rename(built, build, ec);
    if (ec) throw RuntimeError("cannot move " + built + " to " + build + ": " + ec.message());
    return;
  }
  if (::syscall(SYS_renameat2, AT_FDCWD, built.c_str(), AT_FDCWD, build.c_str(), kRenameExchange) == 0) return;
  if (errno != EINVAL && errno != ENOSYS)
    throw RuntimeError("cannot switch " + built + " and " + build + ": " + std::strerror(errno));
  note("this file system cannot exchange two folders in one step: moving the old build aside first");
  const std::string aside = entry + "/old";
  fs::rename(build, aside, ec);
  if (ec) throw RuntimeError("cannot move " + build + " aside: " + ec.message());
  fs::rename(built, build, ec);
  if (ec) throw RuntimeError("cannot move " + built + " to " + build + ": " + ec.message());
  fs::rename(aside, built, ec);
}

// The old build, now in `folder` after the switch, and its architectures file: removed. What cannot be removed is
// said and left (the new build is complete already).
void remove_old_build(const std::string& folder, const std::string& arch_file, const Say& note) {
  std::error_code ec;
  fs::remove(arch_file, ec);
  try {
    remove_script_folder(folder);
  } catch (const std::exception& e) {
    note(std::string("the old build stays in ") + folder + ": " + e.what());
  }
}

// The library the build made in build_dir (the entry's build/, or next/ beside a complete build), checked: it loads,
// is the release, and carries the series (a stock build: carries none of it). The manifest names it where it will be:
// the entry's build/.
Manifest check_library(const BuildPlan& p, const std::string& series, const std::string& build_dir) {
  const std::string library = build_dir + "/" + which_name(p.which) + "/lib/libnccl.so.2";
  nccl::Library lib;
  try {
    lib = nccl::load(library);
  } catch (const std::exception& e) {
    throw RuntimeError(std::string("the library built does not load: ") + e.what());
  }
  if (lib.version_string() != p.port.version)
    throw RuntimeError(
        fmt::format("the library built, {}, is NCCL {}, not {}", library, lib.version_string(), p.port.version));
  const bool patched = std::find(lib.patches.begin(), lib.patches.end(), "peer-regions") != lib.patches.end();
  if (p.which == Which::stock && !lib.patches.empty())
    throw RuntimeError(fmt::format("the library built, {}, carries coldstart's patches ({}): not NCCL's own", library,
                                   join(lib.patches, ", ")));
  if (p.which == Which::patched && !patched)
    throw RuntimeError("the library built, " + library + ", does not carry the series (no NCCL_P2P_PEER_REGION)");
  const std::string stamp =
      p.which == Which::patched ? read_small(build_dir + "/src-patched/.coldstart-source") : std::string();
  if (!stamp.empty() && stamp.find("series=" + series) == std::string::npos)
    throw RuntimeError(fmt::format("build_nccl.sh applied another series than this binary's ({}: '{}', here {})",
                                   build_dir + "/src-patched/.coldstart-source", shown(stamp), series));
  Manifest m;
  m.name = entry_name(p.port.version, p.which);
  m.which = p.which;
  m.version = p.port.version;
  m.arch = p.arch;
  m.series = series;
  m.source = p.download.empty() ? p.src : p.download;
  m.library = p.library;
  m.patches = lib.patches;
  m.built_at = format_now("%Y-%m-%dT%H:%M:%SZ", true);
  m.coldstart_version = COLDSTART_VERSION;
  return m;
}

}  // namespace

namespace {

bool refused(const ScriptEnd& end) { return end.status && WIFEXITED(*end.status) && WEXITSTATUS(*end.status) == 2; }

// The dry run: without --download, the source checked and patched in a scratch folder of the cache (so that it changes
// no entry); nothing built.
int dry_run(const BuildPlan& p, const Say& say, const Say& note) {
  if (p.download.empty()) {
    Scratch scratch(p.cache_dir);
    note("dry run: checking the source with build_nccl.sh --check-only (in a scratch folder, removed after)");
    ScriptEnd end = run_script(p, scratch.path() + "/build", true, say);
    if (!end.status) return 130;
    if (refused(end)) throw InputError("nccl build: " + end.refusal);
    if (!WIFEXITED(*end.status) || WEXITSTATUS(*end.status) != 0)
      throw RuntimeError("nccl build: build_nccl.sh --check-only failed (" + end.why() + ")");
  } else {
    note("dry run: would download " + p.download + " (nothing fetched)");
  }
  note("dry run: nothing built; the library would be " + p.library);
  return 0;
}

// The entry's folder (made where missing) and its lock; a link in place of the entry or of its build folders is
// refused, never followed.
std::unique_ptr<EntryLock> lock_entry(const BuildPlan& p, const Say& note) {
  std::error_code ec;
  fs::create_directories(p.entry, ec);
  if (ec) throw InputError("--cache-dir: " + shown(p.entry) + " cannot be made (" + ec.message() + ")");
  auto refuse_link = [&](const std::string& path) {
    if (fs::is_symlink(fs::symlink_status(path, ec)))
      throw InputError(shown(path) + " is a symbolic link, which nccl build never follows: remove it and run again");
  };
  refuse_link(p.entry);
  auto lock = std::make_unique<EntryLock>(p.entry, [&](const std::string& holder) {
    note(fmt::format("{} is being built by {}; waiting for that build to end", p.entry, shown(holder)));
  });
  refuse_link(p.entry + "/build");
  refuse_link(p.entry + "/next");
  return lock;
}

// The library made in `built` (the entry's build/, or next/ beside a complete build) becomes the entry's: checked,
// stamped with what it was built for, switched in place of build/, and only then named by build.json.
void finish(const BuildPlan& p, const std::string& series, const std::string& built, int64_t t0, const Say& say,
            const Say& note) {
  const std::string build_dir = p.entry + "/build";
  Manifest m = check_library(p, series, built);
  m.library = p.library;
  write_file_atomic(built + "/" + kBuiltForFile, built_for(p.arch, series) + "\n");
  if (built != build_dir) switch_to(p.entry, built, build_dir, note);
  write_file_atomic(p.entry + "/" + kManifestFile, manifest_json(m));
  write_file_atomic(p.entry + "/" + kArchFile, join(p.arch, ",") + "\n");
  std::error_code ec;
  if (fs::exists(fs::symlink_status(p.entry + "/next", ec)))  // the old build, switched out (or a switch's leftover)
    remove_old_build(p.entry + "/next", p.entry + "/" + kArchFile + ".next", note);
  note(fmt::format("built {} in {}; the library carries {} (read back from it)", m.name,
                   format_elapsed(static_cast<double>(mono_ns() - t0) / 1e9),
                   m.patches.empty() ? "none of the series: NCCL's own" : join(m.patches, ", ")));
  for (const auto& l : describe_loading(m, JobShape{p.gpus, 0})) say(l);
}

// Compiles into `dir` (build/, or next/ `beside` a complete build, which stays in use): 0 when make is done, 130
// when interrupted; a refusal or a failure throws, saying the complete build is untouched where there is one.
int compile(const BuildPlan& p, const std::string& dir, bool beside, const Say& say, const Say& note) {
  // make does not notice a change of architectures: a build for others starts over
  const std::string arch_file = p.entry + "/" + kArchFile + (beside ? ".next" : "");
  const std::string before = read_small(arch_file);
  std::error_code ec;
  if (!before.empty() && before != join(p.arch, ",") && fs::exists(fs::symlink_status(dir, ec))) {
    note(fmt::format("the build in {} was for {}; starting over for {}", dir, shown(before), join(p.arch, ",")));
    remove_script_folder(dir);
  }
  write_file_atomic(arch_file, join(p.arch, ",") + "\n");
  if (!p.download.empty()) download(p, note);
  ScriptEnd end = run_script(p, dir, false, say);
  const std::string kept =
      beside ? fmt::format("; the complete build in {}/build is untouched and still in use", p.entry) : "";
  const std::string unbuilt = beside ? dir : p.entry;  // what does not count as built
  if (!end.status) {
    note("interrupted: nothing in " + unbuilt + " counts as built; run the same command again to continue" + kept);
    return 130;
  }
  if (refused(end)) throw InputError("nccl build: " + end.refusal + kept);
  if (!WIFEXITED(*end.status) || WEXITSTATUS(*end.status) != 0)
    throw RuntimeError(fmt::format(
        "nccl build: build_nccl.sh failed ({}); nothing in {} counts as built: fix what it said and run the same "
        "command again to continue (make's log: {}/{}.log){}",
        end.why(), unbuilt, dir, which_name(p.which), kept));
  return 0;
}

}  // namespace

int run_build(const BuildPlan& p, const Say& say) {
  const Say note = [&](const std::string& line) { say("nccl build: " + line); };
  launch::install_interrupt_handlers();
  make_writable_dir(p.cache_dir, "--cache-dir");
  if (p.dry_run) return dry_run(p, say, note);
  const std::string series = p.which == Which::patched ? series_hash(p.share, p.port) : kStockSeries;
  const std::string name = entry_name(p.port.version, p.which);
  const std::string want = built_for(p.arch, series);
  auto lock = lock_entry(p, note);
  // Read under the lock: a build that held it may have just finished this entry.
  std::optional<Entry> current;
  for (auto& e : list_entries(p.cache_dir, false))
    if (e.name == name) current = std::move(e);
  if (current && current->complete && built_for(current->manifest->arch, current->manifest->series) == want) {
    note(fmt::format("{} is built already ({}, for {}, at {})", name,
                     p.which == Which::stock ? std::string("NCCL's own") : "series " + series, join(p.arch, ","),
                     current->manifest->built_at));
    for (const auto& l : describe_loading(*current->manifest, JobShape{p.gpus, 0})) say(l);
    return 0;
  }
  // A switch interrupted between the new build's stamp and its manifest: build/ is what is asked for, whole.
  std::error_code ec;
  if (read_small(p.entry + "/build/" + kBuiltForFile) == want && fs::is_regular_file(p.library, ec)) {
    note("finishing the switch to the build in " + p.entry + "/build (interrupted before its build.json was written)");
    finish(p, series, p.entry + "/build", mono_ns(), say, note);
    return 0;
  }
  // A complete build of other architectures or another series stays in use until the new one is complete: the new
  // one is made beside it (next/), then the two are switched. Else build/ is made or continued.
  const bool beside = current && current->complete;
  if (beside)
    note(
        fmt::format("{}: building beside the complete build (for {}, series {}), which stays in use until this one "
                    "is complete",
                    name, join(current->manifest->arch, ","), current->manifest->series));
  const std::string dir = p.entry + (beside ? "/next" : "/build");
  const int64_t t0 = mono_ns();
  if (int rc = compile(p, dir, beside, say, note); rc != 0) return rc;
  finish(p, series, dir, t0, say, note);
  return 0;
}

}  // namespace coldstart::ncclbuild
