"""Grow the process's file-descriptor table before the job starts its threads.

Linux hands out fds from a table that starts 64 long and doubles when an fd past its end is needed. In a process of
more than one thread, each growth first waits out an RCU grace period (fs/file.c, expand_fdtable), and every other
thread of the process that asks for an fd meanwhile waits with it: 31-35 ms a growth on the H200 node we timed. A
rank of a multi-GPU job typically has about 63 fds open when its first collective starts, and NCCL's connect needs a
few more: the growth to 128 lands inside the first collective, on every rank (docs/nccl-patch.md). Grown while the
process still has one thread, the table costs no wait, and it never shrinks while the process lives.

    import coldstart
    coldstart.grow_fd_table()   # first thing, before `import torch` starts threads
"""

from __future__ import annotations

import operator
import os
from dataclasses import dataclass

from coldstart._text import whole_number

DEFAULT_SIZE = 1024


@dataclass(frozen=True)
class FdTable:
    """What grow_fd_table found and did. `waited` is True when the process already had several threads, so the
    growth itself waited out a grace period (once, here, instead of inside a collective)."""

    size_before: int
    size_after: int
    threads: int

    @property
    def waited(self) -> bool:
        return self.size_after > self.size_before and self.threads > 1


def _status() -> dict[str, int]:
    """The numeric fields of /proc/self/status that grow_fd_table reads (FDSize, Threads); empty where it has none."""
    out: dict[str, int] = {}
    try:
        with open("/proc/self/status") as f:
            for line in f:
                key, _, value = line.partition(":")
                fields = value.split()
                if key in ("FDSize", "Threads") and fields and fields[0].isdigit():
                    out[key] = int(fields[0])
    except OSError:
        return {}
    return out


def _table_size(size: object) -> int:
    """`size` as an int: an int or anything with __index__ (a numpy integer), but not a bool, a float or a string."""
    if not isinstance(size, bool):
        try:
            return operator.index(size)
        except TypeError:
            pass
    raise TypeError(
        f"grow_fd_table: size must be an int, not {type(size).__name__}; give the table size, e.g. "
        f"grow_fd_table({DEFAULT_SIZE})"
    )


def grow_fd_table(size: int = DEFAULT_SIZE) -> FdTable | None:
    """Makes the fd table at least `size` entries long (a power of two is what Linux allocates). Returns what it
    found and did, or None where /proc/self/status has no FDSize (not Linux). Raises TypeError for a size that is not
    an int (a bool, a float, a string, None; a numpy integer is taken), ValueError for a size below 2 or above the
    soft RLIMIT_NOFILE."""
    size = _table_size(size)
    if size < 2:
        raise ValueError(f"grow_fd_table: size {size} is below 2; give the table size, e.g. {DEFAULT_SIZE}")
    status = _status()
    before = status.get("FDSize")
    if before is None:
        return None
    limit = _soft_nofile()
    if limit is not None and size > limit:
        raise ValueError(
            f"grow_fd_table: size {size} is above the soft RLIMIT_NOFILE ({limit}); give a smaller size "
            "or raise the limit (ulimit -n)"
        )
    threads = status.get("Threads", 1)
    if before < size:
        fd = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
        try:
            os.dup2(fd, size - 1, inheritable=False)
            os.close(size - 1)
        finally:
            os.close(fd)
    return FdTable(size_before=before, size_after=_status().get("FDSize", before), threads=threads)


def _soft_nofile() -> int | None:
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
        return None if soft == resource.RLIM_INFINITY else int(soft)
    except (ImportError, OSError, ValueError):
        return None


def grow_from_env(var: str = "COLDSTART_FD_TABLE") -> FdTable | None:
    """grow_fd_table(N) when the environment sets `var` to N (the torch probe's switch: `bench --env
    COLDSTART_FD_TABLE=,1024`); None when it is unset or empty. A value that is not a number in ASCII digits (a sign,
    whitespace, another script's digits) raises ValueError naming the variable."""
    value = os.environ.get(var, "")
    if not value:
        return None
    return grow_fd_table(whole_number(var, value, f"give the table size, e.g. {var}=1024"))
