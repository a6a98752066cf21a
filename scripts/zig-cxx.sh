#!/usr/bin/env bash
# The wheel's C++ compiler (scripts/wheel.sh): zig's clang with its libc++, linked statically, against glibc 2.28's
# symbols, so that the binaries run on glibc >= 2.28 whatever glibc builds them. Debian's header-only packages (CLI11,
# nlohmann-json, fmt) are found in /usr/include after zig's own C and C++ headers, which they must not replace.
exec "${COLDSTART_ZIG:?scripts/zig-cxx.sh: set COLDSTART_ZIG to zig (scripts/wheel.sh does)}" c++ \
  -target x86_64-linux-gnu.2.28 -idirafter /usr/include "$@"
