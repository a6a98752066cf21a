#include "gpu/nccl.h"

#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
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

namespace {

// pread of exactly n bytes at off (false on a short read or an error).
bool read_at(int fd, void* out, size_t n, off_t off) {
  auto* p = static_cast<char*>(out);
  while (n > 0) {
    ssize_t got = ::pread(fd, p, n, off);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    p += got, n -= static_cast<size_t>(got), off += got;
  }
  return true;
}

// The file ranges of an ELF64 library's read-only data sections (.rodata, .rodata.*), where string literals such as
// NCCL's parameter names are; empty for anything else (not ELF64, section headers out of the file, no such section).
std::vector<std::pair<uint64_t, uint64_t>> rodata_ranges(int fd, uint64_t file_size) {
  std::vector<std::pair<uint64_t, uint64_t>> out;
  Elf64_Ehdr eh{};
  if (!read_at(fd, &eh, sizeof eh, 0) || std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
      eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shnum == 0 ||
      eh.e_shstrndx >= eh.e_shnum || eh.e_shoff > file_size ||
      uint64_t{eh.e_shnum} * sizeof(Elf64_Shdr) > file_size - eh.e_shoff)
    return out;
  std::vector<Elf64_Shdr> sh(eh.e_shnum);
  if (!read_at(fd, sh.data(), sh.size() * sizeof(Elf64_Shdr), static_cast<off_t>(eh.e_shoff))) return out;
  const Elf64_Shdr& names = sh[eh.e_shstrndx];
  constexpr uint64_t kMaxNames = uint64_t{1} << 20;  // section names: a few hundred bytes in any real library
  if (names.sh_offset > file_size || names.sh_size > std::min(kMaxNames, file_size - names.sh_offset)) return out;
  std::string table(names.sh_size, '\0');
  if (!read_at(fd, table.data(), table.size(), static_cast<off_t>(names.sh_offset))) return out;
  for (const auto& h : sh) {
    if (h.sh_type != SHT_PROGBITS || h.sh_name >= table.size() || h.sh_offset > file_size ||
        h.sh_size > file_size - h.sh_offset)
      continue;
    std::string_view name(table.c_str() + h.sh_name);
    if (name == ".rodata" || name.starts_with(".rodata.")) out.emplace_back(h.sh_offset, h.sh_size);
  }
  return out;
}

// Whether an ELF64 file of type ET_DYN is a program built as position-independent (a PIE: it asks for an interpreter
// and its dynamic section says DF_1_PIE), not a shared library: both are ET_DYN, and only the flag tells them apart.
bool is_pie_program(int fd, const Elf64_Ehdr& eh) {
  if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum == 0 || eh.e_phnum > 256)
    return false;
  std::vector<Elf64_Phdr> ph(eh.e_phnum);
  if (!read_at(fd, ph.data(), ph.size() * sizeof(Elf64_Phdr), static_cast<off_t>(eh.e_phoff))) return false;
  bool interp = false;
  const Elf64_Phdr* dynamic = nullptr;
  for (const auto& h : ph) {
    interp |= h.p_type == PT_INTERP;
    if (h.p_type == PT_DYNAMIC) dynamic = &h;
  }
  if (!interp || !dynamic || dynamic->p_filesz > (uint64_t{1} << 20)) return false;
  std::vector<Elf64_Dyn> dyn(dynamic->p_filesz / sizeof(Elf64_Dyn));
  if (!read_at(fd, dyn.data(), dyn.size() * sizeof(Elf64_Dyn), static_cast<off_t>(dynamic->p_offset))) return false;
  for (const auto& d : dyn) {
    if (d.d_tag == DT_NULL) break;
    if (d.d_tag == DT_FLAGS_1 && (d.d_un.d_val & DF_1_PIE)) return true;
  }
  return false;
}

}  // namespace

std::vector<std::string> patches_in(const std::string& path) {
  // The series' switches (0002's peer regions, 0004's fd-table reservation) are NCCL parameters, whose names are
  // strings in the library's read-only data; its other patches add none (two builds that differ only in them are told
  // apart by their folders). Only those sections are read, through one buffer: a library with its device code can be
  // gigabytes, and neither its size nor a memory limit may change the answer.
  static constexpr std::pair<std::string_view, std::string_view> kMarks[] = {{"NCCL_P2P_PEER_REGION", "peer-regions"},
                                                                             {"NCCL_FD_TABLE_RESERVE", "fd-reserve"}};
  constexpr size_t kOverlap = 64;  // longer than any mark: one split across two chunks is still seen whole
  constexpr size_t kChunk = size_t{1} << 20;
  std::vector<std::string> found;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return found;
  struct stat st {};
  std::vector<bool> seen(std::size(kMarks));
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
    std::string buf;
    for (auto [begin, size] : rodata_ranges(fd, static_cast<uint64_t>(st.st_size))) {
      for (uint64_t at = 0; at < size;) {
        const size_t keep = std::min(buf.size(), kOverlap);
        buf.erase(0, buf.size() - keep);
        const size_t n = static_cast<size_t>(std::min<uint64_t>(kChunk, size - at));
        buf.resize(keep + n);
        if (!read_at(fd, buf.data() + keep, n, static_cast<off_t>(begin + at))) break;
        at += n;
        for (size_t i = 0; i < std::size(kMarks); ++i)
          seen[i] = seen[i] || buf.find(kMarks[i].first) != std::string::npos;
      }
      buf.clear();  // sections are not contiguous: no overlap between them
    }
  }
  ::close(fd);
  for (size_t i = 0; i < std::size(kMarks); ++i)
    if (seen[i]) found.emplace_back(kMarks[i].second);
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
  for (auto& p : gpu::python_site_files("nvidia/nccl/lib/libnccl.so.2")) out.push_back(std::move(p));
  return out;
}

void check_file(const std::string& what, const std::string& path) {
  if (path.find('/') == std::string::npos) return;
  std::error_code ec;
  if (!fs::exists(path, ec)) throw InputError(what + ": no such file; give the path of a libnccl.so.2");
  if (!fs::is_regular_file(path, ec))
    throw InputError(what + ": not a regular file (a folder, a FIFO or a device); give the path of a libnccl.so.2");
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    throw InputError(
        fmt::format("{}: cannot be read ({}); the ranks could not load it either: give a libnccl.so.2 "
                    "this user can read",
                    what, std::strerror(errno)));
  Elf64_Ehdr eh{};
  const bool elf = read_at(fd, &eh, sizeof eh, 0) && std::memcmp(eh.e_ident, ELFMAG, SELFMAG) == 0;
  const bool program = elf && (eh.e_type == ET_EXEC || (eh.e_type == ET_DYN && is_pie_program(fd, eh)));
  ::close(fd);
  if (program)
    throw InputError(what + ": a program (an ELF executable), not a shared library; give the path of a libnccl.so.2");
  if (!elf || eh.e_type != ET_DYN)
    throw InputError(what + ": not a shared library (no ELF shared object header); give the path of a libnccl.so.2");
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
    check_file(what, chosen);
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
