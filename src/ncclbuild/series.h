// The NCCL patch series as `coldstart nccl build` finds it: the shipped scripts/build_nccl.sh and nccl/ (series,
// v<version>/*.patch, v<version>/source-tree), installed beside the binary or read from the source checkout it was
// built in; the releases it has a port for, and the series' hash as build_nccl.sh records it.
#pragma once
#include <string>
#include <vector>

namespace coldstart::ncclbuild {

// Where the shipped files are: `root` holds scripts/build_nccl.sh and nccl/series.
struct Share {
  std::string root;
  std::string how;  // "$COLDSTART_SHARE_DIR", "installed beside the binary", "the source checkout"
  std::string script() const { return root + "/scripts/build_nccl.sh"; }
  std::string series_dir() const { return root + "/nccl"; }
};

// The first of: $COLDSTART_SHARE_DIR; <the binary's folder>/../share/coldstart (an install: the wheel puts the files in
// coldstart/share/coldstart beside coldstart/_bin); `checkout` (the source tree a build folder's binary was made
// from). A folder counts when it holds both scripts/build_nccl.sh and nccl/series. Throws RuntimeError naming the
// places looked at.
Share find_share(const std::string& exe, const std::string& checkout);
Share find_share();  // for this binary: /proc/self/exe and the checkout it was built from

// One release the series has a port for: its folder nccl/v<version>/ with a source-tree file, and its patches in
// series order (paths relative to nccl/, "v2.30.7/0001-....patch").
struct Port {
  std::string version;  // "2.30.7"
  std::string tag;      // "v2.30.7-1": source-tree's `release` line
  std::string commit;   // the release's commit
  std::vector<std::string> patches;
};

// Every port, oldest release first. Throws RuntimeError when nccl/series cannot be read.
std::vector<Port> read_ports(const Share& share);
// "2.28.9, 2.30.7"
std::string port_list(const std::vector<Port>& ports);
// Whether `version` is a release number X.Y.Z (NCCL's form); anything else is no version at all.
bool is_release(const std::string& version);

// The series' hash for one port exactly as scripts/build_nccl.sh computes it (series_hash: the first 16 hex digits of
// the sha256 of `sha256sum` lines "<sha256>  v<version>/<patch>", one per patch in series order). Throws RuntimeError
// when a patch cannot be read.
std::string series_hash(const Share& share, const Port& port);

// The URL of a release's source as GitHub serves it (a git archive of the tag: build_nccl.sh checks its commit id).
std::string release_url(const Port& port);

}  // namespace coldstart::ncclbuild
