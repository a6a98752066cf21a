"""Hostile input, round five (issue 41), on the Python side:

- `python -m coldstart` and the console script without a binary that can run (none, a missing $COLDSTART_BIN, a
  folder, a text file, a FIFO, a device, a damaged wheel's binary): one line on stderr naming what is wrong and the
  fix, exit status 2, never a traceback;
- coldstart.load() and Run.html() of a file whose name begins with `-`: read as a path, never taken for a flag;
- launcher variables (LOCAL_RANK for local_device() and prewarm(); RANK, WORLD_SIZE, MASTER_PORT for prewarm's
  env://; COLDSTART_FD_TABLE) of anything but ASCII digits ('١', '²', a sign, whitespace, empty): one ValueError
  line naming the variable;
- every message built from a user's path or value is one line, its control characters escaped."""

import os
import shutil
import stat
import subprocess
import sys

import pytest
from conftest import FAKE_TORCH, HERE

import coldstart
from coldstart._text import shown
from coldstart.cli import binary

RESULTS = os.path.join(HERE, "..", "..", "docs", "results", "2026-11-30-h200x2", "default.json")
PACKAGE_PARENT = os.path.dirname(os.path.dirname(os.path.abspath(coldstart.__file__)))

# The two ways a user starts the binary from Python: `python -m coldstart` and the console script, which calls
# coldstart.__main__:main (pyproject.toml's [project.scripts]).
ENTRY_POINTS = {
    "python -m coldstart": ["-m", "coldstart", "--version"],
    "console script": ["-c", "import sys; from coldstart.__main__ import main; sys.argv[1:] = ['--version']; main()"],
}


def one_line(message: str) -> str:
    assert "\n" not in message and "\r" not in message and "\x1b" not in message, repr(message)
    assert len(message.splitlines()) == 1, repr(message)
    return message


def start(entry: str, env: dict, package_parent: str = PACKAGE_PARENT) -> subprocess.CompletedProcess:
    full = {k: v for k, v in os.environ.items() if k != "COLDSTART_BIN"}
    full.update(env, PYTHONPATH=package_parent)
    return subprocess.run(
        [sys.executable, *ENTRY_POINTS[entry]], env=full, capture_output=True, text=True, timeout=30, cwd=package_parent
    )


def refused_in_one_line(p: subprocess.CompletedProcess, *words: str) -> str:
    assert p.returncode == 2 and p.stdout == "", (p.returncode, p.stdout, p.stderr)
    assert "Traceback" not in p.stderr and p.stderr.endswith("\n"), p.stderr
    line = one_line(p.stderr[:-1])
    assert line.startswith("coldstart: "), line
    for word in words:
        assert word in line, (word, line)
    return line


def bad_binaries(tmp_path) -> dict[str, tuple[str, str]]:
    """A path for each kind of binary that cannot run, and the words the refusal must hold."""
    text = tmp_path / "text"
    text.write_text("#!/bin/sh\necho not the binary\n")
    text.chmod(0o755)
    plain = tmp_path / "plain"
    plain.write_text("coldstart\n")
    plain.chmod(0o755)
    not_executable = tmp_path / "not-executable"
    shutil.copyfile("/bin/true", not_executable)
    not_executable.chmod(0o644)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    fifo.chmod(0o755)
    other_machine = tmp_path / "other-machine"  # passes every check; the kernel refuses to run it
    other_machine.write_bytes(b"\x7fELF" + bytes(60))
    other_machine.chmod(0o755)
    return {
        "missing": (str(tmp_path / "no-binary-here"), "no such file"),
        "missing, a newline in its name": (str(tmp_path / "no\nbinary\x1b[31m"), "no such file"),
        "missing folder on the way": (str(text / "coldstart"), "not a folder"),
        "a folder": (str(tmp_path), "a folder"),
        "a shell script": (str(text), "not an executable program"),
        "a text file": (str(plain), "not an executable program"),
        "not executable": (str(not_executable), "not executable"),
        "a FIFO": (str(fifo), "a FIFO"),
        "a device": ("/dev/null", "a character device"),
        "an ELF of another machine": (str(other_machine), "cannot be run"),
    }


CASES = [
    "missing",
    "missing, a newline in its name",
    "missing folder on the way",
    "a folder",
    "a shell script",
    "a text file",
    "not executable",
    "a FIFO",
    "a device",
    "an ELF of another machine",
]


@pytest.mark.parametrize("entry", ENTRY_POINTS)
@pytest.mark.parametrize("case", CASES)
def test_an_unusable_coldstart_bin_is_one_line_and_status_2(tmp_path, entry, case):
    path, reason = bad_binaries(tmp_path)[case]
    line = refused_in_one_line(start(entry, {"COLDSTART_BIN": path}), reason, "COLDSTART_BIN", shown(path))
    assert "set COLDSTART_BIN to a built binary" in line or "unset it" in line, line


def package_copy(tmp_path) -> str:
    """This package, copied without its binary, for a wheel whose binary is damaged or missing."""
    parent = tmp_path / "site"
    shutil.copytree(
        os.path.dirname(os.path.abspath(coldstart.__file__)),
        parent / "coldstart",
        ignore=shutil.ignore_patterns("_bin", "__pycache__"),
    )
    return str(parent)


@pytest.mark.parametrize("entry", ENTRY_POINTS)
@pytest.mark.parametrize("damage", ["a folder", "a text file", "not executable", "a dangling link"])
def test_a_damaged_wheel_binary_says_reinstall(tmp_path, entry, damage):
    site = package_copy(tmp_path)
    bin_dir = os.path.join(site, "coldstart", "_bin")
    os.mkdir(bin_dir)
    inside = os.path.join(bin_dir, "coldstart")
    if damage == "a folder":
        os.mkdir(inside)
    elif damage == "a dangling link":
        os.symlink(os.path.join(bin_dir, "gone"), inside)
    else:
        with open(inside, "w") as f:
            f.write("version https://git-lfs.github.com/spec/v1\n")
        os.chmod(inside, 0o644 if damage == "not executable" else 0o755)
    line = refused_in_one_line(start(entry, {"PATH": str(tmp_path)}, site), inside, "reinstall the wheel")
    assert "pip install" in line


@pytest.mark.parametrize("entry", ENTRY_POINTS)
def test_no_binary_anywhere_is_one_line_and_status_2(tmp_path, entry):
    (tmp_path / "bin").mkdir()
    launcher = tmp_path / "bin" / "coldstart"  # this package's own console script on PATH is passed over
    launcher.write_text("#!/usr/bin/python3\nfrom coldstart.__main__ import main\nmain()\n")
    launcher.chmod(0o755)
    p = start(entry, {"PATH": str(tmp_path / "bin")}, package_copy(tmp_path))
    refused_in_one_line(p, "coldstart's binary was not found", "pip install .", "COLDSTART_BIN")


def test_the_library_names_the_binary_in_one_line(tmp_path, monkeypatch):
    """binary(), load() and doctor() raise one FileNotFoundError line, not the OSError of an exec that failed."""
    results = tmp_path / "results.json"
    shutil.copyfile(RESULTS, results)
    for case, (path, reason) in bad_binaries(tmp_path).items():
        monkeypatch.setenv("COLDSTART_BIN", path)
        calls = [lambda: coldstart.load(str(results)), coldstart.doctor]
        for call in calls if case == "an ELF of another machine" else [binary, *calls]:  # found; exec fails
            with pytest.raises(FileNotFoundError) as e:
                call()
            message = one_line(str(e.value))
            assert reason in message and "COLDSTART_BIN" in message, (case, message)


# A name the binary's parser would take for a flag, or for the end of the flags, without `--`.
DASH_NAMES = ["-x.json", "--json", "--help", "-", "--", "-h", "--html=x"]


@pytest.mark.parametrize("name", DASH_NAMES)
def test_a_results_file_whose_name_begins_with_a_dash_is_read(tmp_path, monkeypatch, coldstart_bin, name):
    monkeypatch.setenv("COLDSTART_BIN", coldstart_bin)
    monkeypatch.chdir(tmp_path)
    shutil.copyfile(RESULTS, tmp_path / name)
    run = coldstart.load(name)
    assert run.path == name and len(run.configs) == 6 and len(run.trials) == 30
    assert "<h2>Verdict</h2>" in run.html()


@pytest.mark.parametrize("name", ["-x.json", "--help"])
def test_a_missing_or_broken_file_whose_name_begins_with_a_dash_is_named(tmp_path, monkeypatch, coldstart_bin, name):
    monkeypatch.setenv("COLDSTART_BIN", coldstart_bin)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError) as e:
        coldstart.load(name)
    assert name in one_line(str(e.value)) and "not expected" not in str(e.value)
    (tmp_path / name).write_text('{"schema": "coldstart.bench/2", "trials": [')
    with pytest.raises(ValueError) as e:
        coldstart.load(name)
    assert name in one_line(str(e.value)) and "not valid JSON" in str(e.value)


def test_paths_with_control_characters_make_one_line_messages(tmp_path, monkeypatch, coldstart_bin):
    monkeypatch.setenv("COLDSTART_BIN", coldstart_bin)
    folder = tmp_path / "line\none\x1b[2J\u2028\x85"
    folder.mkdir()
    fifo = folder / "results.json"
    os.mkfifo(fifo)
    with pytest.raises(ValueError) as e:
        coldstart.load(str(fifo))  # refused by the package, before the binary
    assert one_line(str(e.value)).startswith(shown(str(fifo)) + ": a FIFO")
    assert "line\\none\\x1b[2J\\u2028\\u0085" in str(e.value)
    for path in (str(folder / "missing.json"), str(folder)):  # refused by the binary
        with pytest.raises(ValueError) as e:
            coldstart.load(path)
        one_line(str(e.value))


def test_shown_escapes_control_characters_and_cuts_long_values():
    assert shown("a\nb\tc\rd\x1b[0m\x7f\x85\u2028é") == "a\\nb\\tc\\rd\\x1b[0m\\x7f\\u0085\\u2028é"
    assert shown("x" * 300) == "x" * 200 + "...(300 characters)"
    assert shown(os.fsdecode(b"bad\xffbyte")) == "bad\\udcffbyte"  # an undecodable byte of a path


@pytest.fixture
def torch(monkeypatch):
    monkeypatch.syspath_prepend(FAKE_TORCH)
    for name in [m for m in sys.modules if m == "torch" or m.startswith("torch.")]:
        monkeypatch.delitem(sys.modules, name)
    import torch

    yield torch
    torch.distributed.destroy_process_group()
    for name in [m for m in sys.modules if m == "torch" or m.startswith("torch.")]:
        del sys.modules[name]


# Values that are not a whole number in ASCII digits: other scripts' digits pass str.isdigit() ('١' is Arabic-Indic
# one, which int() reads as 1; '²' int() refuses in a message naming no variable).
NOT_NUMBERS = ["١", "²", "٣٤", "１", "", " ", " 1", "1 ", "1\n", "+1", "-1", "0x1", "1_0", "1.0", "one", "1\x1b[31m"]


def refusal(e: pytest.ExceptionInfo, name: str, value: str) -> str:
    message = one_line(str(e.value))
    assert message.startswith(f"{name}={value!r} is not a number (ASCII digits 0-9 alone); give "), message
    return message


@pytest.mark.parametrize("value", NOT_NUMBERS)
def test_local_rank_of_anything_but_ascii_digits_is_one_value_error(torch, monkeypatch, value):
    import coldstart

    monkeypatch.setattr(torch.cuda, "_count", 8)
    monkeypatch.setenv("LOCAL_RANK", value)
    with pytest.raises(ValueError) as e:
        coldstart.local_device(torch)
    assert "LOCAL_RANK=0" in refusal(e, "LOCAL_RANK", value)
    with pytest.raises(ValueError) as e:
        coldstart.prewarm()  # before anything starts
    refusal(e, "LOCAL_RANK", value)
    assert torch.distributed.init_calls == [] and not torch.distributed.is_initialized()


def test_a_long_value_is_cut(torch, monkeypatch):
    import coldstart

    monkeypatch.setenv("LOCAL_RANK", "1\n" * 5000)
    with pytest.raises(ValueError) as e:
        coldstart.local_device(torch)
    assert "...(10000 characters)" in one_line(str(e.value)) and len(str(e.value)) < 600


@pytest.mark.parametrize("name", ["RANK", "WORLD_SIZE", "MASTER_PORT"])
@pytest.mark.parametrize("value", ["١", "²", "", " 0", "-1\n"])
def test_prewarm_refuses_the_variables_env_rendezvous_reads(torch, monkeypatch, name, value):
    import coldstart

    monkeypatch.setenv(name, value)
    with pytest.raises(ValueError) as e:
        coldstart.prewarm(torch.device("cpu"), backend="gloo")  # env://: init_process_group would read it
    refusal(e, name, value)
    assert torch.distributed.init_calls == [] and not torch.distributed.is_initialized()


def test_variables_prewarm_does_not_read_are_not_checked(torch, monkeypatch):
    """Given as arguments, or with a store or a tcp:// address, env:// does not read them: no refusal."""
    import coldstart

    for name in ("RANK", "WORLD_SIZE", "MASTER_PORT", "LOCAL_WORLD_SIZE"):
        monkeypatch.setenv(name, "²")
    store = torch.distributed.TCPStore("127.0.0.1", 0, 1, True, wait_for_workers=False)
    warm = coldstart.prewarm(torch.device("cpu"), backend="gloo", store=store, rank=0, world_size=1)
    assert warm.wait(timeout=30).collective_end_ns > 0


@pytest.mark.parametrize("value", ["١٠٢٤", "１０２４", " 1024", "+1024", "1_024", "1024\n"])
def test_coldstart_fd_table_of_anything_but_ascii_digits_is_one_value_error(monkeypatch, value):
    from coldstart.fdtable import grow_from_env

    monkeypatch.setenv("COLDSTART_FD_TABLE", value)
    with pytest.raises(ValueError) as e:
        grow_from_env()
    assert "COLDSTART_FD_TABLE=1024" in refusal(e, "COLDSTART_FD_TABLE", value)


def test_the_binary_under_test_accepts_the_end_of_flags(coldstart_bin, tmp_path):
    """`coldstart report --json -- FILE`, as load() runs it: CLI11 reads what follows `--` as positionals."""
    shutil.copyfile(RESULTS, tmp_path / "-x.json")
    p = subprocess.run(
        [coldstart_bin, "report", "--json", "--", "-x.json"], cwd=tmp_path, capture_output=True, text=True
    )
    assert p.returncode == 0 and '"coldstart.bench/2"' in p.stdout, p.stderr
    assert os.path.exists(tmp_path / "-x.json") and stat.S_ISREG(os.stat(tmp_path / "-x.json").st_mode)


def test_a_path_that_is_not_utf8_is_named_escaped(tmp_path, monkeypatch, coldstart_bin):
    """The binary echoes the path's bytes; load() names it with the byte escaped, not a UnicodeDecodeError."""
    monkeypatch.setenv("COLDSTART_BIN", coldstart_bin)
    path = os.fsdecode(os.fsencode(str(tmp_path)) + b"/bad\xff\nname.json")
    with pytest.raises(ValueError) as e:
        coldstart.load(path)
    assert "bad\\udcff\\nname.json" in one_line(str(e.value)), str(e.value)
