"""Paths the package opens that are not regular files, or are too large: coldstart.load() refuses a FIFO, a device and
a file over the binary's 512 MiB at once, in one line naming the path, without blocking or reading it; binary() passes
over a FIFO named coldstart on PATH. None of these needs the binary: COLDSTART_BIN names none, so a case that reached
it would fail instead of passing."""

import contextlib
import os
import pathlib
import resource
import signal
import stat
import subprocess
import sys
import time

import pytest

import coldstart
from coldstart._files import MAX_RESULTS_BYTES
from coldstart.cli import binary


class Blocked(BaseException):
    """Not an Exception (nor an OSError, as TimeoutError is), so that no `except` of the code under test takes it."""


@contextlib.contextmanager
def within(seconds: float):
    """Fails the test if the block runs longer than `seconds` (SIGALRM interrupts a blocking open() or read()), so
    that a regression hangs no CI job."""

    def expired(signum, frame):
        raise Blocked(f"still running after {seconds} s: blocked")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    start = time.monotonic()
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert time.monotonic() - start < seconds


@pytest.fixture(autouse=True)
def no_binary(monkeypatch, tmp_path):
    monkeypatch.setenv("COLDSTART_BIN", str(tmp_path / "no-binary-here"))


def refused(path, reason: str) -> str:
    with within(5), pytest.raises(ValueError) as e:
        coldstart.load(path)
    message = str(e.value)
    assert message.startswith(f"{path}: ") and reason in message and "\n" not in message, message
    assert "give the results.json bench wrote" in message
    return message


def test_a_fifo_is_refused_at_once_without_a_writer(tmp_path):
    fifo = tmp_path / "results.json"
    os.mkfifo(fifo)
    refused(str(fifo), "a FIFO (named pipe), not a regular file")


def test_a_fifo_with_a_writer_is_refused_without_reading_it(tmp_path):
    fifo = tmp_path / "results.json"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # so that the writer can open
    writer = os.open(fifo, os.O_WRONLY)
    try:
        os.write(writer, b'{"schema": "coldstart.bench/2"}')
        refused(str(fifo), "a FIFO")
        assert os.read(reader, 100) == b'{"schema": "coldstart.bench/2"}'  # load read none of it
    finally:
        os.close(writer)
        os.close(reader)


def test_a_link_to_a_fifo_is_the_fifo(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    (tmp_path / "results.json").symlink_to(fifo)
    refused(str(tmp_path / "results.json"), "a FIFO")


def test_dev_zero_is_refused_at_once():
    """In a child with 1 GiB of address space and 30 s: a regression that reads /dev/zero (in C, where SIGALRM's
    handler does not run) ends there, not in this process."""

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))

    package = os.path.dirname(os.path.dirname(os.path.abspath(coldstart.__file__)))
    code = "import coldstart\ntry:\n coldstart.load('/dev/zero')\nexcept ValueError as e:\n print(e)"
    start = time.monotonic()
    out = subprocess.run(
        [sys.executable, "-c", code],
        env=dict(os.environ, PYTHONPATH=package),
        preexec_fn=limit,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert out.returncode == 0 and time.monotonic() - start < 10, out.stderr[-2000:]
    assert out.stdout == "/dev/zero: a character device, not a regular file; give the results.json bench wrote\n"
    refused("/dev/zero", "a character device, not a regular file")  # and here, now that it is known to return


def test_a_file_over_the_binarys_bound_is_refused_without_reading_it(tmp_path):
    big = tmp_path / "results.json"
    with open(big, "wb") as f:
        f.truncate(MAX_RESULTS_BYTES + 1)  # sparse: no disk, and nothing is read
    refused(str(big), "larger than the 512 MiB coldstart reads from one file")


def test_the_bound_is_the_binarys():
    result_h = pathlib.Path(__file__).parents[2] / "src" / "model" / "result.h"
    if not result_h.exists():
        pytest.skip("not run from a source tree")
    assert "kMaxResultsBytes = size_t{512} << 20;" in result_h.read_text()
    assert MAX_RESULTS_BYTES == 512 << 20


@pytest.mark.parametrize("path, name", [(None, "NoneType"), (3, "int"), (b"results.json", "bytes")])
def test_a_path_of_another_type_is_one_type_error(path, name):
    with pytest.raises(TypeError) as e:
        coldstart.load(path)
    assert str(e.value).startswith(f"coldstart.load: path must be a str or os.PathLike, not {name}; give")


def test_binary_passes_over_a_fifo_named_coldstart_on_path(tmp_path, monkeypatch):
    inside = os.path.join(os.path.dirname(coldstart.__file__), "_bin", "coldstart")
    if os.access(inside, os.X_OK):
        pytest.skip("the package has its own binary; PATH is not searched")
    fifo = tmp_path / "coldstart"
    os.mkfifo(fifo)
    os.chmod(fifo, stat.S_IRWXU)  # executable, so that shutil.which finds it
    monkeypatch.delenv("COLDSTART_BIN")
    monkeypatch.setenv("PATH", str(tmp_path))
    with within(5), pytest.raises(FileNotFoundError, match="coldstart's binary was not found"):
        binary()
