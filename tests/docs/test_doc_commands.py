"""Every command the docs show runs as written, as far as a machine without a GPU can tell.

The commands are taken from the docs' code blocks and inline code: README.md, docs/*.md, the results folders'
READMEs and nccl/'s. For each one:
- `coldstart SUB [SUB...] --flag ...`: the subcommand exists and every flag is one its `--help` lists;
- a path into the tree (`scripts/...`, `nccl/...`, `docs/results/...`, ...) exists (globs match something);
- `build/NAME` names a program the build makes, `cmake --build DIR --target A B` targets that exist;
- a shell code block parses (`bash -n`);
- the commands that need nothing but the tree run and exit 0: `coldstart report FILE`, `coldstart nccllog FOLDER`,
  `coldstart doctor`, `coldstart nccl list` and `coldstart nccl build --dry-run ...` (in a scratch cache), and every
  `coldstart bench ...` without a placeholder as a dry run (`--dry-run`, and `--gpus 2` where it names no count: this
  machine has no GPU), which parses and checks every flag and prints the plan.
COLDSTART_BIN names the binary (ctest sets it); COLDSTART_SOURCE_DIR the tree (default: this file's).
"""

from __future__ import annotations

import functools
import glob
import os
import re
import shlex
import subprocess
import tempfile
from pathlib import Path

import pytest

ROOT = Path(os.environ.get("COLDSTART_SOURCE_DIR", Path(__file__).resolve().parents[2]))
BIN = os.environ.get("COLDSTART_BIN", str(ROOT / "build" / "coldstart"))

# Folders of the tree a documented path can start with.
TREE = ("scripts", "nccl", "bench", "tests", "python", "docs", "fuzz", "examples", "src")
# Programs and libraries a build folder holds: add_executable/add_library names in the CMake files.
CMAKE_FILES = ("CMakeLists.txt", "fuzz/CMakeLists.txt")
# Placeholders the docs write for what the reader supplies; a command with one is checked but not run.
PLACEHOLDER = re.compile(r"^(?:[A-Z][A-Z0-9_]*(?:[./][A-Za-z0-9_.]*)?|<[^>]+>|\.\.\.|\S*\*\S*)$")


def doc_files() -> list[Path]:
    names = ["README.md", "nccl/README.md", "nccl/diag/README.md"]
    names += sorted(glob.glob("docs/*.md", root_dir=ROOT))
    names += sorted(glob.glob("docs/results/*/README.md", root_dir=ROOT))
    return [ROOT / n for n in names]


def commands_in(text: str) -> list[str]:
    """Shell lines from fenced blocks (sh, bash, console `$ ` lines, unlabelled) and inline code spans."""
    out: list[str] = []
    for m in re.finditer(r"```(\w*)\n(.*?)```", text, re.S):
        lang, body = m.group(1), m.group(2)
        if lang not in ("", "sh", "bash", "console"):
            continue
        joined = re.sub(r"\\\n\s*", " ", body)  # continuation lines
        for line in joined.splitlines():
            line = line.strip()
            if lang == "console":
                if not line.startswith("$ "):
                    continue
                line = line[2:]
            out.append(line)
    prose = re.sub(r"```.*?```", "", text, flags=re.S)
    out += re.findall(r"`([^`\n]+)`", prose)
    return out


def split_pipeline(line: str) -> list[list[str]]:
    """The simple commands of a line (split at |, &&, ||, ;), each without its leading VAR=value words, or [] when
    the line is not shell (prose in a code span)."""
    line = line.split(" #", 1)[0]
    try:
        words = shlex.split(line, posix=True)
    except ValueError:
        return []
    commands: list[list[str]] = [[]]
    for w in words:
        if w in ("|", "&&", "||", ";"):
            commands.append([])
        else:
            commands[-1].append(w)
    result = []
    for c in commands:
        while c and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", c[0]):
            c = c[1:]
        if c:
            result.append(c)
    return result


@functools.cache
def cmake_targets() -> set[str]:
    names: set[str] = set()
    for f in CMAKE_FILES:
        text = (ROOT / f).read_text()
        names |= set(re.findall(r"add_(?:executable|library)\((\w+)", text))
        for loop in re.findall(r"foreach\(name ([\w ]+)\)", text):
            names |= set(loop.split())
    return names


@functools.cache
def help_of(path: tuple[str, ...]) -> str | None:
    p = subprocess.run([BIN, *path, "--help"], capture_output=True, text=True, timeout=30)
    return p.stdout if p.returncode == 0 else None


def subcommands_of(help_text: str) -> set[str]:
    part = help_text.split("Subcommands:", 1)
    if len(part) < 2:
        return set()
    return set(re.findall(r"^  (\w+)\s", part[1], re.M))


def flags_of(help_text: str) -> set[str]:
    return set(re.findall(r"(?<![\w-])(--?[A-Za-z][\w-]*)", help_text.split("Subcommands:", 1)[0]))


def check_coldstart(words: list[str]) -> list[str]:
    """Problems with a `coldstart ...` command: an unknown subcommand or flag."""
    path: list[str] = []
    args = words[1:]
    top = help_of(())
    assert top is not None, f"{BIN} --help failed"
    text = top
    while args and args[0] in subcommands_of(text):
        path.append(args.pop(0))
        sub = help_of(tuple(path))
        if sub is None:
            return [f"coldstart {' '.join(path)} --help fails"]
        text = sub
    if not path and args and not args[0].startswith("-"):
        return [f"no subcommand '{args[0]}'"]
    known = flags_of(text)
    problems = []
    for a in args:
        if a == "--":
            break  # what follows is another program's command line (trace -- CMD)
        if a.startswith("-") and a != "-" and not re.match(r"^-\d", a):  # "-" alone is standard input, no flag
            flag = a.split("=", 1)[0]
            if flag not in known and flag not in ("-h", "--help"):
                problems.append(f"coldstart {' '.join(path)} has no {flag}")
    return problems


def check_paths(words: list[str]) -> list[str]:
    problems = []
    for w in words:
        for token in re.split(r"[=,:]", w):
            m = re.match(r"^(?:\./)?((?:" + "|".join(TREE) + r")/[\w./*-]*\w)", token)
            if not m:
                continue
            path = m.group(1)
            parts = path.split("/")
            if parts[0] == "src" and not (len(parts) > 2 and (ROOT / "src" / parts[1]).is_dir()):
                continue  # NCCL's own source (src/init.cc, src/transport/p2p.cc), which the patch docs cite
            if PLACEHOLDER.match(path.rsplit("/", 1)[-1]) and not path.rsplit("/", 1)[-1].startswith("*"):
                continue
            if not glob.glob(path + "*", root_dir=ROOT):  # a prefix names a file too: nccl/v2.30.7/0002
                problems.append(f"no {path} in the tree")
        m = re.match(r"^(?:\./)?build[\w-]*/([\w-]+)$", w)
        if m and m.group(1) not in cmake_targets() and m.group(1) != "coldstart":
            problems.append(f"{w}: no program {m.group(1)} in the CMake files")
    if words[:2] == ["cmake", "--build"] and "--target" in words:
        for t in words[words.index("--target") + 1 :]:
            if t.startswith("-"):
                break
            if t not in cmake_targets():
                problems.append(f"no CMake target {t}")
    return problems


def documented() -> list[tuple[str, str]]:
    seen = set()
    out = []
    for f in doc_files():
        for line in commands_in(f.read_text()):
            if line in seen:
                continue
            seen.add(line)
            out.append((str(f.relative_to(ROOT)), line))
    return out


DOCUMENTED = documented()


def test_the_docs_show_commands() -> None:
    coldstart = [line for _, line in DOCUMENTED if any(c[0] == "coldstart" for c in split_pipeline(line))]
    assert len(coldstart) >= 40, f"only {len(coldstart)} coldstart commands found in the docs: is the reader broken?"


@pytest.mark.parametrize("where,line", DOCUMENTED, ids=[f"{w}:{i}" for i, (w, _) in enumerate(DOCUMENTED)])
def test_documented_command_names_what_exists(where: str, line: str) -> None:
    problems = []
    for words in split_pipeline(line):
        if words[0] == "coldstart":
            problems += check_coldstart(words)
        if words[0] in ("coldstart", "cmake", "bash", "python", "python3", "sh") or re.match(
            r"^(\./)?(" + "|".join(TREE) + r"|build[\w-]*)/", words[0]
        ):
            problems += check_paths(words)
    assert not problems, f"{where}: `{line}`: " + "; ".join(problems)


def shell_blocks() -> list[tuple[str, str]]:
    out = []
    for f in doc_files():
        for m in re.finditer(r"```(sh|bash)\n(.*?)```", f.read_text(), re.S):
            out.append((str(f.relative_to(ROOT)), m.group(2)))
    return out


SHELL_BLOCKS = shell_blocks()


@pytest.mark.parametrize("where,block", SHELL_BLOCKS, ids=[w for w, _ in SHELL_BLOCKS])
def test_shell_blocks_parse(where: str, block: str) -> None:
    p = subprocess.run(["bash", "-n"], input=block, capture_output=True, text=True)
    assert p.returncode == 0, f"{where}: a shell block does not parse: {p.stderr}"


def is_placeholder(word: str) -> bool:
    """FILE, DIR, HOST:6379, STOCK,PATCHED, <tarball>, ...: what the reader supplies. A variable's name before `=`
    (--env NCCL_CUMEM_ENABLE=,0) is not one."""
    takes_value = "=" in word and (word.startswith("--") or not word.startswith("-"))
    value = word.split("=", 1)[1] if takes_value else word
    return any(PLACEHOLDER.match(part) for part in re.split(r"[,:]", value) if part)


def runnable(words: list[str]) -> bool:
    """A coldstart command that needs no GPU, no network and nothing the reader supplies: bench is run with
    --dry-run (its plan: every flag parsed and checked), the others as written."""
    if len(words) < 2 or words[0] != "coldstart":
        return False
    if any(is_placeholder(w) or w.startswith("[") for w in words[1:]):  # [--flag ...]: a synopsis
        return False
    for w in words[2:]:
        if "/" in w and not w.startswith("-") and not (ROOT / w).exists():
            return False  # a file of another machine (a GPU node's library, a run's output)
        if re.match(r"^\d+\.\d+\.\d+\+[\w.+-]+$", w):
            return False  # a build in another machine's cache (coldstart nccl build's 2.30.7+peer-regions)
    sub = words[1]
    if sub == "bench":
        return not any(w in ("--resume", "--launcher") for w in words)  # an earlier run's folder; a Ray cluster
    if sub in ("report", "nccllog"):
        return len(words) > 2 and all(w.startswith("-") or (ROOT / w).exists() for w in words[2:])
    if sub == "nccl":  # the cache's listing, and a build's plan (in a scratch cache: nothing is built or fetched)
        return words[2:3] == ["list"] or (words[2:3] == ["build"] and "--dry-run" in words)
    return words[1:] == ["doctor"] or words[1:] == ["doctor", "--json"]


RUNNABLE = [(w, c) for w, line in DOCUMENTED for c in split_pipeline(line) if runnable(c)]


def test_some_documented_commands_run() -> None:
    assert len(RUNNABLE) >= 5, f"only {len(RUNNABLE)} documented commands can run here: is the reader broken?"


@pytest.mark.parametrize("where,words", RUNNABLE, ids=[" ".join(c) for _, c in RUNNABLE])
def test_documented_command_runs(where: str, words: list[str]) -> None:
    with tempfile.TemporaryDirectory() as out:
        # From the tree (the docs' paths are relative to it), writing only into a scratch folder.
        args = [str(ROOT / a) if "/" in a and (ROOT / a).exists() else a for a in words[1:]]
        if args[0] == "bench":
            args += ["--dry-run"] + ([] if "--gpus" in args else ["--gpus", "2"])  # no GPU here: the plan
        # torch's stand-in (the Python suite's) for --worker torch; NVLink multicast off, as everywhere.
        env = dict(
            os.environ,
            XDG_CACHE_HOME=out,  # nccl build and list: a cache of the scratch folder's
            NCCL_NVLS_ENABLE="0",
            COLDSTART_PYTHONPATH=str(ROOT / "python"),
            PYTHONPATH=str(ROOT / "python" / "tests" / "fake_torch"),
        )
        p = subprocess.run([BIN, *args], capture_output=True, text=True, cwd=out, env=env, timeout=120)
    assert p.returncode == 0, f"{where}: `{' '.join(words)}` exited {p.returncode}: {p.stderr[-2000:]}"
