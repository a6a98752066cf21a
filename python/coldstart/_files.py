"""Reading a file the user named without trusting what it is: a FIFO must not block the caller, and a device or a huge
file must not be read into memory."""

from __future__ import annotations

import os
import stat

from coldstart._text import shown

# The bound the binary puts on one results file: kMaxResultsBytes in src/model/result.h (512 MiB). The same here, so
# that the Python reader and the binary accept and refuse the same files.
MAX_RESULTS_BYTES = 512 << 20


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _size(limit: int) -> str:
    return f"{limit >> 20} MiB" if limit % (1 << 20) == 0 else f"{limit} bytes"


def check_regular_file(path: str, limit: int, give: str) -> None:
    """Checks that `path` is a regular file of at most `limit` bytes, without reading it: opened with O_NONBLOCK and
    checked with fstat, so that a FIFO without a writer returns at once instead of blocking (O_NONBLOCK changes nothing
    for a regular file). A FIFO, a device or a socket, or a file longer than `limit`, raises ValueError in one line
    naming the path (its control characters escaped) and `give` (what to give instead). OSError as open() raises it:
    a missing or unreadable file, IsADirectoryError for a folder. Whoever reads the file next bounds its own read (a
    /proc file says size 0)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        st = os.fstat(fd)
    finally:
        os.close(fd)
    if stat.S_ISDIR(st.st_mode):
        raise IsADirectoryError(f"{shown(path)}: a folder")
    if not stat.S_ISREG(st.st_mode):
        raise ValueError(f"{shown(path)}: {_kind(st.st_mode)}, not a regular file; give {give}")
    if st.st_size > limit:
        raise ValueError(f"{shown(path)}: larger than the {_size(limit)} coldstart reads from one file; give {give}")
