"""The torch probe's protocol end to end through the lab, with a fake torch module where the real one is not
installed (with the real one, the same test runs the gloo backend on the CPU)."""

import json
import os
import socket
import struct
import subprocess
import sys

import pytest
from conftest import FAKE_TORCH, run

TORCH_PHASES = [
    "import_torch",
    "init_process_group",
    "barrier_enqueue",
    "barrier_wait",
    "first_enqueue",
    "first_wait",
    "second_enqueue",
    "second_wait",
    "steady",
    "destroy",
]


def torch_env():
    try:
        import torch  # noqa: F401

        return {}
    except ImportError:
        return {"PYTHONPATH": FAKE_TORCH}


@pytest.mark.parametrize("init", ["lazy", "eager"])
def test_probe_reports_every_phase_through_the_lab(coldstart, out_dir, init):
    env = torch_env()
    p = run(
        [
            coldstart,
            "bench",
            "--worker",
            "torch",
            "--dry-run",
            "--gpus",
            "2",
            "--trials",
            "1",
            "--modes",
            "shared,isolated",
            "--env",
            f"COLDSTART_TORCH_INIT={init}",
            "--size",
            "4096",
            "--out",
            out_dir,
        ],
        env=env,
    )
    assert p.returncode == 0, p.stdout + p.stderr
    r = json.load(open(os.path.join(out_dir, "results.json")))
    assert r["spec"]["worker"] == "torch"
    assert len(r["trials"]) == 2
    for t in r["trials"]:
        assert t["status"] == "ok", t
        for rank in t["ranks"]:
            names = [ph["name"] for ph in rank["phases"]]
            for want in TORCH_PHASES:
                assert want in names, (want, names)
            assert names.index("init_process_group") < names.index("barrier_enqueue") < names.index("first_enqueue")
            assert rank["torch_init"] == init
            assert rank["torch_version"]
            assert all(ph["dur_ms"] >= 0 for ph in rank["phases"])
        # rank 0 picks torch's rendezvous, the other ranks get it through the coordinator
        assert "unique_id" in [ph["name"] for ph in t["ranks"][0]["phases"]]
        assert "sync_uid" in [ph["name"] for ph in t["ranks"][1]["phases"]]


def run_probe(coldstart, out_dir, *extra):
    p = run(
        [coldstart, "bench", "--worker", "torch", "--dry-run", "--gpus", "2", "--trials", "1", "--modes", "isolated"]
        + list(extra)
        + ["--size", "0", "--out", out_dir],
        env=torch_env(),
    )
    assert p.returncode == 0, p.stdout + p.stderr
    return json.load(open(os.path.join(out_dir, "results.json")))


@pytest.mark.skipif("PYTHONPATH" not in torch_env(), reason="models the fake torch's store; the real one has its own")
def test_init_process_group_measures_the_rendezvous_not_a_client_back_off(coldstart, out_dir):
    """torch's store client backs off when the master is not listening yet. Rank 0 starts the store before the ranks
    meet, so no client races it and init_process_group is the rendezvous itself (the fake's back-off is 0.5 s)."""
    r = run_probe(coldstart, out_dir)
    for rank in r["trials"][0]["ranks"]:
        init = next(p for p in rank["phases"] if p["name"] == "init_process_group")
        assert init["dur_ms"] < 300, rank["phases"]


def python_with_torch() -> str | None:
    """An interpreter here whose torch has torch.distributed (CI's Debian python3-torch, for /usr/bin/python3)."""
    for py in (sys.executable, "/usr/bin/python3"):
        if (
            os.path.exists(py)
            and subprocess.run([py, "-c", "import torch.distributed"], capture_output=True).returncode == 0
        ):
            return py
    return None


@pytest.mark.skipif(python_with_torch() is None, reason="no interpreter here has torch")
def test_the_rendezvous_store_is_timed_per_phase_with_the_real_torch(coldstart, out_dir):
    """gloo on the CPU with the real torch: its init_process_group exchanges every rank's address through the store,
    and each rank's report counts those calls and their time under init_process_group; bench's table says the store's
    share (`report`'s table). COLDSTART_TORCH_STORE_TIMING=0 hands torch the TCPStore itself: no calls counted."""
    env = {"COLDSTART_PYTHON": python_with_torch()}
    args = [coldstart, "bench", "--worker", "torch", "--dry-run", "--gpus", "3", "--trials", "1", "--modes", "isolated"]
    p = run(args + ["--env", "COLDSTART_TORCH_STORE_TIMING=,0", "--size", "0", "--out", out_dir], env=env)
    assert p.returncode == 0, p.stdout + p.stderr
    r = json.load(open(os.path.join(out_dir, "results.json")))
    timed = {c["id"] for c in r["configs"] if c["env"][0]["value"] is None}
    for t in r["trials"]:
        assert t["status"] == "ok", t
        for rank in t["ranks"]:
            if t["config_id"] not in timed:
                assert "store_calls" not in rank, rank
                continue
            calls = rank["store_calls"]
            names = {ph["name"] for ph in rank["phases"]} | {"between phases"}
            assert set(calls) <= names, calls
            assert calls["init_process_group"]["count"] >= 3, calls  # gloo: an address per rank, at least
            assert calls["init_process_group"]["ms"] > 0, calls
    table = run([coldstart, "report", os.path.join(out_dir, "results.json")]).stdout  # a dry run prints no phases
    assert "the rendezvous store (torch's TCPStore, each rank's own calls): init_process_group " in table, table


@pytest.mark.parametrize("init", ["lazy", "eager"])
def test_memory_after_init_is_measured_where_the_communicator_exists(coldstart, out_dir, init):
    """Lazy: the communicator exists only after the first barrier, so "after init" is measured there."""
    r = run_probe(coldstart, out_dir, "--env", f"COLDSTART_TORCH_INIT={init}")
    for rank in r["trials"][0]["ranks"]:
        assert rank["mem"]["after_init_at"] == ("init_process_group" if init == "eager" else "barrier_wait")


def test_probe_refuses_other_collectives_and_needs_the_token(tmp_path):
    here = os.path.dirname(os.path.abspath(__file__))
    env = dict(os.environ, PYTHONPATH=os.path.join(here, ".."))
    env.pop("COLDSTART_TOKEN", None)
    args = [
        sys.executable,
        "-m",
        "coldstart.torch_worker",
        "--rank",
        "0",
        "--nranks",
        "1",
        "--coord",
        "127.0.0.1:1",
        "--dry-run",
    ]
    p = subprocess.run(args, env=env, capture_output=True, text=True)
    assert p.returncode != 0 and "COLDSTART_TOKEN" in p.stderr
    env["COLDSTART_TOKEN"] = "t"
    p = subprocess.run(args + ["--collective", "broadcast"], env=env, capture_output=True, text=True)
    assert p.returncode != 0 and "all_reduce only" in p.stderr


def test_protocol_frames_match_the_coordinator(monkeypatch):
    """A hello as the C++ coordinator expects it: 4-byte little-endian length, JSON with the token and version."""
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, os.path.join(here, ".."))
    from coldstart.protocol import PROTOCOL_VERSION, Client

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    port = server.getsockname()[1]
    import threading

    got = {}

    def serve():
        conn, _ = server.accept()
        (n,) = struct.unpack("<I", conn.recv(4))
        got["hello"] = json.loads(conn.recv(n))
        reply = json.dumps({"t": "welcome"}).encode()
        conn.sendall(struct.pack("<I", len(reply)) + reply)
        conn.close()

    th = threading.Thread(target=serve)
    th.start()
    Client("127.0.0.1", port, "tok", 7, 1, 2, 5)
    th.join()
    assert got["hello"]["t"] == "hello" and got["hello"]["token"] == "tok"
    assert got["hello"]["v"] == PROTOCOL_VERSION and got["hello"]["trial"] == 7 and got["hello"]["rank"] == 1


def test_prewarm_in_the_probe_is_coldstart_prewarm_beside_the_start_up(coldstart, out_dir):
    """--fix prewarm: the process group and the warm-up run in coldstart.prewarm (what users call) while the start-up
    work runs; the first barrier comes after the join."""
    r = run_probe(coldstart, out_dir, "--startup", "cpu:200ms", "--fix", "prewarm,cumem-off")
    by_fix = {r["configs"][t["config_id"]]["fix"]: t for t in r["trials"]}
    for rank in by_fix["prewarm"]["ranks"]:
        names = [p["name"] for p in rank["phases"]]
        assert "init_process_group" not in names  # it ran on the prewarm thread
        assert names.index("startup") < names.index("prewarm_join") < names.index("barrier_enqueue")
        assert {"prewarm", "prewarm_init"} <= set(names)
        startup = next(p for p in rank["phases"] if p["name"] == "startup")
        assert 190 <= startup["dur_ms"] < 1000
        assert rank["mem"]["after_init_at"] == "prewarm_join"
    for rank in by_fix["cumem-off"]["ranks"]:
        assert rank["env"]["NCCL_CUMEM_ENABLE"] == "0"
        assert "init_process_group" in [p["name"] for p in rank["phases"]]


def test_start_up_spelling_and_pieces_match_bench():
    from coldstart.torch_worker import PIECE, parse_startup, run_startup

    assert parse_startup("none") == ("none", 0, PIECE)
    assert parse_startup("cpu:300ms")[:2] == ("cpu", pytest.approx(0.3))
    assert parse_startup("h2d:4GiB") == ("h2d", 4 << 30, 256 << 20)
    assert parse_startup("h2d-pinned:1GiB/16MiB") == ("h2d-pinned", 1 << 30, 16 << 20)

    class Tensor:
        def __init__(self, n: int, log: list[int]) -> None:
            self.n, self.log = n, log

        def fill_(self, _: int) -> None:
            pass

        def pin_memory(self) -> "Tensor":
            return self

        def __getitem__(self, s: slice) -> "Tensor":
            return Tensor(len(range(*s.indices(self.n))), self.log)

        def copy_(self, src: "Tensor") -> None:
            assert src.n == self.n
            self.log.append(self.n)

    class Torch:
        uint8 = "uint8"

        def __init__(self) -> None:
            self.copies: list[int] = []
            self.cuda = self

        def empty(self, n: int, dtype: str, device: object = None) -> Tensor:
            return Tensor(n, self.copies)

        def current_stream(self, _: object) -> "Torch":
            return self

        def synchronize(self) -> None:
            pass

    torch, keep = Torch(), []
    assert run_startup(torch, "h2d:40MiB/16MiB", "cuda:0", False, keep) == 40 << 20
    assert torch.copies == [16 << 20, 16 << 20, 8 << 20] and len(keep) == 1
