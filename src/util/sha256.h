// SHA-256 (FIPS 180-4), for identities computed as sha256sum computes them: the NCCL patch series' hash, which
// scripts/build_nccl.sh records with coreutils and `coldstart nccl build` checks again.
#pragma once
#include <string>
#include <string_view>

namespace coldstart {

// The digest of `data` in lower-case hex (64 characters), as sha256sum prints it.
std::string sha256_hex(std::string_view data);

}  // namespace coldstart
