#!/usr/bin/env python3
"""Watches the file-descriptor tables of coldstart's ranks while a bench runs (an experiment, never shipped).

Every millisecond or so it lists /proc/PID/fd of each rank (`coldstart worker`, or the torch probe) and writes, when
the process ends, one JSON line: its pid, the CLOCK_MONOTONIC time (ns) at which its highest fd first reached 64,
128, 256, 512 and 1024 (the sizes at which Linux grows the table), its highest fd and what its fds were at the most
it had.
    python3 nccl/gpu/fd_watch.py OUT.jsonl -- COMMAND...   (runs COMMAND and watches until it ends)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

THRESHOLDS = (64, 128, 256, 512, 1024)


def is_rank(pid: str) -> bool:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv = f.read().split(b"\0")
    except OSError:
        return False
    worker = len(argv) > 1 and argv[0].endswith(b"coldstart") and argv[1] == b"worker"
    return worker or b"coldstart.torch_worker" in argv


def kinds(pid: str) -> dict[str, int]:
    out: dict[str, int] = {}
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            kind = target.split(":")[0] if ":" in target and not target.startswith("/") else target
            out[kind] = out.get(kind, 0) + 1
    except OSError:
        pass
    return out


def main() -> int:
    if len(sys.argv) < 4 or sys.argv[2] != "--":
        print("usage: fd_watch.py OUT.jsonl -- COMMAND...", file=sys.stderr)
        return 2
    child = subprocess.Popen(sys.argv[3:])
    seen: dict[str, dict] = {}
    finished: set[str] = set()
    last_scan = 0.0
    with open(sys.argv[1], "w") as out:
        while True:
            done = child.poll() is not None
            now = time.monotonic()
            if now - last_scan > 0.02:
                last_scan = now
                for pid in os.listdir("/proc"):
                    if pid.isdigit() and pid not in seen and pid not in finished and is_rank(pid):
                        seen[pid] = {
                            "pid": int(pid),
                            "first_seen_ns": time.monotonic_ns(),
                            "crossed_ns": {},
                            "max_fd": -1,
                            "open_at_max": 0,
                            "kinds_at_max": {},
                        }
            for pid, rec in list(seen.items()):
                try:
                    fds = [int(x) for x in os.listdir(f"/proc/{pid}/fd")]
                except OSError:
                    out.write(json.dumps(rec) + "\n")
                    del seen[pid]
                    finished.add(pid)
                    continue
                if not fds:
                    continue
                top = max(fds)
                t = time.monotonic_ns()
                for th in THRESHOLDS:
                    if top >= th and str(th) not in rec["crossed_ns"]:
                        rec["crossed_ns"][str(th)] = t
                if top > rec["max_fd"]:
                    rec["max_fd"], rec["open_at_max"] = top, len(fds)
                    rec["kinds_at_max"] = kinds(pid)
            if done:
                for rec in seen.values():
                    out.write(json.dumps(rec) + "\n")
                return child.returncode
            time.sleep(0.0005)


if __name__ == "__main__":
    sys.exit(main())
