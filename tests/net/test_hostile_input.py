"""`coldstart doctor net` given hostile input (issue 41), the real binary without the lab's namespaces: hundreds of
targets under an address-space or thread limit end in a verdict, not an abort; an environment value with a control
character and a target that is no address are refused before anything is probed, in one line naming them, exit 2.
The binary is $COLDSTART_BIN (ctest sets it), else build/coldstart."""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
NOBODY = 65534


@pytest.fixture(scope="module")
def coldstart() -> str:
    path = os.environ.get("COLDSTART_BIN") or str(REPO / "build" / "coldstart")
    if not os.path.exists(path):
        pytest.fail(f"no coldstart binary at {path}; build it or set COLDSTART_BIN")
    return os.path.abspath(path)


def is_asan(binary: str) -> bool:
    """ASan reserves terabytes of shadow memory: no address-space limit lets such a binary start."""
    with open(binary, "rb") as f:
        return b"__asan_init" in f.read()


def base_env() -> dict[str, str]:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": "/tmp", "LANG": "C.UTF-8"}
    for k in ("ASAN_OPTIONS", "UBSAN_OPTIONS"):
        if k in os.environ:
            env[k] = os.environ[k]
    return env


def run(
    coldstart: str,
    args: Sequence[str],
    env: Mapping[str, str] | None = None,
    preexec: Callable[[], None] | None = None,
    timeout: float = 60,
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [coldstart, "doctor", "net", *args],
        env={**base_env(), **(env or {})},
        capture_output=True,
        text=True,
        errors="replace",
        timeout=timeout,
        preexec_fn=preexec,
    )


def how_it_ended(r: subprocess.CompletedProcess[str]) -> str:
    if r.returncode < 0:
        return f"killed by {signal.Signals(-r.returncode).name}; stderr: {r.stderr[-500:]}"
    return f"exit {r.returncode}; stderr: {r.stderr[-500:]}"


def assert_one_line_refusal(r: subprocess.CompletedProcess[str], starts: str) -> None:
    """Exit 2, nothing on stdout (nothing probed), one line on stderr starting with `starts`, no control character."""
    assert r.returncode == 2, how_it_ended(r)
    assert r.stdout == "", r.stdout[-500:]
    line = r.stderr.removesuffix("\n")
    assert "\n" not in line and line.startswith(starts), repr(r.stderr[-1000:])
    assert not any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F for c in line), repr(line[-1000:])
    assert len(line) < 1500, f"{len(line)} bytes"


# Hundreds of targets, every tenth a name, each with a proxy some client would take (a second probe of its own).
TARGETS = [f"{'localhost' if i % 10 == 0 else '127.0.0.1'}:{20000 + i}" for i in range(300)]


def check_verdict(r: subprocess.CompletedProcess[str]) -> None:
    assert r.returncode in (0, 1), how_it_ended(r)
    out = json.loads(r.stdout)
    assert len(out["targets"]) == len(TARGETS)
    assert out["verdict"]["status"] in {"ok", "warn", "broken"}


def test_hundreds_of_targets_under_an_address_space_limit_get_a_verdict(coldstart: str) -> None:
    if is_asan(coldstart):
        pytest.skip("an ASan binary cannot start under an address-space limit (its shadow memory)")

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (1_000_000_000, 1_000_000_000))  # ulimit -v 1000000

    args = [*TARGETS, "--timeout", "0.5s", "--json"]
    check_verdict(run(coldstart, args, {"http_proxy": "http://127.0.0.1:1"}, limit))


def test_hundreds_of_targets_with_a_few_threads_get_a_verdict(coldstart: str) -> None:
    if os.geteuid() != 0:
        pytest.skip("RLIMIT_NPROC binds a user other than root: switching to nobody needs root")
    running = sum(1 for p in Path("/proc").iterdir() if p.name.isdigit() and _owner(p) == NOBODY)

    def as_nobody_with_few_threads() -> None:
        os.setgid(NOBODY)
        os.setuid(NOBODY)
        resource.setrlimit(resource.RLIMIT_NPROC, (running + 6, running + 6))

    # LeakSanitizer's tracer is a thread too: without one to spare it would fail the run at exit.
    env = {"http_proxy": "http://127.0.0.1:1", "ASAN_OPTIONS": "detect_leaks=0"}
    check_verdict(run(coldstart, [*TARGETS, "--timeout", "0.5s", "--json"], env, as_nobody_with_few_threads))


def _owner(p: Path) -> int:
    try:
        return p.stat().st_uid
    except OSError:
        return -1


BAD_ENV = [
    ("MASTER_ADDR", "10.0.0.1\x1b[31m"),
    ("MASTER_PORT", "29500\n"),
    ("RAY_ADDRESS", "head\n:6379"),
    ("http_proxy", "http://p:3128\nINJECTED"),
    ("HTTPS_PROXY", "http://user:secret@p:3128\r\n"),
    ("ALL_PROXY", "socks5h://p:1080\x7f"),
    ("NO_PROXY", "localhost\n.corp"),
    ("no_grpc_proxy", "head\t"),
    ("grpc_proxy", "http://p:3128\x85"),
    ("NCCL_SOCKET_IFNAME", "et\nh0"),
    ("GLOO_SOCKET_IFNAME", "eth0\x1b]0;x\x07"),
    ("RAY_grpc_enable_http_proxy", "1\n"),
]


@pytest.mark.parametrize(("var", "value"), BAD_ENV, ids=[v for v, _ in BAD_ENV])
def test_an_environment_value_with_a_control_character_is_one_line_naming_it(
    coldstart: str, var: str, value: str
) -> None:
    env = {var: value} if var == "MASTER_ADDR" else {"MASTER_ADDR": "127.0.0.1", var: value}
    for args in ([], ["127.0.0.1:9"]):  # the environment's targets, and an argument's
        r = run(coldstart, [*args, "--timeout", "0.5s"], env)
        assert_one_line_refusal(r, f"coldstart: {var}=")
        assert "control character" in r.stderr and "secret" not in r.stderr, r.stderr


def test_a_launcher_variable_with_a_control_character_is_refused_before_the_ranks_meet(coldstart: str) -> None:
    r = run(coldstart, ["--peers", "--timeout", "0.5s", "--wait", "1s"], {"RANK": "0\n1", "WORLD_SIZE": "2"})
    assert_one_line_refusal(r, "coldstart: RANK=0\\n1:")


BAD_TARGETS = [
    "[::g]:80",
    "[1:2:3:4:5:6:7:8:9]:80",
    "[fe80::1%]:80",
    "[fe80::1%eth0;rm]:80",
    "[]:80",
    "[::1:80",
    "::1]:80",
    "[1.2.3.4]:80",
    "host:0",
    "host:+80",
    "host:-1",
    "https://[::1]x/",
    "a" * 100_000 + ":80",
    "https://" + "[" * 50_000,
]


@pytest.mark.parametrize("target", BAD_TARGETS, ids=[t[:24] for t in BAD_TARGETS])
def test_a_target_that_is_no_address_is_one_line_naming_it_before_any_probe(coldstart: str, target: str) -> None:
    r = run(coldstart, [target, "--timeout", "30s"], timeout=10)  # a probe would take up to 30 s
    assert_one_line_refusal(r, "coldstart: target ")
    assert target[:100] in r.stderr or len(target) > 200, r.stderr
