// The cache of patched NCCL builds that `coldstart nccl build` fills: one folder per build, named
// <version>+peer-regions (the library's name as coldstart reports it), under ~/.cache/coldstart/nccl/. A folder is a
// build only once its manifest, build.json, is there: it is written last, atomically, after the library loaded and
// carried the series; a folder without one (a build running, failed or interrupted) is listed as incomplete and never
// used. Two builds of one entry take turns on the entry's lock file.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace coldstart::ncclbuild {

constexpr const char* kManifestSchema = "coldstart.nccl-build/1";
constexpr const char* kManifestFile = "build.json";

// $XDG_CACHE_HOME/coldstart/nccl, else ~/.cache/coldstart/nccl ($HOME, else the password database's home).
std::string default_cache_dir();
// Which library of a release an entry holds: coldstart's patched NCCL (the series applied), or NCCL's own, built from
// the same source beside it so that a node can compare the two (nccl build --which stock).
enum class Which { patched, stock };
std::string which_name(Which w);  // "patched", "stock": build_nccl.sh's --which, build.json's "which"
// The entry of a release: "2.30.7+peer-regions", or for the stock build "2.30.7+stock".
std::string entry_name(const std::string& version, Which which = Which::patched);
// No entry's name is longer: a longer word is a path or a mistake.
constexpr size_t kMaxEntryName = 128;

// A finished build folder's stamp, written once its library loaded and carried the series: what it was built for
// ("for 90,100 with series 0123456789abcdef"). An entry whose build.json says otherwise is not complete (a switch to a
// new build was interrupted between the two); a folder without it (built by an earlier coldstart) is taken as its
// build.json says.
constexpr const char* kBuiltForFile = ".coldstart-built-for";
std::string built_for(const std::vector<std::string>& arch, const std::string& series);

// What build.json says: the build, its inputs and what was read back from the library it made.
struct Manifest {
  std::string name;                  // "2.30.7+peer-regions"
  Which which = Which::patched;      // "which"; a manifest without it (before stock builds) is a patched build's
  std::string version;               // "2.30.7"
  std::vector<std::string> arch;     // {"90"}
  std::string series;                // the series' hash (series_hash); kStockSeries for the stock build
  std::string source;                // the --src given, or the URL downloaded
  std::string library;               // the library's path (inside the entry)
  std::vector<std::string> patches;  // read back from the library (nccl::patches_in): "peer-regions", "fd-reserve"
  std::string built_at;              // UTC, ISO 8601
  std::string coldstart_version;
};
constexpr const char* kStockSeries = "none";  // a stock build's series: nothing applied, nothing to rebuild for
std::string manifest_json(const Manifest& m);
// Throws InputError naming the file when it is not a manifest of this schema.
Manifest parse_manifest(const std::string& text, const std::string& path);

struct Entry {
  std::string name;  // the folder's name
  std::string path;
  bool complete = false;  // a manifest that reads, names this folder, its own library (inside it), there, and agrees
                          // with its build folder's stamp
  std::optional<Manifest> manifest;
  std::string state;        // why not complete: "no build.json (building, failed or interrupted)", ...
  uint64_t size_bytes = 0;  // the folder, every file in it
};

// Every folder of the cache, by name; none when the cache does not exist.
std::vector<Entry> list_entries(const std::string& cache_dir, bool with_sizes = true);
// The entry `name` when complete, else nothing; the newest complete patched one (by built_at) when `name` is empty.
std::optional<Entry> find_complete(const std::string& cache_dir, const std::string& name);
// The complete `which` entry of the newest release at or above `min_version` (NCCL's code: 23000 is 2.30.0), of that
// release the last built; nothing when there is none. Bench's 2 ranks on one GPU take them.
std::optional<Entry> newest_complete_from(const std::string& cache_dir, int min_version, Which which = Which::patched);
// NCCL's version code of a release as build.json names it: "2.30.7" is 23007; 0 when it is not one.
int version_code(const std::string& release);

// Whether `word` is shaped like an entry's name (a release, '+', and what follows), not a path or a file name.
bool looks_like_entry_name(const std::string& word);

// bench's --nccl-lib: a path (or a library's file name) as it is; an entry's name, its library. Throws InputError
// naming `what` (the flag or command the name came from), the cache and the command that builds it when no complete
// entry has that name.
std::string library_for(const std::string& nccl_lib, const std::string& cache_dir, const std::string& what);
std::string library_for(const std::string& nccl_lib);  // --nccl-lib, in the default cache
// InputError naming `what` (--cache-dir) when `dir` exists and is not a folder; a missing cache is an empty one.
void check_cache_dir(const std::string& dir, const std::string& what);

// The folder made (with its parents) for a build to write into; InputError naming the cache and the fix when it cannot
// be made or written.
void make_writable_dir(const std::string& dir, const std::string& what);

// An exclusive lock on an entry (flock on <entry>/lock), held until destroyed. The lock file says who holds it; a
// second build reads that, reports it through `waiting` and waits its turn. The descriptor is inherited by the
// processes the build starts, so the lock stays held while any of them (make, nvcc) lives, even past this one.
class EntryLock {
 public:
  EntryLock(const std::string& entry_dir, const std::function<void(const std::string& holder)>& waiting);
  ~EntryLock();
  EntryLock(const EntryLock&) = delete;
  EntryLock& operator=(const EntryLock&) = delete;

 private:
  int fd_ = -1;
};

// A word as the shell reads it: as it is when it holds nothing special, else in single quotes.
std::string shell_word(const std::string& s);

// The job a library is loaded for: the GPUs of the node (0: not known) and the ranks each GPU holds (0: as the node
// has it: 2 on a node of one GPU, where one rank would have no peers, else one).
struct JobShape {
  int gpus = 0;
  int ranks_per_gpu = 0;
  // Whether ranks share a GPU: said, or a node of one GPU.
  bool shares_gpu() const { return ranks_per_gpu > 1 || (ranks_per_gpu == 0 && gpus == 1); }
};

// How to load a library in place of a job's own NCCL, one line each: LD_PRELOAD for torchrun, Ray's runtime_env,
// Slurm's srun; the path quoted for the shell (and for Python in Ray's) where it needs it. `env` is what the lines
// set: LD_PRELOAD, and NCCL_MULTI_RANK_GPU_ENABLE=1 where ranks share a GPU and the library (NCCL `version`) is 2.30
// or newer, which NCCL needs to run them (else it stops at init with "invalid usage").
struct LoadLines {
  std::vector<std::pair<std::string, std::string>> env;
  std::string torchrun, ray, slurm;
};
LoadLines load_lines(const std::string& library, const std::string& version = "", JobShape job = {});

}  // namespace coldstart::ncclbuild
