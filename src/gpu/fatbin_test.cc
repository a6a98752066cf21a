// The GPU code of shared libraries: real ones that nvcc built with chosen -gencode (CMakeLists.txt, tests/fatbin/),
// and made-up ELF files whose fat binaries are cut short or lie about their sizes.
#include "gpu/fatbin.h"

#include <gtest/gtest.h>

#include <elf.h>

#include <cstddef>
#include <cstring>
#include <filesystem>
#include <random>

namespace coldstart::gpu {
namespace {

const std::string kFixtures = COLDSTART_FATBIN_DIR;

std::vector<std::string> names(const std::vector<Arch>& v) {
  std::vector<std::string> out;
  for (const auto& a : v) out.push_back(a.name());
  return out;
}

GpuCode fixture(const std::string& name) {
  std::string problem;
  std::optional<GpuCode> c = read_gpu_code(kFixtures + "/" + name + ".so", &problem);
  EXPECT_TRUE(c) << problem;
  return c.value_or(GpuCode{});
}

#define NEEDS_NVCC() \
  if (kFixtures.empty()) GTEST_SKIP() << "no nvcc at build time: the fixtures of real GPU code were not built"

TEST(Fatbin, NvccSassFor80And90AndPtxFor90) {
  NEEDS_NVCC();
  GpuCode c = fixture("sass80_90_ptx90");
  EXPECT_EQ(names(c.sass), (std::vector<std::string>{"80", "90"}));
  EXPECT_EQ(names(c.ptx), (std::vector<std::string>{"90"}));
  ASSERT_EQ(c.ptx_bytes.size(), 1u);
  EXPECT_GT(c.ptx_bytes[0], 100u);  // the PTX's text, uncompressed: some hundreds of bytes for one small kernel
  EXPECT_LT(c.ptx_bytes[0], 100000u);
  EXPECT_EQ(c.other_entries, 0u);
}

TEST(Fatbin, NvccPtxOnly) {
  NEEDS_NVCC();
  GpuCode c = fixture("ptx80");
  EXPECT_TRUE(c.sass.empty());
  EXPECT_EQ(names(c.ptx), (std::vector<std::string>{"80"}));
}

// Built with -rdc, as NCCL is: the PTX is only in __nv_relfatbin, beside the linked code in .nv_fatbin.
TEST(Fatbin, NvccRelocatableCodeKeepsItsPtxInTheRelfatbinSection) {
  NEEDS_NVCC();
  GpuCode c = fixture("rdc_sass80_ptx90");
  EXPECT_EQ(names(c.sass), (std::vector<std::string>{"80"}));
  EXPECT_EQ(names(c.ptx), (std::vector<std::string>{"90"}));
  EXPECT_GE(c.containers, 2u);
}

TEST(Fatbin, NvccArchitectureAndFamilyVariants) {
  NEEDS_NVCC();
  if (!std::filesystem::exists(kFixtures + "/variants.so")) GTEST_SKIP() << "nvcc before 12.9 names no 100f";
  GpuCode c = fixture("variants");
  EXPECT_EQ(names(c.sass), (std::vector<std::string>{"90a", "100f"}));
  EXPECT_EQ(names(c.ptx), (std::vector<std::string>{"100f"}));
  // Uncompressed PTX is counted by its payload, compressed by the size it says it expands to: the same text.
  GpuCode plain = fixture("ptx80_uncompressed"), packed = fixture("ptx80");
  ASSERT_EQ(plain.ptx_bytes.size(), 1u);
  ASSERT_EQ(packed.ptx_bytes.size(), 1u);
  EXPECT_NEAR(static_cast<double>(plain.ptx_bytes[0]), static_cast<double>(packed.ptx_bytes[0]), 8);
}

TEST(Fatbin, ArchitecturesAsNvccNamesThem) {
  EXPECT_EQ(parse_arch("90")->sm, 90);
  EXPECT_EQ(parse_arch("90a")->variant, 'a');
  EXPECT_EQ(parse_arch("100f")->name(), "100f");
  for (const char* bad : {"", "9", "1000", "090", "90b", "a", "9a0", "-90", "sm_90"})
    EXPECT_FALSE(parse_arch(bad)) << bad;
}

TEST(Fatbin, WhichCodeRunsOnWhichGpu) {
  auto a = [](const char* s) { return *parse_arch(s); };
  EXPECT_TRUE(sass_runs_on(a("80"), 86));  // SASS runs on later minors of its major
  EXPECT_FALSE(sass_runs_on(a("86"), 80));
  EXPECT_FALSE(sass_runs_on(a("90"), 100));  // never across majors: a B200 needs its own
  EXPECT_TRUE(sass_runs_on(a("90a"), 90));
  EXPECT_FALSE(sass_runs_on(a("100a"), 103));
  EXPECT_TRUE(sass_runs_on(a("100f"), 103));
  EXPECT_FALSE(sass_runs_on(a("103f"), 100));
  EXPECT_TRUE(ptx_compiles_for(a("90"), 100));  // PTX compiles for any later GPU
  EXPECT_FALSE(ptx_compiles_for(a("100"), 90));
  EXPECT_FALSE(ptx_compiles_for(a("90a"), 100));
  EXPECT_TRUE(ptx_compiles_for(a("100f"), 103));
  EXPECT_FALSE(ptx_compiles_for(a("100f"), 120));
}

// A run's GPUs against a library: NCCL built for sm_90 on H200s loads SASS; the same on a B200 (10.0) compiles its
// PTX; an sm_80-only build with no PTX can run on neither; unread GPUs (capability 0) leave it unknown.
TEST(Fatbin, HowARunsGpusGetTheKernels) {
  auto a = [](const char* s) { return *parse_arch(s); };
  EXPECT_EQ(kernels_for({a("90")}, {a("90")}, {90, 90}), "sass");
  EXPECT_EQ(kernels_for({a("90")}, {a("90")}, {90, 100}), "ptx");
  EXPECT_EQ(kernels_for({a("80")}, {}, {90}), "none");
  EXPECT_EQ(kernels_for({a("80")}, {}, {86}), "sass");
  EXPECT_EQ(kernels_for({}, {a("80")}, {90}), "ptx");
  EXPECT_EQ(kernels_for({a("90")}, {}, {}), "");
  EXPECT_EQ(kernels_for({a("90")}, {}, {90, 0}), "");
}

// Made-up files: a fat binary entry, a container of entries, and an ELF file holding sections.
constexpr uint64_t kZstd = 0x8000, kSpecific = 0x100000, kFamily = 0x200000;

template <class T>
void put(std::string& s, size_t at, T v) {
  std::memcpy(s.data() + at, &v, sizeof v);
}

std::string entry(uint16_t kind, uint32_t sm, size_t payload, uint64_t flags = 0x11, uint64_t uncompressed = 0) {
  std::string e(64, '\0');
  put<uint16_t>(e, 0, kind);
  put<uint16_t>(e, 2, 0x101);
  put<uint32_t>(e, 4, 64);
  put<uint64_t>(e, 8, payload);
  put<uint32_t>(e, 28, sm);
  put<uint64_t>(e, 40, flags);
  put<uint64_t>(e, 56, uncompressed);
  return e + std::string(payload, 'x');
}

std::string container(const std::vector<std::string>& entries) {
  std::string body;
  for (const auto& e : entries) body += e;
  std::string h(16, '\0');
  put<uint32_t>(h, 0, 0xBA55ED50);
  put<uint16_t>(h, 4, 1);
  put<uint16_t>(h, 6, 16);
  put<uint64_t>(h, 8, body.size());
  return h + body;
}

// ELF header, each section's bytes, the name table, then the section headers (so that cutting the file short loses
// them first).
std::string elf(const std::vector<std::pair<std::string, std::string>>& sections) {
  std::string out(sizeof(Elf64_Ehdr), '\0'), names(1, '\0');
  std::vector<Elf64_Shdr> sh(1);
  for (const auto& [name, bytes] : sections) {
    Elf64_Shdr h{};
    h.sh_name = static_cast<uint32_t>(names.size());
    h.sh_type = SHT_PROGBITS;
    h.sh_offset = out.size();
    h.sh_size = bytes.size();
    names += name + '\0';
    out += bytes;
    sh.push_back(h);
  }
  Elf64_Shdr strtab{};
  strtab.sh_name = static_cast<uint32_t>(names.size());
  names += std::string(".shstrtab") + '\0';
  strtab.sh_type = SHT_STRTAB;
  strtab.sh_offset = out.size();
  strtab.sh_size = names.size();
  out += names;
  sh.push_back(strtab);
  while (out.size() % 8) out += '\0';
  Elf64_Ehdr eh{};
  std::memcpy(eh.e_ident, ELFMAG, SELFMAG);
  eh.e_ident[EI_CLASS] = ELFCLASS64;
  eh.e_ident[EI_DATA] = ELFDATA2LSB;
  eh.e_type = ET_DYN;
  eh.e_shoff = out.size();
  eh.e_shentsize = sizeof(Elf64_Shdr);
  eh.e_shnum = static_cast<uint16_t>(sh.size());
  eh.e_shstrndx = static_cast<uint16_t>(sh.size() - 1);
  std::memcpy(out.data(), &eh, sizeof eh);
  out.append(reinterpret_cast<const char*>(sh.data()), sh.size() * sizeof(Elf64_Shdr));
  return out;
}

// NCCL's shape: linked SASS in .nv_fatbin (two containers, padding between), compressed PTX in __nv_relfatbin.
std::string library() {
  std::string linked = container({entry(2, 80, 24), entry(2, 90, 40, 0x11 | kSpecific)}) + std::string(8, '\0') +
                       container({entry(2, 100, 16, 0x1000011 | kFamily), entry(0x40, 90, 8)});
  std::string rel =
      container({entry(1, 90, 16, 0x11 | kZstd, 5000), entry(1, 90, 8, 0x11 | kZstd, 1000), entry(1, 120, 24, 0x11)});
  return elf({{".text", std::string(32, 'c')}, {".nv_fatbin", linked}, {"__nv_relfatbin", rel}});
}

std::optional<GpuCode> parse(const std::string& bytes, std::string* problem) {
  return parse_gpu_code(bytes, "lib.so", problem);
}

TEST(Fatbin, MadeUpLibraryWithTheShapesNcclHas) {
  std::string problem;
  std::optional<GpuCode> c = parse(library(), &problem);
  ASSERT_TRUE(c) << problem;
  EXPECT_EQ(names(c->sass), (std::vector<std::string>{"80", "90a", "100f"}));
  EXPECT_EQ(names(c->ptx), (std::vector<std::string>{"90", "120"}));
  EXPECT_EQ(c->ptx_bytes, (std::vector<uint64_t>{6000, 24}));  // compressed: the sizes they expand to, summed
  EXPECT_EQ(c->containers, 3u);
  EXPECT_EQ(c->other_entries, 1u);
}

TEST(Fatbin, ALibraryWithoutGpuCodeHasNone) {
  std::string problem;
  std::optional<GpuCode> c = parse(elf({{".text", "code"}}), &problem);
  ASSERT_TRUE(c) << problem;
  EXPECT_TRUE(c->sass.empty() && c->ptx.empty());
}

void expect_refused(const std::string& bytes, const std::string& says) {
  std::string problem;
  EXPECT_FALSE(parse(bytes, &problem));
  EXPECT_EQ(problem.rfind("lib.so: ", 0), 0u) << problem;
  EXPECT_EQ(problem.find('\n'), std::string::npos) << problem;
  EXPECT_NE(problem.find(says), std::string::npos) << problem;
}

TEST(Fatbin, FilesThatAreNotLittleEndian64BitElfAreRefused) {
  expect_refused("", "not an ELF file");
  expect_refused("#!/bin/sh\necho hi\n", "not an ELF file");
  std::string b = library();
  b[EI_CLASS] = ELFCLASS32;
  expect_refused(b, "not a little-endian 64-bit ELF");
  b = library();
  b[EI_DATA] = ELFDATA2MSB;
  expect_refused(b, "not a little-endian 64-bit ELF");
  b = library();
  put<uint64_t>(b, offsetof(Elf64_Ehdr, e_shoff), 0);
  expect_refused(b, "no section headers");
}

// Every length the file could be cut to: a reason or a result, never a read past the end (ASan's build checks).
TEST(Fatbin, EveryTruncationGivesAOneLineReason) {
  const std::string full = library();
  for (size_t n = 0; n < full.size(); ++n) {
    std::string problem;
    std::optional<GpuCode> c = parse(full.substr(0, n), &problem);
    ASSERT_FALSE(c) << n;
    ASSERT_EQ(problem.find('\n'), std::string::npos) << problem;
  }
}

TEST(Fatbin, FieldsThatLieAreRefusedByName) {
  const std::string good = library();
  const size_t nv = good.find(container({entry(2, 80, 24), entry(2, 90, 40, 0x11 | kSpecific)}));
  ASSERT_NE(nv, std::string::npos);
  std::string b = good;
  put<uint64_t>(b, nv + 8, uint64_t{1} << 40);  // a container bigger than its section
  expect_refused(b, "truncated?");
  b = good;
  put<uint64_t>(b, nv + 8, UINT64_MAX);
  expect_refused(b, "truncated?");
  b = good;
  put<uint32_t>(b, nv + 16 + 4, 8);  // an entry header shorter than its fields
  expect_refused(b, "an entry header of 8 bytes");
  b = good;
  put<uint64_t>(b, nv + 16 + 8, UINT64_MAX - 10);  // an entry past its container
  expect_refused(b, "runs past its fat binary's end");
  b = good;
  put<uint32_t>(b, nv + 16 + 28, 7);
  expect_refused(b, "architecture 7");
  b = good;
  put<uint16_t>(b, nv + 4, 2);
  expect_refused(b, "version 2");
  b = good;
  put<uint32_t>(b, nv, 0x12345678);
  expect_refused(b, "neither a fat binary");
  // The ELF's own tables
  b = good;
  put<uint16_t>(b, offsetof(Elf64_Ehdr, e_shnum), 0xfff0);
  expect_refused(b, "do not fit in the file");
  b = good;
  put<uint16_t>(b, offsetof(Elf64_Ehdr, e_shstrndx), 200);
  expect_refused(b, "section names in section 200");
  b = good;
  put<uint16_t>(b, offsetof(Elf64_Ehdr, e_shentsize), 40);
  expect_refused(b, "section header size 40");
  b = good;
  Elf64_Ehdr eh{};
  std::memcpy(&eh, b.data(), sizeof eh);
  const size_t fatbin_header = eh.e_shoff + 2 * sizeof(Elf64_Shdr);  // [0] null, [1] .text, [2] .nv_fatbin
  put<uint64_t>(b, fatbin_header + offsetof(Elf64_Shdr, sh_size), uint64_t{1} << 62);
  expect_refused(b, "runs past the end of the file");
}

// Random damage to a good file, at random places: whatever it reads, it answers in one line or a result.
TEST(Fatbin, RandomDamageNeverReadsOutOfBounds) {
  const std::string good = library();
  std::mt19937 rng(44);
  for (int i = 0; i < 3000; ++i) {
    std::string b = good;
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < edits; ++k) b[rng() % b.size()] = static_cast<char>(rng());
    if (rng() % 4 == 0) b.resize(rng() % b.size());
    std::string problem;
    if (!parse(b, &problem)) ASSERT_EQ(problem.find('\n'), std::string::npos) << problem;
  }
}

TEST(Fatbin, FilesThatCannotBeReadSaySo) {
  std::string problem;
  EXPECT_FALSE(read_gpu_code("/nonexistent/libnccl.so.2", &problem));
  EXPECT_EQ(problem, "/nonexistent/libnccl.so.2: No such file or directory");
  EXPECT_FALSE(read_gpu_code("/", &problem));
  EXPECT_NE(problem.find("not a regular file"), std::string::npos) << problem;
}

}  // namespace
}  // namespace coldstart::gpu
