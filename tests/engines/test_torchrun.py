"""torchrun, for real: a multi-node c10d rendezvous. One torchrun agent on each host (--nnodes 2 --nproc_per_node 1),
both meeting at the c10d store on the first host (--rdzv_endpoint), each starting `coldstart worker --dry-run` with
the RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT the rendezvous settled. PyTorch's own CPU wheels are not on PyPI
(PyPI's torch brings several GB of CUDA libraries); Debian's python3-torch is a CPU build of PyTorch 1.13 for the
system's Python, which scripts/setup.sh installs: its torchrun is the one run here."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

from conftest import require
from trial import check_trial
from twohosts import BASE_PATH, TwoHosts

RDZV_PORT = 29400
RDZV_ID = "coldstart"


def test_torchrun_c10d_rendezvous_across_two_hosts(coldstart_bin: str) -> None:
    require(["torchrun"], "python3-torch")
    torchrun = shutil.which("torchrun", path=BASE_PATH)
    assert torchrun
    with TwoHosts("torch", 4) as h:
        d = h.dir
        out = d / "run"
        t0 = time.monotonic()
        # torch 1.13 under Python 3.11 cannot parse its own default of --redirects/--tee ("0": Std.NONE is no longer
        # among an IntFlag's members when iterated), so both are given: the workers' stdout in --log_dir and on the
        # console. --monitor_interval 0.2 (5 s by default) ends each agent soon after its worker.
        agents = [
            h.start(
                i,
                [
                    torchrun,
                    "--nnodes",
                    "2",
                    "--nproc_per_node",
                    "1",
                    "--rdzv_backend",
                    "c10d",
                    "--rdzv_endpoint",
                    f"{h.hosts[0]}:{RDZV_PORT}",
                    "--rdzv_id",
                    RDZV_ID,
                    "--monitor_interval",
                    "0.2",
                    "--redirects",
                    "1",
                    "--tee",
                    "1",
                    "--log_dir",
                    str(d / host),
                    "--no_python",
                    coldstart_bin,
                    "worker",
                    "--dry-run",
                    "--timeout",
                    "20",
                    "--out",
                    str(out),
                ],
                f"torchrun-{host}.log",
            )  # fmt: skip
            for i, host in enumerate(h.hosts)
        ]
        codes = [a.wait(timeout=60) for a in agents]
        took = time.monotonic() - t0
        context = f"torchrun: exit {codes}\n{h.logs(['*.log', '*/*/attempt_0/0/*.log'])}"
        assert codes == [0, 0], context
        # The rendezvous ranks its nodes in the order of their names: torch1's worker is rank 0.
        trial = check_trial(Path(out), "torchrun", h.hosts, context)
        ids = {rk["launcher"]["job_id"] for rk in trial["ranks"]}
        # Both ranks were given one run id and rank 0's host as MASTER_ADDR (job_id: run id:MASTER_ADDR:MASTER_PORT).
        assert len(ids) == 1 and ids.pop().startswith(f"{RDZV_ID}:{h.hosts[0]}:"), trial["ranks"]
        assert all(rk["launcher"]["local_world"] == "1" for rk in trial["ranks"])
        print(f"torchrun: {took:.1f} s")
