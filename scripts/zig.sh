# Sourced by scripts/build.sh and scripts/wheel.sh: find_zig exports COLDSTART_ZIG, the zig that scripts/zig-cxx.sh
# compiles with, from the ziglang package of this machine's python3 (scripts/setup.sh installs it).
find_zig() {
  [ -n "${COLDSTART_ZIG:-}" ] && return
  if ! COLDSTART_ZIG="$(python3 -c 'import os, ziglang; print(os.path.join(os.path.dirname(ziglang.__file__), "zig"))' \
                        2>/dev/null)"; then
    echo "zig is missing; install it with python3 -m pip install ziglang (scripts/setup.sh does)" >&2
    exit 1
  fi
  export COLDSTART_ZIG
}
