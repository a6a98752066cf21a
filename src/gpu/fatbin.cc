#include "gpu/fatbin.h"

#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>

#include <fmt/format.h>

namespace coldstart::gpu {

std::string Arch::name() const {
  std::string s = std::to_string(sm);
  if (variant) s += variant;
  return s;
}

std::optional<Arch> parse_arch(std::string_view s) {
  Arch a;
  if (!s.empty() && (s.back() == 'a' || s.back() == 'f')) {
    a.variant = s.back();
    s.remove_suffix(1);
  }
  if (s.size() < 2 || s.size() > 3 || s[0] == '0') return std::nullopt;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    a.sm = a.sm * 10 + (c - '0');
  }
  return a;
}

bool sass_runs_on(const Arch& code, int cc) {
  if (code.variant == 'a') return code.sm == cc;
  return code.sm / 10 == cc / 10 && code.sm <= cc;
}

bool ptx_compiles_for(const Arch& code, int cc) {
  if (code.variant == 'a') return code.sm == cc;
  if (code.variant == 'f') return code.sm / 10 == cc / 10 && code.sm <= cc;
  return code.sm <= cc;
}

std::string kernels_for(const std::vector<Arch>& sass, const std::vector<Arch>& ptx, const std::vector<int>& ccs) {
  if (ccs.empty() || std::find(ccs.begin(), ccs.end(), 0) != ccs.end()) return "";
  std::string out = "sass";
  for (int cc : ccs) {
    if (std::any_of(sass.begin(), sass.end(), [&](const Arch& a) { return sass_runs_on(a, cc); })) continue;
    if (std::none_of(ptx.begin(), ptx.end(), [&](const Arch& a) { return ptx_compiles_for(a, cc); })) return "none";
    out = "ptx";
  }
  return out;
}

namespace {

// The fat binary's layout (fatbinary_section.h names the sections; the container's fields are those nvcc writes and
// cuobjdump reads, as CUDA 11 to 13 lay them out).
constexpr uint32_t kFatbinMagic = 0xBA55ED50;
constexpr size_t kContainerHeader = 16;  // magic u32, version u16, header size u16, size of what follows u64
constexpr size_t kEntryHeader = 64;      // the fields read below; newer entries are longer (80, 96, 112)
constexpr uint32_t kMaxEntryHeader = 4096;
constexpr uint16_t kKindPtx = 1;
constexpr uint16_t kKindSass = 2;
constexpr uint64_t kCompressedLz4 = 0x2000;     // flags: the payload is compressed (CUDA 11 to 12.7)
constexpr uint64_t kCompressedZstd = 0x8000;    // (CUDA 12.8 and later)
constexpr uint64_t kArchSpecific = 0x100000;    // "90a"
constexpr uint64_t kFamilySpecific = 0x200000;  // "100f"
constexpr size_t kMaxSections = 1 << 20;

// Bounded reads at offsets, from a file or from memory: false past the end, never a short read taken for a whole one.
class Source {
 public:
  virtual ~Source() = default;
  virtual uint64_t size() const = 0;
  virtual bool read(uint64_t off, void* out, size_t n) const = 0;
};

class MemorySource : public Source {
 public:
  explicit MemorySource(std::string_view b) : b_(b) {}
  uint64_t size() const override { return b_.size(); }
  bool read(uint64_t off, void* out, size_t n) const override {
    if (off > b_.size() || n > b_.size() - off) return false;
    std::memcpy(out, b_.data() + off, n);
    return true;
  }

 private:
  std::string_view b_;
};

class FileSource : public Source {
 public:
  FileSource(int fd, uint64_t size) : fd_(fd), size_(size) {}
  uint64_t size() const override { return size_; }
  bool read(uint64_t off, void* out, size_t n) const override {
    if (off > size_ || n > size_ - off) return false;
    auto* p = static_cast<char*>(out);
    while (n > 0) {
      ssize_t got = pread(fd_, p, n, static_cast<off_t>(off));
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) return false;
      p += got;
      n -= static_cast<size_t>(got);
      off += static_cast<uint64_t>(got);
    }
    return true;
  }

 private:
  int fd_;
  uint64_t size_;
};

template <class T>
T le(const unsigned char* p) {
  T v = 0;
  for (size_t i = 0; i < sizeof(T); ++i) v |= static_cast<T>(static_cast<T>(p[i]) << (8 * i));
  return v;
}

struct Section {
  std::string name;
  uint64_t offset = 0, size = 0;
};

// Accumulates what the entries say, per architecture.
struct Tally {
  std::map<Arch, bool> sass;
  std::map<Arch, uint64_t> ptx;  // bytes uncompressed, saturating
  size_t containers = 0, other = 0;
};

class Reader {
 public:
  Reader(const Source& src, const std::string& name) : src_(src), name_(name) {}

  std::optional<GpuCode> run(std::string* problem) {
    std::vector<Section> sections;
    if (!fatbin_sections(&sections)) return fail(problem);
    Tally t;
    for (const Section& s : sections)
      if (!walk(s, &t)) return fail(problem);
    GpuCode out;
    for (const auto& kv : t.sass) out.sass.push_back(kv.first);
    for (const auto& kv : t.ptx) {
      out.ptx.push_back(kv.first);
      out.ptx_bytes.push_back(kv.second);
    }
    out.containers = t.containers;
    out.other_entries = t.other;
    return out;
  }

 private:
  const Source& src_;
  const std::string& name_;
  std::string why_;

  std::optional<GpuCode> fail(std::string* problem) const {
    *problem = name_ + ": " + why_;
    return std::nullopt;
  }
  bool bad(std::string why) {
    why_ = std::move(why);
    return false;
  }

  // The sections that hold fat binaries, from the ELF section headers.
  bool fatbin_sections(std::vector<Section>* out) {
    Elf64_Ehdr eh{};
    if (!src_.read(0, &eh, sizeof eh) || std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0)
      return bad("not an ELF file; give a shared library (.so)");
    if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB)
      return bad("not a little-endian 64-bit ELF file; its GPU code is not read");
    if (eh.e_shoff == 0) return bad("no section headers (stripped of them), so its fat binaries cannot be found");
    if (eh.e_shentsize != sizeof(Elf64_Shdr))
      return bad(fmt::format("section header size {} (ELF64's is {})", eh.e_shentsize, sizeof(Elf64_Shdr)));
    const uint64_t size = src_.size();
    Elf64_Shdr first{};
    if (!src_.read(eh.e_shoff, &first, sizeof first))
      return bad(fmt::format("section headers at offset {} lie past the end of the file ({} bytes): truncated?",
                             eh.e_shoff, size));
    // More than 0xff00 sections, or a string table index past 0xff00: the real numbers are in section 0.
    const uint64_t count = eh.e_shnum ? eh.e_shnum : first.sh_size;
    const uint64_t names_at = eh.e_shstrndx == SHN_XINDEX ? first.sh_link : eh.e_shstrndx;
    if (count > kMaxSections || count * sizeof(Elf64_Shdr) > size - eh.e_shoff)
      return bad(fmt::format("{} section headers at offset {} do not fit in the file ({} bytes): truncated?", count,
                             eh.e_shoff, size));
    if (names_at >= count) return bad(fmt::format("section names in section {} of {}", names_at, count));
    std::vector<Elf64_Shdr> sh(count);
    if (!src_.read(eh.e_shoff, sh.data(), sh.size() * sizeof(Elf64_Shdr)))
      return bad("cannot read its section headers");
    const Elf64_Shdr& names = sh[names_at];
    if (names.sh_offset > size || names.sh_size > size - names.sh_offset)
      return bad("its section names lie past the end of the file: truncated?");
    for (const Elf64_Shdr& h : sh) {
      // The two names wanted are at most 14 characters: read 16 and compare, bounded by the name table.
      char buf[16] = {};
      if (h.sh_name >= names.sh_size) continue;
      const size_t n = static_cast<size_t>(std::min<uint64_t>(sizeof buf - 1, names.sh_size - h.sh_name));
      if (!src_.read(names.sh_offset + h.sh_name, buf, n)) return bad("cannot read its section names");
      const std::string name(buf, strnlen(buf, n));
      if (name != ".nv_fatbin" && name != "__nv_relfatbin") continue;
      if (h.sh_type == SHT_NOBITS) continue;
      if (h.sh_offset > size || h.sh_size > size - h.sh_offset)
        return bad(
            fmt::format("section {} ({} bytes at offset {}) runs past the end of the file ({} bytes): "
                        "truncated?",
                        name, h.sh_size, h.sh_offset, size));
      out->push_back({name, h.sh_offset, h.sh_size});
    }
    return true;
  }

  // The containers of one section, one after another, with zero padding allowed between them.
  bool walk(const Section& s, Tally* t) {
    const uint64_t end = s.offset + s.size;
    uint64_t pos = s.offset;
    while (pos < end) {
      const uint64_t left = end - pos;
      unsigned char h[kContainerHeader] = {};
      if (!src_.read(pos, h, static_cast<size_t>(std::min<uint64_t>(left, sizeof h))))
        return bad("cannot read " + s.name);
      if (left < 4 || le<uint32_t>(h) != kFatbinMagic) {
        if (!skip_padding(s, &pos, end)) return false;
        continue;
      }
      if (left < sizeof h)
        return bad(fmt::format("{} at offset {}: a fat binary's header cut off by the section's end", s.name, pos));
      const uint16_t version = le<uint16_t>(h + 4);
      const uint16_t header = le<uint16_t>(h + 6);
      const uint64_t fat = le<uint64_t>(h + 8);
      if (version != 1)
        return bad(fmt::format("{} at offset {}: fat binary version {} (this reads version 1)", s.name, pos, version));
      if (header < kContainerHeader || header > left)
        return bad(fmt::format("{} at offset {}: a fat binary header of {} bytes", s.name, pos, header));
      if (fat > left - header)
        return bad(fmt::format("{} at offset {}: a fat binary of {} bytes where the section holds {}: truncated?",
                               s.name, pos, fat, left - header));
      if (!entries(s, pos + header, pos + header + fat, t)) return false;
      ++t->containers;
      pos += header + fat;
    }
    return true;
  }

  // Zero bytes, 8 at a time, up to the next container or the section's end; *pos is not at a container.
  bool skip_padding(const Section& s, uint64_t* pos, uint64_t end) {
    unsigned char buf[4096];
    while (*pos < end) {
      const size_t n = static_cast<size_t>(std::min<uint64_t>(sizeof buf, end - *pos));
      if (!src_.read(*pos, buf, n)) return bad("cannot read " + s.name);
      for (size_t i = 0; i < n; i += 8) {
        const size_t m = std::min<size_t>(8, n - i);
        if (std::all_of(buf + i, buf + i + m, [](unsigned char c) { return c == 0; })) continue;
        if (m >= 4 && le<uint32_t>(buf + i) == kFatbinMagic) {
          *pos += i;
          return true;
        }
        return bad(fmt::format("{} at offset {}: neither a fat binary (magic 0x{:X}) nor padding", s.name, *pos + i,
                               kFatbinMagic));
      }
      *pos += n;
    }
    return true;
  }

  // One container's entries: each a header (kind, size, architecture, flags) and its payload, back to back.
  bool entries(const Section& s, uint64_t pos, uint64_t end, Tally* t) {
    while (pos < end) {
      unsigned char e[kEntryHeader];
      if (end - pos < sizeof e)
        return bad(fmt::format("{} at offset {}: an entry's header runs past its fat binary's end", s.name, pos));
      if (!src_.read(pos, e, sizeof e)) return bad("cannot read " + s.name);
      const uint16_t kind = le<uint16_t>(e);
      const uint32_t header = le<uint32_t>(e + 4);
      const uint64_t payload = le<uint64_t>(e + 8);
      const uint32_t sm = le<uint32_t>(e + 28);
      const uint64_t flags = le<uint64_t>(e + 40);
      const uint64_t uncompressed = le<uint64_t>(e + 56);
      if (header < kEntryHeader || header > kMaxEntryHeader || header > end - pos)
        return bad(fmt::format("{} at offset {}: an entry header of {} bytes", s.name, pos, header));
      if (payload > end - pos - header)
        return bad(
            fmt::format("{} at offset {}: an entry of {} bytes runs past its fat binary's end", s.name, pos, payload));
      if (kind == kKindPtx || kind == kKindSass) {
        if (sm < 10 || sm > 999)
          return bad(fmt::format("{} at offset {}: an entry for architecture {}", s.name, pos, sm));
        Arch a{static_cast<int>(sm), (flags & kArchSpecific) ? 'a' : (flags & kFamilySpecific) ? 'f' : '\0'};
        if (kind == kKindSass) {
          t->sass[a] = true;
        } else {
          const uint64_t bytes = (flags & (kCompressedLz4 | kCompressedZstd)) ? uncompressed : payload;
          uint64_t& sum = t->ptx[a];
          sum = bytes > UINT64_MAX - sum ? UINT64_MAX : sum + bytes;
        }
      } else {
        ++t->other;
      }
      pos += header + payload;
    }
    return true;
  }
};

}  // namespace

std::optional<GpuCode> parse_gpu_code(std::string_view bytes, const std::string& name, std::string* problem) {
  MemorySource src(bytes);
  return Reader(src, name).run(problem);
}

std::optional<GpuCode> read_gpu_code(const std::string& path, std::string* problem) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    *problem = path + ": " + std::strerror(errno);
    return std::nullopt;
  }
  struct stat st {};
  std::optional<GpuCode> out;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    *problem = path + ": not a regular file; give a shared library (.so)";
  } else {
    FileSource src(fd, static_cast<uint64_t>(st.st_size));
    out = Reader(src, path).run(problem);
  }
  close(fd);
  return out;
}

}  // namespace coldstart::gpu
