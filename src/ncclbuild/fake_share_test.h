// What nccl build's tests build on (one header, so that a unity build of the tests finds each helper once): a share
// folder holding the project's real series (nccl/series, each release's patches and source-tree, copied from the
// checkout) and a stand-in for scripts/build_nccl.sh that "builds" by copying a fake library
// (tests/fake_nccl/patched_nccl.cc) where the real one puts its library, writing a make log in NCCL's form on the way.
// Environment variables steer it: FAKE_LIB (the library to copy; FAKE_STOCK_LIB for --which stock), FAKE_EXIT (1: make
// fails after the log, 2: a refusal line), FAKE_SLEEP (seconds between the log's lines), FAKE_RUNS (a file it appends
// "start PID" and "end PID" to), FAKE_SERIES (the series hash its stamp says; none: no stamp). And a cache entry as a
// finished build leaves it.
#pragma once
#include <filesystem>
#include <functional>
#include <string>

#include "ncclbuild/cache.h"
#include "ncclbuild/series.h"
#include "util/error.h"
#include "util/fs.h"

namespace coldstart::ncclbuild::testing {

// What `f` threw as an E (its message), or "" when it threw nothing.
template <class E>
std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  return "";
}
// What `f` refused with (InputError) or failed with (RuntimeError)
inline std::string input_error_of(const std::function<void()>& f) { return error_of<InputError>(f); }
inline std::string runtime_error_of(const std::function<void()>& f) { return error_of<RuntimeError>(f); }

// An entry of the cache `cache` as a finished build leaves it: its library and its manifest (build.json). The library
// is a copy of `library_from` (a fake NCCL that loads), else 1000 bytes that are no library; `which`: the patched build
// of the release, or its stock one.
inline Manifest put_cache_entry(const std::string& cache, const std::string& version, const std::string& built_at,
                                const std::string& library_from = "", Which which = Which::patched) {
  namespace fs = std::filesystem;
  const std::string dir = cache + "/" + entry_name(version, which);
  fs::create_directories(dir + "/build/" + which_name(which) + "/lib");
  Manifest m;
  m.name = entry_name(version, which);
  m.which = which;
  m.version = version;
  m.arch = {"90"};
  m.series = which == Which::stock ? kStockSeries : "0123456789abcdef";
  m.source = "/src/nccl.tar.gz";
  m.library = dir + "/build/" + which_name(which) + "/lib/libnccl.so.2";
  if (which == Which::patched) m.patches = {"peer-regions", "fd-reserve"};
  m.built_at = built_at;
  if (library_from.empty())
    write_file_atomic(m.library, std::string(1000, 'x'));
  else
    fs::copy_file(library_from, m.library, fs::copy_options::overwrite_existing);
  write_file_atomic(dir + "/" + kManifestFile, manifest_json(m));
  return m;
}

inline constexpr const char* kFakeScript = R"sh(#!/usr/bin/env bash
set -euo pipefail
out="" src="" check_only=0 which=patched args="$*"
while (($#)); do
  case "$1" in
    --out) out="$2"; shift 2 ;;
    --which) which="$2"; shift 2 ;;
    --src) src="$2"; shift 2 ;;
    --check-only) check_only=1; shift ;;
    *) shift ;;
  esac
done
[ -z "${FAKE_RUNS:-}" ] || echo "start $$ $args" >>"$FAKE_RUNS"
if [ "${FAKE_EXIT:-0}" = 2 ]; then
  echo "build_nccl: $which: starting"
  echo "build_nccl: --src $src is not NCCL as released (the stand-in says so)" >&2
  exit 2
fi
mkdir -p "$out/$which/lib" "$out/src-$which"
touch "$out/.coldstart-build-nccl"
[ -z "${FAKE_SERIES:-}" ] || [ "$which" != patched ] ||
  echo "commit=c tree=t series=$FAKE_SERIES" >"$out/src-patched/.coldstart-source"
if ((check_only)); then echo "build_nccl: check only: sources ready, nothing built"; exit 0; fi
echo "build_nccl: $which: make -j1 (log: $out/$which.log)"
for i in 1 2 3 4; do
  printf 'Compiling  %-35s > %s\n' "f$i.cc" "$out/$which/obj/f$i.o" >>"$out/$which.log"
  sleep "${FAKE_SLEEP:-0}"
done
if [ "${FAKE_EXIT:-0}" = 1 ]; then echo "build_nccl: $which: make failed (status 2)" >&2; exit 1; fi
lib="$FAKE_LIB"
[ "$which" != stock ] || lib="${FAKE_STOCK_LIB:-$FAKE_LIB}"
cp "$lib" "$out/$which/lib/libnccl.so.2"
[ -z "${FAKE_RUNS:-}" ] || echo "end $$" >>"$FAKE_RUNS"
echo "$which: $out/$which/lib/libnccl.so.2"
)sh";

// A share folder in a fresh temporary folder: the checkout's series and the stand-in script.
class FakeShare {
 public:
  FakeShare() : dir_("coldstart-ncclbuild-") {
    namespace fs = std::filesystem;
    const fs::path from = fs::path(COLDSTART_SOURCE_DIR) / "nccl";
    const fs::path to = fs::path(dir_.path()) / "nccl";
    fs::create_directories(to);
    fs::copy_file(from / "series", to / "series");
    for (const auto& d : fs::directory_iterator(from))
      if (d.is_directory() && d.path().filename().string().starts_with("v"))
        fs::copy(d.path(), to / d.path().filename(), fs::copy_options::recursive);
    fs::create_directories(fs::path(dir_.path()) / "scripts");
    write_file_atomic(dir_.path() + "/scripts/build_nccl.sh", kFakeScript);
    share_ = {dir_.path(), "a test's share folder"};
  }
  const Share& share() const { return share_; }
  const std::string& path() const { return dir_.path(); }

 private:
  TempDir dir_;
  Share share_;
};

}  // namespace coldstart::ncclbuild::testing
