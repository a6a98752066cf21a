"""A Ray cluster of a head and a worker node, for real: `ray start --head` on the first host, `ray start --address` on
the second, each node declaring one GPU (Ray hands out GPU ids on a CPU machine as on a GPU node). Then
`coldstart bench --launcher ray --ray-address HEAD` on the first host runs the ranks as coldstart's Ray bridge does
(python/coldstart/ray_rank.py): each rank an actor with num_gpus=1, so that Ray places one on each node, running
`coldstart worker --dry-run` on its node and reaching bench's coordinator on the first host."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest
from trial import check_trial
from twohosts import TwoHosts

pytest.importorskip("ray", reason="Ray is installed by scripts/setup.sh (python/requirements-test.txt)")

GCS_PORT = 6379


def test_bench_runs_a_ray_actor_on_each_node(coldstart_bin: str) -> None:
    with TwoHosts("ray", 3) as h:
        d = h.dir
        env = {"RAY_USAGE_STATS_ENABLED": "0", "COLDSTART_PYTHON": sys.executable}
        # Small nodes: one CPU and one declared GPU each, a small object store. Ray's temporary folder (the head's,
        # which a worker node takes too) is each host's own: a node writes its address there (node_ip_address.json),
        # and a driver that read the other host's took that address for its own, so that the other node's actor
        # could not reach its owner and died ("all references to the actor were removed").
        h.private(d / "ray")
        node = ["--num-cpus", "1", "--num-gpus", "1", "--object-store-memory", "80000000", "--disable-usage-stats",
                "--temp-dir", str(d / "ray")]  # fmt: skip
        head = f"{h.addrs[0]}:{GCS_PORT}"
        t0 = time.monotonic()
        r = h.run(0, ["ray", "start", "--head", "--node-ip-address", h.addrs[0], "--port", str(GCS_PORT),
                      "--include-dashboard", "false", *node], env, timeout=60)  # fmt: skip
        assert r.returncode == 0, f"ray start --head: exit {r.returncode}\n{r.stdout}\n{r.stderr}"
        r = h.run(1, ["ray", "start", "--address", head, "--node-ip-address", h.addrs[1], *node], env, timeout=60)
        assert r.returncode == 0, f"ray start --address: exit {r.returncode}\n{r.stdout}\n{r.stderr}"
        up = time.monotonic() - t0
        out = d / "run"
        r = h.run(0, [coldstart_bin, "bench", "--launcher", "ray", "--ray-address", head, "--bind", "0.0.0.0",
                      "--dry-run", "--gpus", "2", "--modes", "ray", "--env", "NCCL_CUMEM_ENABLE=0", "--trials", "1",
                      "--timeout", "30s", "--out", str(out)], env, timeout=60)  # fmt: skip
        took = time.monotonic() - up - t0
        logs = h.logs(["run/trials/*/rank-*.log", "ray-*/session_latest/logs/raylet.out"])
        context = f"bench: exit {r.returncode}\n{r.stdout}\n{r.stderr}\n{logs}"
        assert r.returncode == 0, context
        # Ray placed the ranks: one on each node, in either order.
        trial = check_trial(Path(out), "ray", h.hosts, context, by_rank=False)
        assert json.loads((out / "results.json").read_text())["context"]["launcher"] == f"ray at {head}"
        for rk in trial["ranks"]:
            ray_gave = rk["launcher"]
            assert ray_gave["actor_host"] == rk["host"], ray_gave  # the actor ran the worker on its own node
            assert ray_gave["gpu_ids"] == "0" and ray_gave["cuda_visible_devices_set_by_ray"] == "0", ray_gave
        assert len({rk["launcher"]["node_id"] for rk in trial["ranks"]}) == 2, trial["ranks"]
        print(f"ray: cluster up in {up:.1f} s, bench in {took:.1f} s")
