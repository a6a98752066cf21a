"""coldstart.grow_fd_table: the table grows to the size asked for, says whether the process had threads (and so
waited), leaves a table already large enough alone, and refuses sizes it cannot give with one line."""

import json
import os
import subprocess
import sys

import pytest

import coldstart
from coldstart import grow_fd_table
from coldstart.fdtable import grow_from_env
from coldstart.torch_worker import main as torch_probe_main


def in_fresh_python(code: str) -> dict:
    """Runs `code` in a new interpreter (one thread, a table of its own; the package this suite tests) and returns the
    JSON it prints last."""
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(os.path.abspath(coldstart.__file__))))
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True, env=env).stdout
    return json.loads(out.strip().splitlines()[-1])


PRELUDE = """
import json, threading, dataclasses
from coldstart import grow_fd_table
def size():
    return int(next(l.split()[1] for l in open("/proc/self/status") if l.startswith("FDSize:")))
"""


def test_a_single_threaded_process_grows_its_table_without_waiting() -> None:
    got = in_fresh_python(
        PRELUDE
        + """
t = grow_fd_table(1024)
print(json.dumps({**dataclasses.asdict(t), "waited": t.waited, "now": size()}))
"""
    )
    assert got["size_before"] < 1024 <= got["size_after"] == got["now"]
    assert got["threads"] == 1 and got["waited"] is False


def test_a_process_with_threads_grows_it_too_and_says_it_waited() -> None:
    got = in_fresh_python(
        PRELUDE
        + """
stop = threading.Event()
th = threading.Thread(target=stop.wait); th.start()
t = grow_fd_table(512)
stop.set(); th.join()
print(json.dumps({**dataclasses.asdict(t), "waited": t.waited}))
"""
    )
    assert got["size_after"] >= 512 and got["threads"] >= 2 and got["waited"] is True


def test_a_table_already_long_enough_is_left_alone() -> None:
    got = in_fresh_python(
        PRELUDE
        + """
first = grow_fd_table(2048)
again = grow_fd_table(256)
print(json.dumps({"first": first.size_after, "before": again.size_before, "after": again.size_after}))
"""
    )
    assert got["first"] == got["before"] == got["after"] >= 2048


def test_the_fds_the_process_holds_stay_open() -> None:
    got = in_fresh_python(
        PRELUDE
        + """
import os
r, w = os.pipe()
grow_fd_table(1024)
os.write(w, b"x")
print(json.dumps({"read": os.read(r, 1).decode()}))
"""
    )
    assert got["read"] == "x"


def test_sizes_it_cannot_give_are_refused_naming_the_fix() -> None:
    with pytest.raises(ValueError, match="below 2"):
        grow_fd_table(1)
    with pytest.raises(ValueError, match="ulimit -n"):
        grow_fd_table(1 << 40)


def test_the_environment_switch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("COLDSTART_FD_TABLE", raising=False)
    assert grow_from_env() is None
    monkeypatch.setenv("COLDSTART_FD_TABLE", "lots")
    with pytest.raises(ValueError, match="COLDSTART_FD_TABLE='lots' is not a number"):
        grow_from_env()
    monkeypatch.setenv("COLDSTART_FD_TABLE", "128")
    t = grow_from_env()
    assert t is not None and t.size_after >= 128


def test_the_torch_probe_refuses_a_bad_switch_before_anything_else(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("COLDSTART_FD_TABLE", "lots")
    assert torch_probe_main(["--rank", "0", "--nranks", "1", "--coord", "127.0.0.1:1"]) == 2
    assert "COLDSTART_FD_TABLE='lots' is not a number" in capsys.readouterr().err


class Index:
    """An integer-like object (what numpy's integers are to operator.index)."""

    def __init__(self, value: int) -> None:
        self.value = value

    def __index__(self) -> int:
        return self.value


@pytest.mark.parametrize(
    "size, name",
    [
        (100.5, "float"),
        (1024.0, "float"),
        ("1024", "str"),
        (None, "NoneType"),
        (True, "bool"),
        (False, "bool"),
        ([1024], "list"),
        (b"1024", "bytes"),
    ],
)
def test_a_size_that_is_not_an_int_is_one_type_error_naming_it(size, name) -> None:
    with pytest.raises(TypeError) as e:
        grow_fd_table(size)
    message = str(e.value)
    assert message.startswith(f"grow_fd_table: size must be an int, not {name};") and "\n" not in message
    assert "grow_fd_table(1024)" in message  # what to give


def test_integers_of_other_types_are_taken() -> None:
    t = grow_fd_table(Index(256))
    assert t is not None and t.size_after >= 256
    numpy = pytest.importorskip("numpy")
    t = grow_fd_table(numpy.int64(512))
    assert t is not None and t.size_after >= 512
    with pytest.raises(TypeError, match="size must be an int, not bool"):
        grow_fd_table(numpy.bool_(True))


def test_values_are_checked_before_the_platform(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where /proc gives no FDSize (not Linux) the call does nothing, but a bad size is still refused."""
    import coldstart.fdtable

    monkeypatch.setattr(coldstart.fdtable, "_status", lambda: {})
    assert grow_fd_table(1024) is None
    with pytest.raises(ValueError, match="below 2"):
        grow_fd_table(0)
    with pytest.raises(TypeError, match="not float"):
        grow_fd_table(100.5)
