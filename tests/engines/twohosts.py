"""Two hosts made of network namespaces, for running real launchers across "nodes" on one machine (root only).

    cse-NAME-a  eth0 10.78.K.1/24, hostname NAME1 (a UTS namespace of its own for each command run there)
    cse-NAME-b  eth0 10.78.K.2/24, hostname NAME2
joined by one veth pair, each with a default route over it; each namespace's /etc/hosts (/etc/netns/<ns>/hosts,
which `ip netns exec` mounts over /etc/hosts) names both hosts, as a cluster's DNS would. No link reaches the root
namespace: nothing leaves the pair. `private(path)` gives each host a folder of its own at one path.

Everything started here runs inside a namespace; teardown kills every process still in either namespace by pid
(daemons that detached themselves too: slurmd, Ray's raylet), deletes the namespaces and the files written. A run that
was killed leaves namespaces of the same names behind, and its folder: the next setup removes them first. One pair of
a name at a time on a machine (a lock file), so that two test runs side by side wait instead of tearing down each
other's hosts.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "net"))
from netlab import BASE_PATH, PASS_THROUGH, _alive, _die_with_parent, skip_without_namespaces  # noqa: E402, F401

SUBNET = "10.78"


class LabError(RuntimeError):
    """A command that builds the hosts failed; the message names it and what it printed."""


def cmd(argv: Sequence[str], check: bool = True, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    r = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout)
    if check and r.returncode != 0:
        raise LabError(f"{' '.join(argv)}: exit {r.returncode}: {(r.stderr or r.stdout).strip()}")
    return r


class TwoHosts:
    """`with TwoHosts("slurm", 1) as h:` two hosts named slurm1 and slurm2 at 10.78.1.1 and 10.78.1.2."""

    def __init__(self, name: str, subnet: int) -> None:
        self.name = name
        self.ns = [f"cse-{name}-a", f"cse-{name}-b"]
        self.hosts = [f"{name}1", f"{name}2"]
        self.addrs = [f"{SUBNET}.{subnet}.1", f"{SUBNET}.{subnet}.2"]
        self.dir = Path()
        self._procs: list[subprocess.Popen[str]] = []
        self._private: list[Path] = []
        self._made_etc_netns = False
        self._lock: int | None = None

    def __enter__(self) -> TwoHosts:
        try:
            self.setup()
        except BaseException:
            self.teardown()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.teardown()

    def setup(self) -> None:
        path = Path(tempfile.gettempdir()) / f"coldstart-twohosts-{self.name}.lock"
        self._lock = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        fcntl.flock(self._lock, fcntl.LOCK_EX)
        self._remove_namespaces()  # a killed run's, and its folder
        for left in Path(tempfile.gettempdir()).glob(f"cse-{self.name}-*"):
            shutil.rmtree(left, ignore_errors=True)
        self.dir = Path(tempfile.mkdtemp(prefix=f"cse-{self.name}-"))
        for ns in self.ns:
            cmd(["ip", "netns", "add", ns])
            cmd(["ip", "-n", ns, "link", "set", "lo", "up"])
        a, b = self.ns
        cmd(["ip", "-n", a, "link", "add", "eth0", "type", "veth", "peer", "name", "eth0", "netns", b])
        hosts = "127.0.0.1\tlocalhost\n" + "".join(f"{ad}\t{h}\n" for ad, h in zip(self.addrs, self.hosts))
        for ns, addr in zip(self.ns, self.addrs):
            cmd(["ip", "-n", ns, "addr", "add", f"{addr}/24", "dev", "eth0"])
            cmd(["ip", "-n", ns, "link", "set", "eth0", "up"])
            # A default route over the link, as a host has: tools that find their own address by routing toward a
            # public one (Ray's) find this host's; the link still reaches only the other host.
            cmd(["ip", "-n", ns, "route", "add", "default", "dev", "eth0"])
            if not Path("/etc/netns").exists():
                Path("/etc/netns").mkdir()
                self._made_etc_netns = True
            etc = Path("/etc/netns") / ns
            etc.mkdir(exist_ok=True)
            (etc / "hosts").write_text(hosts)
            (etc / "resolv.conf").write_text("nameserver 127.0.0.1\n")  # no lookup leaves the pair

    def teardown(self) -> None:
        """Idempotent, and safe after a partial setup."""
        for p in self._procs:
            if p.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(p.pid, signal.SIGKILL)
        self._remove_namespaces()
        for p in self._procs:
            with contextlib.suppress(subprocess.TimeoutExpired):
                p.wait(timeout=5)
        self._procs.clear()
        self._private.clear()
        if self.dir != Path() and self.dir.exists():
            shutil.rmtree(self.dir, ignore_errors=True)
        if self._lock is not None:
            os.close(self._lock)
            self._lock = None

    def _remove_namespaces(self) -> None:
        listed = {line.split()[0] for line in cmd(["ip", "netns", "list"], check=False).stdout.splitlines() if line}
        for ns in self.ns:
            if ns in listed:
                pids = cmd(["ip", "netns", "pids", ns], check=False).stdout.split()
                for pid in pids:
                    with contextlib.suppress(ProcessLookupError, ValueError):
                        os.kill(int(pid), signal.SIGKILL)
                deadline = time.monotonic() + 5
                while pids and time.monotonic() < deadline:
                    pids = [p for p in pids if _alive(p)]
                    time.sleep(0.01)
                cmd(["ip", "netns", "delete", ns], check=False)
            shutil.rmtree(Path("/etc/netns") / ns, ignore_errors=True)
        if self._made_etc_netns:
            with contextlib.suppress(OSError):
                os.rmdir("/etc/netns")  # only when empty: another lab's folder stays
            self._made_etc_netns = False

    # -- running commands on a host

    def env(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        """A controlled environment: this interpreter's folder first on PATH (Ray, pytest), HOME, LANG, sanitizer
        options if set, then `extra`. No launcher variable of the caller's leaks in."""
        path = os.path.dirname(sys.executable) + ":" + BASE_PATH
        env = {"PATH": path, "HOME": os.environ.get("HOME", "/root"), "LANG": "C.UTF-8"}
        env.update({k: os.environ[k] for k in PASS_THROUGH if k in os.environ})
        env.update(extra or {})
        return env

    def private(self, path: Path) -> None:
        """Makes `path` a folder of each host's own from now on: host i's commands see DIR/host-i there (bound over
        it in the mount namespace `ip netns exec` makes for each command), as hosts that share no /tmp would."""
        path.mkdir(parents=True, exist_ok=True)
        for host in self.hosts:
            (self.dir / f"{path.name}-{host}").mkdir()
        self._private.append(path)

    def argv_on(self, i: int, argv: Sequence[str]) -> list[str]:
        """The command line that runs `argv` on host i: in its namespace, with its hostname and its private folders."""
        script = 'hostname "$0"'
        for path in self._private:
            script += f" && mount --bind {self.dir / f'{path.name}-{self.hosts[i]}'} {path}"
        return ["ip", "netns", "exec", self.ns[i], "unshare", "--uts", "--", "sh", "-c", script + ' && exec "$@"',
                self.hosts[i], *argv]  # fmt: skip

    def start(
        self, i: int, argv: Sequence[str], log: str, env: Mapping[str, str] | None = None
    ) -> subprocess.Popen[str]:
        """Starts `argv` on host i in a process group of its own, its output in DIR/log; teardown kills it."""
        with open(self.dir / log, "a") as out:
            p = subprocess.Popen(
                self.argv_on(i, argv),
                env=self.env(env),
                preexec_fn=_die_with_parent,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                text=True,
                start_new_session=True,
            )
        self._procs.append(p)
        return p

    def run(
        self, i: int, argv: Sequence[str], env: Mapping[str, str] | None = None, timeout: float = 60
    ) -> subprocess.CompletedProcess[str]:
        """Runs `argv` on host i; its output captured as text. A timeout kills it (its process group) and returns
        exit status 124 with what it printed so far."""
        p = subprocess.Popen(
            self.argv_on(i, argv),
            env=self.env(env),
            preexec_fn=_die_with_parent,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        try:
            out, err = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGKILL)
            out, err = p.communicate()
            return subprocess.CompletedProcess(p.args, 124, out, err + f"\n(killed after {timeout:.0f} s)")
        return subprocess.CompletedProcess(p.args, p.returncode, out, err)

    def wait(self, ready: Callable[[], bool], timeout: float, what: str) -> None:
        """Polls `ready` until it holds; after `timeout` seconds, LabError naming `what`, with the logs."""
        deadline = time.monotonic() + timeout
        while not ready():
            if time.monotonic() > deadline:
                raise LabError(f"no {what} after {timeout:.0f} s\n{self.logs()}")
            time.sleep(0.1)

    def logs(self, patterns: Sequence[str] = ("*.log", "*/*.log")) -> str:
        """The tail of each log in the hosts' folder that matches a pattern: what a failed check prints."""
        parts = []
        for f in sorted({f for pattern in patterns for f in self.dir.glob(pattern)}):
            with contextlib.suppress(OSError):
                parts.append(f"--- {f.relative_to(self.dir)}\n{f.read_text(errors='replace')[-3000:]}")
        return "\n".join(parts)
