"""Open MPI with a host file, for real: `mpirun --hostfile` on the first host starts rank 0 there and rank 1 through an
orted on the second, which Open MPI launches through its rsh agent. The agent is a script that runs the command inside
that host's namespace (with its hostname) instead of over ssh. Open MPI says where no rank runs, so the ranks are told
rank 0's host with --coord, as docs/launchers.md says."""

from __future__ import annotations

import time
from pathlib import Path

from conftest import require
from trial import check_trial
from twohosts import TwoHosts

# What ssh would do for mpirun: run the command line Open MPI gives (one string for a remote shell) on the host named
# first, here inside that host's namespace with its hostname. Every call is logged.
AGENT = """#!/bin/sh
echo "agent: $*" >> {dir}/agent.log
host="$1"
shift
case "$host" in
{cases}  *) echo "agent: no host $host" >&2; exit 255 ;;
esac
exec ip netns exec "$ns" unshare --uts -- sh -c 'hostname "$0" && exec sh -c "$1"' "$host" "$*"
"""
COORD_PORT = 29601


def test_mpirun_with_a_host_file_starts_a_rank_on_each_host(coldstart_bin: str) -> None:
    require(["mpirun", "orted"], "openmpi-bin")
    with TwoHosts("mpi", 2) as h:
        d = h.dir
        cases = "".join(f"  {host}) ns={ns} ;;\n" for host, ns in zip(h.hosts, h.ns))
        agent = d / "agent.sh"
        agent.write_text(AGENT.format(dir=d, cases=cases))
        agent.chmod(0o755)
        (d / "hostfile").write_text("".join(f"{host} slots=1\n" for host in h.hosts))
        out = d / "run"
        env = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}  # CI runs as root
        t0 = time.monotonic()
        r = h.run(0, ["mpirun", "--hostfile", str(d / "hostfile"), "-np", "2", "--mca", "plm_rsh_agent", str(agent),
                      coldstart_bin, "worker", "--dry-run", "--timeout", "20", "--coord", f"{h.hosts[0]}:{COORD_PORT}",
                      "--out", str(out)], env, timeout=30)  # fmt: skip
        took = time.monotonic() - t0
        context = f"mpirun: exit {r.returncode}\n{r.stdout}\n{r.stderr}\n{h.logs()}"
        assert r.returncode == 0, context
        # Open MPI went through the agent for the second host only: the first is mpirun's own.
        calls = (d / "agent.log").read_text().splitlines()
        assert len(calls) == 1 and calls[0].startswith(f"agent: {h.hosts[1]} ") and " orted " in calls[0], calls
        trial = check_trial(Path(out), "openmpi", h.hosts, context)
        ids = {rk["launcher"]["job_id"] for rk in trial["ranks"]}
        assert len(ids) == 1 and "" not in ids, trial["ranks"]  # one job, found by both ranks
        assert all(rk["launcher"]["local_world"] == "1" for rk in trial["ranks"])  # one rank on each host
        print(f"openmpi: mpirun in {took:.1f} s")
