"""Slurm, for real: Debian's slurmctld on the first host, one slurmd on each (NodeName, NodeAddr), munge for their
credentials, and `srun -N2 -n2 coldstart worker --dry-run` from the first host. Rank 0 finds the coordinator's host
as the first node of SLURM_STEP_NODELIST (here "slurm[1-2]", Slurm's own compressed list)."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import require
from trial import check_trial
from twohosts import TwoHosts

# Slurm without cgroups: processes tracked through /proc, no task binding, nothing accounted. slurmd (22.05) loads its
# cgroup plugin whatever the configuration says, and `ip netns exec` mounts a fresh /sys without the host's cgroup
# trees; each slurmd gets, in its own mount namespace, a cgroup-v1 layout of one empty named hierarchy of the test's
# own (never the host's): enough for the plugin to start, and nothing it could put a process in.
SLURM_CONF = """\
ClusterName=coldstart
SlurmctldHost={host0}({addr0})
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={dir}/munge.socket
StateSaveLocation={dir}/ctld
SlurmctldPidFile={dir}/ctld/slurmctld.pid
SlurmctldLogFile={dir}/ctld/slurmctld.log
SlurmdSpoolDir={dir}/%n/spool
SlurmdPidFile={dir}/%n/slurmd.pid
SlurmdLogFile={dir}/%n/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/builtin
SelectType=select/linear
MpiDefault=none
MailProg=/bin/true
ReturnToService=2
SlurmdParameters=config_overrides
NodeName={host0} NodeAddr={addr0} CPUs=1 State=UNKNOWN
NodeName={host1} NodeAddr={addr1} CPUs=1 State=UNKNOWN
PartitionName=lab Nodes=ALL Default=YES MaxTime=INFINITE State=UP
"""
CGROUP_STUB = (
    "mount -t tmpfs cgroup /sys/fs/cgroup && mkdir /sys/fs/cgroup/systemd && "
    'mount -t cgroup -o none,name=coldstart-slurm cgroup /sys/fs/cgroup/systemd && exec slurmd -D -N "$0"'
)


@dataclass
class Cluster:
    hosts: TwoHosts
    env: dict[str, str]
    up_s: float


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    require(["slurmctld", "slurmd", "srun", "sinfo", "munged"], "slurmctld, slurmd, slurm-client and munge")
    with TwoHosts("slurm", 1) as h:
        t0 = time.monotonic()
        d = h.dir
        d.chmod(0o755)  # munged refuses a key or socket in a folder others may write
        (d / "munge.key").write_bytes(os.urandom(1024))
        (d / "munge.key").chmod(0o600)
        (d / "ctld").mkdir()
        for host in h.hosts:
            (d / host / "spool").mkdir(parents=True)
        conf = SLURM_CONF.format(dir=d, host0=h.hosts[0], addr0=h.addrs[0], host1=h.hosts[1], addr1=h.addrs[1])
        (d / "slurm.conf").write_text(conf)
        env = {"SLURM_CONF": str(d / "slurm.conf")}
        # One munged serves both hosts: its socket is a file, and the hosts share the file system.
        h.start(0, ["munged", "--foreground", "--force", f"--key-file={d}/munge.key", f"--socket={d}/munge.socket",
                    f"--pid-file={d}/munged.pid", f"--seed-file={d}/munged.seed", f"--log-file={d}/munged.log"],
                "munged.out.log")  # fmt: skip
        h.wait(lambda: (d / "munge.socket").exists(), 10, "munged's socket")
        h.start(0, ["slurmctld", "-D", "-i"], "slurmctld.out.log", env)
        for i, host in enumerate(h.hosts):
            h.start(i, ["sh", "-c", CGROUP_STUB, host], f"slurmd-{host}.out.log", env)

        def both_idle() -> bool:
            r = h.run(0, ["sinfo", "--noheader", "--format=%n %T"], env, timeout=10)
            return sorted(r.stdout.split()) == sorted([*h.hosts, "idle", "idle"])

        h.wait(both_idle, 30, "both nodes idle in sinfo")
        yield Cluster(h, env, time.monotonic() - t0)


def test_srun_starts_a_rank_on_each_node(cluster: Cluster, coldstart_bin: str) -> None:
    h = cluster.hosts
    out = h.dir / "run"
    t0 = time.monotonic()
    r = h.run(0, ["srun", "-N2", "-n2", "--time=2", coldstart_bin, "worker", "--dry-run", "--timeout", "20",
                  "--out", str(out)], cluster.env, timeout=30)  # fmt: skip
    took = time.monotonic() - t0
    context = f"srun: exit {r.returncode}\n{r.stdout}\n{r.stderr}\n{h.logs()}"
    assert r.returncode == 0, context
    trial = check_trial(Path(out), "slurm", h.hosts, context)
    ids = {rk["launcher"]["job_id"] for rk in trial["ranks"]}
    assert len(ids) == 1 and ids.pop().endswith(".0"), trial["ranks"]  # one job's step 0 on both nodes
    assert all(rk["launcher"]["local_rank"] == "0" for rk in trial["ranks"])
    # What the ranks read rank 0's host from: Slurm's compressed list, whose first host coldstart takes.
    r = h.run(0, ["srun", "-N2", "-n2", "--time=1", "printenv", "SLURM_STEP_NODELIST"], cluster.env, timeout=30)
    assert r.stdout.split() == [f"{h.name}[1-2]"] * 2, f"{r.stdout}\n{r.stderr}"
    print(f"slurm: cluster up in {cluster.up_s:.1f} s, srun in {took:.1f} s")
