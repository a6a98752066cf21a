#include "ncclbuild/build.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <thread>

#include <fmt/format.h>

#include "gpu/cuda.h"
#include "gpu/nccl.h"
#include "launch/trial.h"
#include "util/clock.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/process.h"
#include "util/strings.h"

namespace coldstart::ncclbuild {
namespace fs = std::filesystem;

namespace {
std::string arch_text(const std::vector<std::string>& arch) { return join(arch, ","); }
// The build folder of the other library of the release in the cache: where a build may start from
std::string seed_of(const std::string& cache_dir, const std::string& version, Which which) {
  return cache_dir + "/" + entry_name(version, which == Which::patched ? Which::stock : Which::patched) + "/build";
}
}  // namespace

std::string format_elapsed(double s) {
  const int64_t t = static_cast<int64_t>(s + 0.5);
  if (t < 60) return fmt::format("{}s", t);
  if (t < 3600) return fmt::format("{}m{:02}s", t / 60, t % 60);
  return fmt::format("{}h{:02}m", t / 3600, t / 60 % 60);
}

std::vector<std::string> parse_arch(const std::string& list) {
  // The compute capabilities of NVIDIA's GPUs from Pascal on (CUDA 13 builds from 75): 80 A100, 90 H100/H200,
  // 100 B200, 103 B300, 120 RTX 50xx; 'a' (that GPU only) or 'f' (its family) from 90 on.
  static const std::vector<int> known = {60, 61, 62, 70, 72, 75, 80, 86, 87, 88, 89, 90, 100, 101, 103, 110, 120, 121};
  std::vector<std::string> out;
  for (const auto& raw : split(list, ',')) {
    const std::string a(trim(raw));
    // 2 or 3 digits and an optional 'a' or 'f' (a loop, not std::regex: libstdc++'s recurses per character)
    const bool suffix = !a.empty() && (a.back() == 'a' || a.back() == 'f');
    const std::string_view number = std::string_view(a).substr(0, a.size() - (suffix ? 1 : 0));
    const bool ok = all_digits(number) && number.size() >= 2 && number.size() <= 3 &&
                    std::count(known.begin(), known.end(), std::stoi(std::string(number))) > 0 &&
                    (!suffix || std::stoi(std::string(number)) >= 90);
    if (!ok)
      throw InputError(fmt::format(
          "--arch {}: '{}' is not a GPU architecture NCCL builds for; give compute capabilities such as 80 (A100), "
          "90 (H100, H200), 100 (B200), 120 (RTX 50xx), comma-separated",
          shown(list, 64), shown(a, 16)));
    if (std::find(out.begin(), out.end(), a) == out.end()) out.push_back(a);
  }
  return out;
}

std::vector<std::string> arch_of(const std::vector<std::pair<int, int>>& capabilities) {
  std::vector<std::string> out;
  for (auto [major, minor] : capabilities) {
    std::string a = fmt::format("{}{}", major, minor);
    if (std::find(out.begin(), out.end(), a) == out.end()) out.push_back(a);
  }
  std::sort(out.begin(), out.end(), [](const std::string& x, const std::string& y) {
    return x.size() != y.size() ? x.size() < y.size() : x < y;
  });
  return out;
}

Probes node_probes() {
  return {gpu::probe_compute_capabilities, detect_torch_nccl,
          [] { return static_cast<int>(gpu::probe_cuda().gpus.size()); }};
}

std::vector<std::string> BuildPlan::script_argv(const std::string& out_dir, bool check_only) const {
  std::vector<std::string> a = {find_on_path("bash").value_or("/bin/bash"),
                                share.script(),
                                "--src",
                                src,
                                "--out",
                                out_dir,
                                "--which",
                                which_name(which),
                                "--version",
                                port.version,
                                "--arch",
                                arch_text(arch),
                                "--jobs",
                                std::to_string(jobs)};
  if (!seed.empty()) a.insert(a.end(), {"--seed-from", seed});
  if (check_only) a.push_back("--check-only");
  return a;
}

BuildPlan plan_build(const BuildRequest& req, const Share& share, const Probes& probes) {
  BuildPlan p;
  p.share = share;
  const auto ports = read_ports(share);
  if (ports.empty()) throw RuntimeError(share.series_dir() + "/series lists no release with a source-tree file");
  std::string version = req.version;
  if (!version.empty()) {
    if (!is_release(version))
      throw InputError(fmt::format("--version {}: not an NCCL release number such as {}; the series has ports for {}",
                                   version, ports.back().version, port_list(ports)));
    p.version_from = "--version";
  } else {
    TorchNccl t = probes.torch_nccl(req.python);
    version = t.version;
    p.version_from = fmt::format("the release PyTorch{} loads ({}, for {})",
                                 t.torch_version.empty() ? "" : " " + t.torch_version, t.library, t.python);
    if (std::none_of(ports.begin(), ports.end(), [&](const Port& x) { return x.version == version; }))
      throw InputError(fmt::format(
          "PyTorch loads NCCL {} ({}); the series has no port for it, only for {}: give --version one of them (the "
          "job then loads that release in place of PyTorch's)",
          version, t.library, port_list(ports)));
  }
  auto port = std::find_if(ports.begin(), ports.end(), [&](const Port& x) { return x.version == version; });
  if (port == ports.end())
    throw InputError(
        fmt::format("--version {}: the series has no port for NCCL {}; it has ports for {}: give one of them", version,
                    version, port_list(ports)));
  p.port = *port;

  if (!req.arch.empty()) {
    p.arch = parse_arch(req.arch);
    p.arch_from = "--arch";
  } else {
    std::string problem;
    auto caps = probes.capabilities(&problem);
    p.arch = arch_of(caps);
    if (p.arch.empty())
      throw InputError("no GPU here to build for (" + (problem.empty() ? std::string("none found") : problem) +
                       "): give --arch, the compute capabilities of the job's GPUs, e.g. --arch 90 for H100 and H200");
    std::vector<std::string> seen;
    for (auto [major, minor] : caps) seen.push_back(fmt::format("{}.{}", major, minor));
    p.arch_from = fmt::format("the GPUs here: {}", join(seen, ", "));
    p.gpus = static_cast<int>(caps.size());
  }
  if (p.gpus == 0 && probes.gpu_count) p.gpus = probes.gpu_count();
  if (req.jobs < 0) throw InputError(fmt::format("--jobs {}: give a positive number", req.jobs));
  p.jobs = req.jobs > 0 ? req.jobs : static_cast<int>(std::max(1L, ::sysconf(_SC_NPROCESSORS_ONLN)));
  p.cache_dir = req.cache_dir.empty() ? default_cache_dir() : fs::absolute(req.cache_dir).lexically_normal().string();
  p.which = req.which == "stock" ? Which::stock : Which::patched;
  p.entry = p.cache_dir + "/" + entry_name(p.port.version, p.which);
  p.library = p.entry + "/build/" + which_name(p.which) + "/lib/libnccl.so.2";
  p.seed = seed_of(p.cache_dir, p.port.version, p.which);
  if (req.src.empty()) {
    p.download = release_url(p.port);
    p.src = p.entry + "/" + p.port.tag + ".tar.gz";
  } else {
    p.src = fs::absolute(req.src).lexically_normal().string();
  }
  p.dry_run = req.dry_run;
  p.progress_every_s = req.progress_every_s;
  return p;
}

std::vector<BuildPlan> plan_builds(const BuildRequest& req, const Share& share, const Probes& probes) {
  if (req.which != "patched" && req.which != "stock" && req.which != "both")
    throw InputError("--which " + shown(req.which, 32) +
                     ": give patched (coldstart's NCCL), stock (NCCL's own, to compare against) or both");
  std::vector<BuildPlan> plans = {plan_build(req, share, probes)};
  if (req.which != "both") return plans;
  BuildPlan stock = plans[0];
  stock.which = Which::stock;
  stock.entry = stock.cache_dir + "/" + entry_name(stock.port.version, Which::stock);
  stock.library = stock.entry + "/build/stock/lib/libnccl.so.2";
  stock.seed = seed_of(stock.cache_dir, stock.port.version, Which::stock);  // the patched one, built just before it
  plans.push_back(stock);  // a download stays the patched entry's tarball: fetched once
  return plans;
}

std::vector<std::string> describe_plan(const BuildPlan& p) {
  std::vector<std::string> patches;
  for (const auto& x : p.port.patches) patches.push_back(x.substr(x.find('/') + 1));
  std::vector<std::string> out = {
      p.version_from.starts_with("--") ? fmt::format("NCCL {} ({})", p.port.version, p.version_from)
                                       : fmt::format("NCCL {}: {}", p.port.version, p.version_from),
      p.which == Which::stock
          ? fmt::format("patches: none: NCCL's own {}, built from the same source as the patched one so that a node "
                        "compares the two (coldstart bench on one GPU runs both)",
                        p.port.version)
          : fmt::format("patches: {} (series {}; {}: {})", join(patches, ", "), series_hash(p.share, p.port),
                        p.share.how, p.share.root),
      p.download.empty() ? fmt::format("source: {} (build_nccl.sh checks it is NCCL {} as released)", p.src, p.port.tag)
                         : fmt::format("source: no --src: NCCL {} from {} (downloaded to {}; offline, give --src)",
                                       p.port.tag, p.download, p.src),
      fmt::format("architectures: {} ({})", arch_text(p.arch), p.arch_from),
      fmt::format("into {} (its library: {}), make -j{}", p.entry, p.library, p.jobs)};
  return out;
}

std::vector<std::string> describe_loading(const Manifest& m, JobShape job) {
  const LoadLines l = load_lines(m.library, m.version, job);
  const bool stock = m.which == Which::stock;
  std::vector<std::string> out = {
      fmt::format("{}: {}", m.name, m.library),
      stock ? fmt::format("NCCL's own {}, to compare against; load it the same way (every rank of a job must load the "
                          "same one):",
                          m.version)
            : "load it in place of the job's own NCCL (every rank of a job must load the same one):",
      "  torchrun:  " + l.torchrun,
      "  Ray:       " + l.ray,
      "  Slurm:     " + l.slurm,
      stock ? fmt::format("  check:     NCCL_DEBUG=INFO prints 'NCCL version {}' at init, and no 'P2P peer regions'",
                          m.version)
            : "  check:     NCCL_DEBUG=INFO prints 'P2P peer regions enabled' at init"};
  const bool new_enough = version_code(m.version) >= 23000;
  if (job.shares_gpu() && new_enough)
    out.push_back(job.gpus == 1 ? "  one GPU here: a job's ranks share it, which NCCL runs only with "
                                  "NCCL_MULTI_RANK_GPU_ENABLE=1 (set in the lines above)"
                                : "  ranks share a GPU: NCCL runs them only with NCCL_MULTI_RANK_GPU_ENABLE=1 (set in "
                                  "the lines above)");
  else if (job.shares_gpu())
    out.push_back(
        fmt::format("  one GPU here: NCCL {} runs one rank a GPU (ranks sharing one need NCCL 2.30 or newer "
                    "and NCCL_MULTI_RANK_GPU_ENABLE=1)",
                    m.version));
  else if (new_enough)
    out.push_back("  a job with more ranks than GPUs (ranks sharing one) also needs NCCL_MULTI_RANK_GPU_ENABLE=1");
  return out;
}

MakeLogReader::MakeLogReader(std::string log, std::string src_dir, std::string obj_dir)
    : log_(std::move(log)), src_dir_(std::move(src_dir)), obj_dir_(std::move(obj_dir)) {}

namespace {
// What make's log names for a file nvcc compiles in src/device: its own .cu files and what generate.py wrote
bool is_device_source(std::string_view what) {
  return what.ends_with(".cu") || what.find("gensrc/") != std::string_view::npos;
}
}  // namespace

MakeProgress MakeLogReader::read() {
  int fd = ::open(log_.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd >= 0) {
    char buf[1 << 16];
    for (;;) {
      ssize_t n = ::pread(fd, buf, sizeof buf, static_cast<off_t>(offset_));
      if (n <= 0) break;
      offset_ += static_cast<uint64_t>(n);
      partial_.append(buf, static_cast<size_t>(n));
      size_t start = 0, nl;
      while ((nl = partial_.find('\n', start)) != std::string::npos) {
        std::string_view line(partial_.data() + start, nl - start);
        start = nl + 1;
        // NCCL's two forms: "Compiling  src.cc    > obj.o" (src/Makefile) and "Compiling      path" (device)
        // build_nccl.sh's line where the build started from another's objects: those files count as compiled
        if (line.starts_with("Seeded ")) {
          const std::string l(line);
          if (std::sscanf(l.c_str(), "Seeded %zu host and %zu device objects", &seeded_host_, &seeded_device_) != 2)
            seeded_host_ = seeded_device_ = 0;
          continue;
        }
        if (!line.starts_with("Compiling ")) continue;
        std::string_view what = trim(line.substr(10));
        if (auto arrow = what.find(" > "); arrow != std::string_view::npos) what = trim(what.substr(0, arrow));
        seen_.insert(std::string(what));
      }
      partial_.erase(0, start);
    }
    ::close(fd);
  }
  MakeProgress p;
  p.compiled = seen_.size() + seeded_host_ + seeded_device_;
  p.compiled_device = seeded_device_;
  for (const auto& what : seen_)
    if (is_device_source(what)) ++p.compiled_device;
  std::error_code ec;
  auto count = [&](const std::string& dir, auto keep) {
    size_t n = 0;
    for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
      std::error_code e2;
      if (it->is_regular_file(e2) && keep(it->path())) ++n;
    }
    return n;
  };
  if (host_sources_ == 0 && fs::is_directory(src_dir_ + "/src", ec))
    // The library's and its tools' sources; Windows' and the stubs are not built on Linux.
    host_sources_ = count(src_dir_ + "/src", [](const fs::path& f) {
      const std::string name = f.filename().string();
      return (f.extension() == ".cc" || f.extension() == ".cpp") && name.find("windows") == std::string::npos &&
             name.find("_stub") == std::string::npos && f.string().find("/src/device/") == std::string::npos;
    });
  const std::string gensrc = obj_dir_ + "/device/gensrc";
  if (host_sources_ > 0 && fs::is_directory(gensrc, ec)) {
    // src/device's own two (common.cu, onerank.cu) and what NCCL's generate.py wrote
    p.total_device =
        2 + count(gensrc, [](const fs::path& f) { return f.extension() == ".cu" || f.extension() == ".cc"; });
    p.total = std::max(host_sources_ + p.total_device, p.compiled);
    p.total_device = std::max(p.total_device, p.compiled_device);
  }
  return p;
}

std::string progress_line(const MakeProgress& now, const MakeProgress& at_start, double elapsed_s) {
  std::string s = now.total > 0 ? fmt::format("compiled {} of ~{} files", now.compiled, now.total)
                                : fmt::format("compiled {} files", now.compiled);
  s += ", " + format_elapsed(elapsed_s);
  // Work in host files' worth: a device file is kDeviceFileCost of them
  auto work = [](size_t files, size_t device) {
    return static_cast<double>(files - std::min(files, device)) + kDeviceFileCost * static_cast<double>(device);
  };
  const size_t done_here = now.compiled - std::min(now.compiled, at_start.compiled);
  const double work_here = work(now.compiled, now.compiled_device) - work(at_start.compiled, at_start.compiled_device);
  if (now.total > now.compiled && done_here >= 5 && work_here > 0 && elapsed_s >= 10) {
    const double left =
        elapsed_s / work_here * (work(now.total, now.total_device) - work(now.compiled, now.compiled_device));
    s += ", about " + format_elapsed(left) + " left";
  }
  return s;
}

}  // namespace coldstart::ncclbuild
