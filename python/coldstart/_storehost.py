"""What storebench needs of the machine and reads from it: one client's cost in fds and threads on this torch, the
file limit raised to hold every client (or a refusal in one line), the kernel's listen-queue drops, the CPU model."""

from __future__ import annotations

import math
import os
import platform
import resource
import time
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

FD_MARGIN = 64  # fds a process holds beside the clients' (its own files, pipes, the interpreter's)


class Refused(Exception):
    """Bad input, or a machine that cannot run what was asked: one line, exit status 2."""


def _fds() -> dict[str, int]:
    """This process's open fds by kind: "socket" and "other"."""
    out = {"socket": 0, "other": 0}
    for fd in os.listdir("/proc/self/fd"):
        try:
            kind = "socket" if os.readlink(f"/proc/self/fd/{fd}").startswith("socket:") else "other"
        except OSError:
            continue
        out[kind] += 1
    return out


def _threads() -> int:
    return len(os.listdir("/proc/self/task"))


def listen_drops() -> int | None:
    """The kernel's count of connections dropped at a full listen queue (TcpExt ListenDrops, which counts the
    overflows too), machine-wide; None where /proc/net/netstat is not readable."""
    try:
        with open("/proc/net/netstat") as f:
            lines = [line.split() for line in f if line.startswith("TcpExt:")]
        return int(dict(zip(lines[0], lines[1]))["ListenDrops"])
    except (OSError, IndexError, KeyError, ValueError):
        return None


@dataclass(frozen=True)
class Footprint:
    """What one client costs on this torch, measured with a few clients against a throwaway server in this process:
    its connections (each a socket at both ends), its other fds (pipes) and the threads torch starts for it."""

    connections: int
    other_fds: int
    threads: int


def probe(dist: Any, host: str, clients: int = 4) -> Footprint:
    server = dist.TCPStore(host, 0, None, True, timedelta(seconds=30), wait_for_workers=False)
    time.sleep(0.1)  # the server accepts on its own thread: its own client's connections first
    before, threads = _fds(), _threads()
    made = [dist.TCPStore(host, server.port, None, False, timedelta(seconds=30)) for _ in range(clients)]
    time.sleep(0.1)
    after = _fds()
    foot = Footprint(
        (after["socket"] - before["socket"]) // (2 * clients),
        (after["other"] - before["other"]) // clients,
        (_threads() - threads) // clients,
    )
    del made, server
    return foot


def fd_plan(foot: Footprint, most: int, workers: int) -> dict[str, int]:
    """The fds the store's process and the busiest worker need, and the soft RLIMIT_NOFILE raised to cover both (up
    to the hard limit; the workers inherit it); Refused in one line when the hard limit is too low."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    base = sum(_fds().values()) + FD_MARGIN
    store = base + foot.connections * most
    worker = base + (foot.connections + foot.other_fds) * math.ceil(most / min(workers, most))
    need = max(store, worker)
    if hard != resource.RLIM_INFINITY and need > hard:
        raise Refused(
            f"{most} clients need about {need} open files in one process ({foot.connections} connection(s) a client, "
            f"{workers} workers), but the hard limit is {hard} (ulimit -Hn); raise it, or give fewer --clients or more "
            "--workers"
        )
    if soft != resource.RLIM_INFINITY and soft < need:
        resource.setrlimit(resource.RLIMIT_NOFILE, (need, hard))
    return {"store": store, "worker": worker, "soft_before": soft, "soft": max(soft, need), "hard": hard}


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()
