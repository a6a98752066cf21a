#include "gpu/nccl.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

#include "gpu/libpaths.h"
#include "util/dl.h"
#include "util/error.h"
#include "util/strings.h"

namespace coldstart::nccl {
namespace fs = std::filesystem;

Config default_config() {
  return Config{sizeof(Config), 0xcafebeef, 21900, INT_MIN, INT_MIN, INT_MIN, INT_MIN, nullptr, INT_MIN};
}

std::string Library::version_string() const {
  // NCCL_VERSION(X,Y,Z) is X*10000 + Y*100 + Z since 2.9; X*1000 + Y*100 + Z before.
  int major = version >= 10000 ? version / 10000 : version / 1000;
  int minor = version >= 10000 ? version / 100 % 100 : version / 100 % 10;
  return fmt::format("{}.{}.{}", major, minor, version % 100);
}

namespace {

std::string loaded_path(void* handle, const std::string& fallback) {
  link_map* map = nullptr;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map && map->l_name && *map->l_name) {
    std::error_code ec;
    auto real = fs::canonical(map->l_name, ec);
    return ec ? std::string(map->l_name) : real.string();
  }
  return fallback;
}

// Opens one file as NCCL; on failure returns false and says why.
bool try_load(const std::string& path, Library* lib, std::string* why) {
  void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char* e = dlerror();
    *why = e ? e : "dlopen failed";
    return false;
  }
  Table t{};
  bool ok = bind_symbol(h, "ncclGetVersion", &t.GetVersion) && bind_symbol(h, "ncclGetUniqueId", &t.GetUniqueId) &&
            bind_symbol(h, "ncclCommDestroy", &t.CommDestroy) &&
            bind_symbol(h, "ncclGetErrorString", &t.GetErrorString) && bind_symbol(h, "ncclAllReduce", &t.AllReduce) &&
            bind_symbol(h, "ncclAllGather", &t.AllGather) && bind_symbol(h, "ncclReduceScatter", &t.ReduceScatter) &&
            bind_symbol(h, "ncclBroadcast", &t.Broadcast) && bind_symbol(h, "ncclSend", &t.Send) &&
            bind_symbol(h, "ncclRecv", &t.Recv) && bind_symbol(h, "ncclGroupStart", &t.GroupStart) &&
            bind_symbol(h, "ncclGroupEnd", &t.GroupEnd) &&
            bind_symbol(h, "ncclCommGetAsyncError", &t.CommGetAsyncError);
  if (!ok) {
    dlclose(h);
    *why = "not an NCCL library (ncclGetVersion and the collectives are missing)";
    return false;
  }
  int v = 0;
  t.GetVersion(&v);
  if (v < kMinVersion || !bind_symbol(h, "ncclCommInitRankConfig", &t.CommInitRankConfig) ||
      !bind_symbol(h, "ncclCommSplit", &t.CommSplit)) {
    dlclose(h);
    Library tmp;
    tmp.version = v;
    *why = "NCCL " + tmp.version_string() + " is too old (coldstart needs 2.19 or later)";
    return false;
  }
  bind_symbol(h, "ncclGetLastError", &t.GetLastError);  // optional
  bind_symbol(h, "ncclCommFinalize", &t.CommFinalize);
  bind_symbol(h, "ncclCommAbort", &t.CommAbort);
  bind_symbol(h, "ncclCommSuspend", &t.CommSuspend);
  bind_symbol(h, "ncclCommResume", &t.CommResume);
  lib->fn = t;
  lib->version = v;
  lib->handle = h;
  lib->path = loaded_path(h, path);
  lib->patches = patches_in(lib->path);
  return true;
}

}  // namespace

std::vector<std::string> patches_in(const std::string& path) {
  // Each patch of the series registers an NCCL parameter; its name is a string in the library's read-only data.
  static constexpr std::pair<std::string_view, std::string_view> kMarks[] = {{"NCCL_P2P_PEER_REGION", "peer-regions"},
                                                                             {"NCCL_FD_TABLE_RESERVE", "fd-reserve"}};
  std::vector<std::string> found;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return found;
  struct stat st {};
  void* map = MAP_FAILED;
  if (::fstat(fd, &st) == 0 && st.st_size > 0)
    map = ::mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (map == MAP_FAILED) return found;
  for (const auto& [mark, name] : kMarks)
    if (::memmem(map, static_cast<size_t>(st.st_size), mark.data(), mark.size())) found.emplace_back(name);
  ::munmap(map, static_cast<size_t>(st.st_size));
  return found;
}

std::string Library::name() const {
  std::string n = version_string();
  for (const auto& p : patches) n += "+" + p;
  return n;
}

std::vector<std::string> candidate_paths(const std::string& explicit_path) {
  if (!explicit_path.empty()) return {explicit_path};
  std::vector<std::string> out;
  if (const char* env = std::getenv("COLDSTART_NCCL_LIB"); env && *env) return {env};
  out.emplace_back("libnccl.so.2");  // the loader's search path
  for (const char* p : {"/usr/local/cuda/lib64/libnccl.so.2", "/usr/lib/x86_64-linux-gnu/libnccl.so.2",
                        "/usr/lib/aarch64-linux-gnu/libnccl.so.2", "/usr/lib64/libnccl.so.2"})
    out.emplace_back(p);
  for (auto& p : python_site_files("nvidia/nccl/lib/libnccl.so.2")) out.push_back(std::move(p));
  return out;
}

Library load(const std::string& explicit_path) {
  std::string chosen = explicit_path;
  bool from_env = false;
  if (chosen.empty())
    if (const char* env = std::getenv("COLDSTART_NCCL_LIB"); env && *env) {
      chosen = env;
      from_env = true;
    }
  Library lib;
  std::string why;
  if (!chosen.empty()) {
    std::string what = from_env ? "COLDSTART_NCCL_LIB=" + chosen : "--nccl-lib " + chosen;
    std::error_code ec;
    if (chosen.find('/') != std::string::npos && !fs::is_regular_file(chosen, ec))
      throw InputError(what + ": no such file; give the path of a libnccl.so.2");
    if (!try_load(chosen, &lib, &why)) throw InputError(what + ": " + why);
    return lib;
  }
  std::vector<std::string> tried;
  for (const auto& p : candidate_paths("")) {
    if (try_load(p, &lib, &why)) return lib;
    tried.push_back(p);
  }
  throw RuntimeError("no NCCL library found (tried " + join(tried, ", ") +
                     "); install one (pip install nvidia-nccl-cu12, or the CUDA toolkit's) or give --nccl-lib PATH");
}

std::string uid_hash(const UniqueId& id) {
  // FNV-1a, 64-bit: stable across builds and enough to tell two ids apart.
  uint64_t h = 0xcbf29ce484222325ULL;
  for (char c : id.internal) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ULL;
  }
  return fmt::format("{:016x}", h);
}

}  // namespace coldstart::nccl
