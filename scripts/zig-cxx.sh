#!/usr/bin/env bash
# coldstart's C++ compiler (scripts/build.sh, scripts/wheel.sh): zig's clang with its libc++, linked statically,
# against glibc 2.28's symbols, so that the binaries run on glibc >= 2.28 whatever glibc builds them. Debian's
# header-only packages (CLI11, nlohmann-json, fmt) are found in /usr/include after zig's own C and C++ headers, which
# they must not replace. COLDSTART_ZIG names zig (scripts/zig.sh); unset, as when a build folder compiles again
# under a bare `cmake --build`, this machine's python3 finds it.
# shellcheck source=scripts/zig.sh
. "$(dirname "$0")/zig.sh"
find_zig
exec "$COLDSTART_ZIG" c++ -target x86_64-linux-gnu.2.28 -idirafter /usr/include "$@"
