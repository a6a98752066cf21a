"""The rank report's contract (tests/data/golden/rank_report.json), from the Python side: the typed report has the
golden's fields, and the torch probe's real report, captured by a one-rank coordinator, has nothing else and the same
JSON types (src/worker/report_test.cc holds the C++ worker to the same file)."""

import dataclasses
import json
import os
import socket
import struct
import subprocess
import sys
import threading

from conftest import FAKE_TORCH, HERE

from coldstart.report import Memory, PhaseSpan, RankReport, Steady

GOLDEN = os.path.join(HERE, "..", "..", "tests", "data", "golden", "rank_report.json")


def golden():
    with open(GOLDEN) as f:
        return json.load(f)


def json_type(v):
    # bool before int: in Python a bool is an int, in JSON it is not.
    for t, name in ((bool, "boolean"), (int, "integer"), (float, "float"), (str, "string"), (list, "array")):
        if isinstance(v, t):
            return name
    return "object" if isinstance(v, dict) else "null"


def conforms(got, want, where=""):
    assert json_type(got) == json_type(want), f"{where}: {got!r} is a {json_type(got)}, the golden a {json_type(want)}"
    if isinstance(got, dict) and where == "store_calls":  # keyed by phase: each a tally like the golden's
        for k, v in got.items():
            conforms(v, next(iter(want.values())), f"{where}.{k}")
    elif isinstance(got, dict) and where not in ("env", "launcher"):
        for k, v in got.items():
            assert k in want, f"{where}.{k} is not in the golden report"
            conforms(v, want[k], f"{where}.{k}" if where else k)
    elif isinstance(got, list) and want:
        for item in got:
            conforms(item, want[0], where + "[]")


def test_the_typed_report_has_the_golden_fields():
    g = golden()
    assert [f.name for f in dataclasses.fields(RankReport)] == list(g)
    assert [f.name for f in dataclasses.fields(Memory)] == list(g["mem"])
    assert [f.name for f in dataclasses.fields(Steady)] == list(g["steady"])
    assert [f.name for f in dataclasses.fields(PhaseSpan)] == list(g["phases"][0])


class OneRankCoordinator:
    """Just enough of the lab's coordinator for one rank: welcome, values, barriers; it keeps the final report."""

    def __init__(self):
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self.report = None
        self.values = {}
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self):
        conn, _ = self.server.accept()
        with conn:
            while True:
                head = conn.recv(4, socket.MSG_WAITALL)
                if len(head) < 4:
                    return
                (n,) = struct.unpack("<I", head)
                msg = json.loads(conn.recv(n, socket.MSG_WAITALL))
                reply = None
                if msg["t"] == "hello":
                    reply = {"t": "welcome"}
                elif msg["t"] == "put":
                    self.values[msg["key"]] = msg["value"]
                elif msg["t"] == "get":
                    reply = {"t": "value", "key": msg["key"], "value": self.values[msg["key"]]}
                elif msg["t"] == "barrier":
                    reply = {"t": "barrier_ok", "name": msg["name"]}
                elif msg["t"] in ("result", "error"):
                    self.report = msg
                if reply:
                    data = json.dumps(reply).encode()
                    conn.sendall(struct.pack("<I", len(data)) + data)


def test_the_torch_probes_real_report_conforms():
    coord = OneRankCoordinator()
    env = dict(os.environ, COLDSTART_TOKEN="golden", PYTHONPATH=os.pathsep.join([os.path.join(HERE, ".."), FAKE_TORCH]))
    p = subprocess.run(
        [sys.executable, "-m", "coldstart.torch_worker", "--rank", "0", "--nranks", "1", "--size", "4096"]
        + ["--coord", f"127.0.0.1:{coord.port}", "--dry-run", "--timeout", "20"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    coord.thread.join(timeout=10)
    assert p.returncode == 0, p.stderr
    assert coord.report and coord.report["t"] == "result", coord.report
    report = coord.report["result"]
    conforms(report, golden())
    for required in ("rank", "pid", "host", "worker", "phases", "mono_anchor_ns", "real_anchor_ns", "dry_run"):
        assert required in report
    assert report["worker"] == "torch" and report["steady"]["bytes"] == 4096
