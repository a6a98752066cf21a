"""A real network to test `coldstart doctor net` on, made of Linux network namespaces (root only).

The topology is the field report's second part (docs: BACKGROUND.md): WSL2 in NAT mode behind Windows, with a proxy
on Windows' loopback. Every name carries one prefix ("csn-" by default) and every address lives in a namespace made
here; none is joined to the root namespace, so no packet can leave the lab.

    csn-wsl      "WSL": eth0 172.29.64.2/20, default via 172.29.64.1, no IPv6 route; hosts: inet.test, 127.0.1.1
                 wslhost, dual.test (2001:db8::5 first, then inet.test's address), fake.test at a proxy tool's fake
                 IP 198.18.0.7 (no TUN device routes it);
                 resolv.conf: nameserver 172.29.64.1 (port 53 dropped there: a resolver that does not answer)
    csn-win      "Windows": wsl0 172.29.64.1/20, inet0 203.0.113.1/24, forwarding on, masquerade toward inet0;
                 tinyproxy on 127.0.0.1:7890 (the trap: not WSL's loopback), on 172.29.64.1:7891 ("allow LAN") and
                 on 172.29.64.1:7892 (allowing 127.0.0.1 only); on 172.29.64.1:7893 a listener that closes every
                 connection at once (mihomo's answer to a LAN client when allow-lan is off)
    csn-inet     "the Internet": eth0 203.0.113.10/24; HTTPS for inet.test on :443 (a test CA's certificate; /big
                 answers 48 KiB),
                 a plain TCP listener on :29500 (MASTER_PORT's TCPStore), nothing on :29999
    csn-sandbox  only lo (up): a sandboxed child's network
    csn-lan      a bridge (br0) for peer namespaces csn-p0..csn-pN-1 at 10.77.0.1..N/24 (add_peer_namespaces)

Use it as a context manager; it tears everything down on exit or on a failure in setup (processes it started, and
any process still in its namespaces, killed by pid; namespaces deleted; /etc/netns/<ns>/ folders it wrote removed),
and removes what a killed earlier run with the same prefix left behind before it starts. What it starts dies with the
process that started it (PR_SET_PDEATHSIG), so a killed test run leaves no server running.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import json
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

# WSL's side: the same subnet and gateway as the recorded WSL fixture (tests/data/net/wsl-nat/proc/net/route), so that
# a run with --root there sees one Windows host, whether it reads the fixture's route or the live one.
WSL_ADDR = "172.29.64.2"
GATEWAY = "172.29.64.1"  # the Windows host as WSL sees it
WSL_PREFIX_LEN = 20
WSL_SUBNET = "172.29.64.0/20"
WIN_INET_ADDR = "203.0.113.1"  # Windows' address toward the Internet (what the server sees after masquerade)
INET_ADDR = "203.0.113.10"
INET_NAME = "inet.test"
HTTPS_PORT = 443
STORE_PORT = 29500  # something listens (a TCPStore's stand-in)
CLOSED_PORT = 29999  # nothing listens
TRAP_PROXY_PORT = 7890  # on Windows' 127.0.0.1
LAN_PROXY_PORT = 7891  # on the gateway (tinyproxy "allow LAN")
STRICT_PROXY_PORT = 7892  # on the gateway: tinyproxy whose allow-list admits only its own loopback, not WSL
HANGUP_PROXY_PORT = 7893  # on the gateway: accepts and closes at once, as mihomo does for a client allow-lan refuses
RESOLVER = GATEWAY  # WSL's generated resolv.conf names the Windows host; port 53 is dropped there
WSL_HOSTNAME = "wslhost"
LOOPBACK_HOST_ADDR = "127.0.1.1"  # Debian's line for the hostname in /etc/hosts
DUAL_NAME = "dual.test"  # in WSL's hosts file: an IPv6 address (no route there) before inet.test's IPv4 one
DUAL_IPV6 = "2001:db8::5"
FAKE_NAME = "fake.test"  # in WSL's /etc/hosts at a proxy tool's fake IP, as its DNS in TUN mode would answer
FAKE_IP = "198.18.0.7"
PEER_NET = "10.77.0"
PEER_PREFIX_LEN = 24

WSL_IF = "eth0"  # in csn-wsl, toward Windows
WIN_WSL_IF = "wsl0"  # in csn-win, toward WSL (the gateway's side)
WIN_INET_IF = "inet0"  # in csn-win, toward the Internet
INET_IF = "eth0"  # in csn-inet
BRIDGE = "br0"  # in csn-lan

BASE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# Passed through to commands run in the lab when set (a sanitizer build of the binary reads them).
PASS_THROUGH = ("ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS")
TOOLS = ("ip", "nft", "tinyproxy", "openssl", "unshare", "hostname", "sysctl", "curl")

# The Internet's server: HTTPS on :443 for inet.test (GET /ip answers the client's address as the server sees it),
# and a plain TCP listener on :29500 that holds each connection until the client closes. Prints "ready" once both
# listen. Handshakes happen on the connection's own thread, so a client that connects and says nothing blocks nobody.
_INET_SERVER = r"""
import socket, ssl, sys, threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
cert, key, addr, https_port, store_port = sys.argv[1:6]
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(cert, key)

class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def _answer(self, send_body):
        body = (self.client_address[0] + "\n").encode() if self.path == "/ip" else b"inet.test ok\n"
        if self.path == "/big":  # an answer of full-size packets (a path MTU black hole loses them)
            body = b"x" * 49152
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if send_body:
            self.wfile.write(body)
    def do_GET(self):
        self._answer(True)
    def do_HEAD(self):
        self._answer(False)
    def log_message(self, *args):
        pass

class Server(ThreadingHTTPServer):
    daemon_threads = True
    def finish_request(self, request, client_address):
        request.settimeout(10)
        self.RequestHandlerClass(ctx.wrap_socket(request, server_side=True), client_address, self)
    def handle_error(self, request, client_address):
        pass

def hold(conn):
    with conn:
        conn.settimeout(30)
        try:
            while conn.recv(4096):
                pass
        except OSError:
            pass

def store():
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((addr, int(store_port)))
    s.listen(128)
    ready.set()
    while True:
        conn, _ = s.accept()
        threading.Thread(target=hold, args=(conn,), daemon=True).start()

ready = threading.Event()
httpd = Server((addr, int(https_port)), Handler)
threading.Thread(target=store, daemon=True).start()
ready.wait()
print("ready", flush=True)
httpd.serve_forever()
"""

# A proxy port that takes every connection and closes it at once, before reading a byte: what mihomo's listeners do for
# a client that allow-lan (or lan-allowed-ips) does not admit (listener/mixed: IsRemoteAddrDisAllowed, then Close).
_HANG_UP = r"""
import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], int(sys.argv[2])))
s.listen(64)
while True:
    conn, _ = s.accept()
    conn.close()
"""

# Waits until every HOST:PORT given accepts a TCP connection (run inside a namespace), else exits 1 naming them.
_WAIT_LISTENING = r"""
import socket, sys, time
deadline = time.monotonic() + float(sys.argv[1])
left = [(h, int(p)) for h, p in (a.rsplit(":", 1) for a in sys.argv[2:])]
while left and time.monotonic() < deadline:
    for hp in list(left):
        try:
            socket.create_connection(hp, timeout=0.5).close()
            left.remove(hp)
        except OSError:
            pass
    if left:
        time.sleep(0.02)
if left:
    sys.exit("not listening: " + " ".join(f"{h}:{p}" for h, p in left))
"""


# One TCP connect from inside a namespace, as JSON: {"ok", "errno", "error" (its name), "seconds"}; a timeout is
# reported as ETIMEDOUT.
_CONNECT = r"""
import errno, json, socket, sys, time
host, port, timeout = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
s.settimeout(timeout)
t = time.monotonic()
try:
    s.connect((host, port))
    err = 0
except socket.timeout:
    err = errno.ETIMEDOUT
except OSError as e:
    err = e.errno or 0
took = time.monotonic() - t
print(json.dumps({"ok": err == 0, "errno": err, "error": errno.errorcode.get(err, ""), "seconds": took}))
"""

# One name resolved by getaddrinfo from inside a namespace, abandoned after the timeout, as JSON:
# {"addresses", "error", "timed_out", "seconds"}.
_RESOLVE = r"""
import json, os, socket, sys, threading, time
name, timeout = sys.argv[1], float(sys.argv[2])
out = {"addresses": [], "error": "", "timed_out": True}
def work():
    try:
        infos = socket.getaddrinfo(name, None, socket.AF_INET, socket.SOCK_STREAM)
        out["addresses"] = sorted({i[4][0] for i in infos})
    except OSError as e:
        out["error"] = str(e)
    out["timed_out"] = False
t = time.monotonic()
th = threading.Thread(target=work, daemon=True)
th.start()
th.join(timeout)
out["seconds"] = time.monotonic() - t
print(json.dumps(out), flush=True)
os._exit(0)
"""


class LabError(RuntimeError):
    """A lab command failed; the message names the command and what it printed."""


def _cmd(argv: Sequence[str], stdin: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
    r = subprocess.run(list(argv), input=stdin, capture_output=True, text=True, timeout=30)
    if check and r.returncode != 0:
        raise LabError(f"{' '.join(argv)}: exit {r.returncode}: {(r.stderr or r.stdout).strip()}")
    return r


def _alive(pid: str) -> bool:
    """The process exists and is not a zombie (a zombie holds no namespace any more)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2 :].split()[0] != "Z"


def _die_with_parent() -> None:
    """In the child before exec: SIGKILL when the process that started it dies (a killed test run leaves no server
    behind; the namespaces themselves go at the next setup)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG


def why_no_namespaces() -> str | None:
    """None where network namespaces can be made here, else one line saying why not (not root, `ip netns` refused)."""
    if os.geteuid() != 0:
        return "the network lab needs root (ip netns, veth, nftables)"
    if shutil.which("ip", path=BASE_PATH) is None:
        return "the network lab needs iproute2's ip (scripts/setup.sh installs it)"
    probe = f"csn-probe-{os.getpid()}"
    r = _cmd(["ip", "netns", "add", probe], check=False)
    if r.returncode != 0:
        return f"ip netns add is refused here: {r.stderr.strip()}"
    _cmd(["ip", "netns", "delete", probe], check=False)
    return None


def skip_without_namespaces() -> None:
    """Skips the calling test module, in one line saying why, where namespaces cannot be made here; under CI
    (CI=true) that fails instead: CI runs as root and must run the lab."""
    why = why_no_namespaces()
    if why is None:
        return
    import pytest  # only the tests call this; the lab itself needs nothing beyond the standard library

    if os.environ.get("CI") == "true":
        pytest.fail(f"CI must run the network lab, but {why}", pytrace=False)
    pytest.skip(why, allow_module_level=True)


def missing_tools() -> str | None:
    """None when every command the lab runs is installed, else one line naming the missing ones."""
    missing = [t for t in TOOLS if shutil.which(t, path=BASE_PATH) is None]
    return f"the network lab needs {', '.join(missing)} (scripts/setup.sh installs them)" if missing else None


class NetLab:
    """The lab: `with NetLab() as lab:` builds it, leaving the block tears it down."""

    def __init__(self, prefix: str = "csn-", workdir: str | None = None) -> None:
        if not re.fullmatch(r"[a-z][a-z0-9-]{0,15}", prefix):
            raise ValueError(f"prefix {prefix!r}: lowercase letters, digits and '-', at most 16")
        self.prefix = prefix
        self.wsl = prefix + "wsl"
        self.win = prefix + "win"
        self.inet = prefix + "inet"
        self.sandbox = prefix + "sandbox"
        self.lan = prefix + "lan"
        self.peers: list[str] = []
        self._own_name = re.compile(re.escape(prefix) + r"(wsl|win|inet|sandbox|lan|p[0-9]+)")
        self._workdir_arg = workdir
        self.dir = Path()
        self.ca_file = Path()  # the test CA's certificate: what `--cacert` gets
        self._procs: list[subprocess.Popen[str]] = []
        self._made_etc_netns = False
        self._dropped: set[tuple[int, int]] = set()
        self._hostnames: dict[str, str] = {}
        self._lock: int | None = None

    # -- building and tearing down

    def _take_lock(self, wait_s: float = 300) -> None:
        """One lab of a prefix on a machine at a time: a second one (a test run beside the docs' examples, two CI
        runs) waits for the first instead of tearing its namespaces down as leftovers."""
        path = Path(tempfile.gettempdir()) / f"coldstart-netlab-{self.prefix}lock"
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        deadline = time.monotonic() + wait_s
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    os.close(fd)
                    raise LabError(f"another network lab ({path}) has held the lock for {wait_s:.0f} s") from None
                time.sleep(0.2)
        self._lock = fd

    def __enter__(self) -> NetLab:
        try:
            self.setup()
        except BaseException:
            self.teardown()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.teardown()

    def setup(self) -> None:
        why = why_no_namespaces() or missing_tools()
        if why:
            raise LabError(why)
        self._take_lock()
        self._remove_leftovers()
        self.dir = Path(tempfile.mkdtemp(prefix=self.prefix + "lab-", dir=self._workdir_arg))
        self._make_certificates()
        for ns in (self.wsl, self.win, self.inet, self.sandbox):
            self._add_namespace(ns)
        self._hostnames = {self.wsl: WSL_HOSTNAME, self.sandbox: WSL_HOSTNAME}
        self._link(self.wsl, WSL_IF, self.win, WIN_WSL_IF)
        self._link(self.win, WIN_INET_IF, self.inet, INET_IF)
        self._ip(self.wsl, "addr", "add", f"{WSL_ADDR}/{WSL_PREFIX_LEN}", "dev", WSL_IF)
        self._ip(self.wsl, "route", "add", "default", "via", GATEWAY)
        self._ip(self.win, "addr", "add", f"{GATEWAY}/{WSL_PREFIX_LEN}", "dev", WIN_WSL_IF)
        self._ip(self.win, "addr", "add", f"{WIN_INET_ADDR}/24", "dev", WIN_INET_IF)
        self._ip(self.inet, "addr", "add", f"{INET_ADDR}/24", "dev", INET_IF)
        self.set_forwarding(True)
        self._nft(
            self.win,
            f"""table ip csn_nat {{
                  chain postrouting {{ type nat hook postrouting priority srcnat; oifname "{WIN_INET_IF}" masquerade; }}
                }}
                table inet csn_dns {{
                  chain input {{ type filter hook input priority filter; udp dport 53 drop; tcp dport 53 drop; }}
                }}""",
        )
        wsl_hosts = (
            f"127.0.0.1\tlocalhost\n{LOOPBACK_HOST_ADDR}\t{WSL_HOSTNAME}\n{INET_ADDR}\t{INET_NAME}\n"
            f"{DUAL_IPV6}\t{DUAL_NAME}\n{INET_ADDR}\t{DUAL_NAME}\n"
            f"{FAKE_IP}\t{FAKE_NAME}\n"
        )
        wsl_resolv = f"nameserver {RESOLVER}\n"
        self._etc_netns(self.wsl, wsl_hosts, wsl_resolv)
        self._etc_netns(self.sandbox, wsl_hosts, wsl_resolv)  # a sandboxed child reads its parent's files
        # Windows and the Internet: names from their own hosts file; a resolver on their own loopback, where nothing
        # answers (refused at once): no name lookup leaves the lab.
        self._etc_netns(self.win, f"127.0.0.1\tlocalhost\n{INET_ADDR}\t{INET_NAME}\n", "nameserver 127.0.0.1\n")
        self._etc_netns(self.inet, "127.0.0.1\tlocalhost\n", "nameserver 127.0.0.1\n")
        self._start_inet_server()
        self._start_proxies()

    def teardown(self) -> None:
        """Idempotent: kills what runs, deletes the namespaces and the files written; safe after a partial setup."""
        for p in self._procs:
            if p.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(p.pid, signal.SIGKILL)
        for p in self._procs:
            with contextlib.suppress(subprocess.TimeoutExpired):
                p.wait(timeout=5)
        self._procs.clear()
        for ns in self._own_namespaces():
            self._delete_namespace(ns)
        self.peers = []
        self._dropped.clear()
        for d in self._own_etc_netns():
            shutil.rmtree(d, ignore_errors=True)
        if self._made_etc_netns:
            with contextlib.suppress(OSError):
                os.rmdir("/etc/netns")  # only when empty: someone else's folder stays
            self._made_etc_netns = False
        if self.dir != Path() and self.dir.exists():
            shutil.rmtree(self.dir, ignore_errors=True)
        if self._lock is not None:
            os.close(self._lock)  # the lock goes with it
            self._lock = None

    def _remove_leftovers(self) -> None:
        for ns in self._own_namespaces():
            self._delete_namespace(ns)
        leftovers = self._own_etc_netns()
        for d in leftovers:
            shutil.rmtree(d, ignore_errors=True)
        # /etc/netns that held only a killed run's folders was that run's: this run removes it when done.
        if leftovers and not any(Path("/etc/netns").iterdir()):
            self._made_etc_netns = True

    def _own_namespaces(self) -> list[str]:
        out = _cmd(["ip", "netns", "list"], check=False).stdout
        names = [line.split()[0] for line in out.splitlines() if line.strip()]
        return [n for n in names if self._own_name.fullmatch(n)]

    def _own_etc_netns(self) -> list[Path]:
        root = Path("/etc/netns")
        if not root.is_dir():
            return []
        return [d for d in root.iterdir() if self._own_name.fullmatch(d.name)]

    def _delete_namespace(self, ns: str) -> None:
        pids = _cmd(["ip", "netns", "pids", ns], check=False).stdout.split()
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, ValueError):
                os.kill(int(pid), signal.SIGKILL)
        for p in self._procs:
            p.poll()  # reaps those of ours that died
        deadline = time.monotonic() + 5
        while pids and time.monotonic() < deadline:
            pids = [p for p in pids if _alive(p)]
            time.sleep(0.01)
        _cmd(["ip", "netns", "delete", ns], check=False)

    def _add_namespace(self, ns: str) -> None:
        _cmd(["ip", "netns", "add", ns])
        self._ip(ns, "link", "set", "lo", "up")

    def _link(self, ns_a: str, if_a: str, ns_b: str, if_b: str) -> None:
        # Made inside ns_a with its peer moved straight into ns_b: no name ever appears in the root namespace.
        self._ip(ns_a, "link", "add", if_a, "type", "veth", "peer", "name", if_b, "netns", ns_b)
        self._ip(ns_a, "link", "set", if_a, "up")
        self._ip(ns_b, "link", "set", if_b, "up")

    def _ip(self, ns: str, *args: str) -> subprocess.CompletedProcess[str]:
        return _cmd(["ip", "-n", ns, *args])

    def _nft(self, ns: str, script: str) -> None:
        _cmd(["ip", "netns", "exec", ns, "nft", "-f", "-"], stdin=script)

    def _etc_netns(self, ns: str, hosts: str, resolv: str) -> None:
        root = Path("/etc/netns")
        if not root.exists():
            root.mkdir()
            self._made_etc_netns = True
        d = root / ns
        d.mkdir(exist_ok=True)
        (d / "hosts").write_text(hosts)
        (d / "resolv.conf").write_text(resolv)

    def _make_certificates(self) -> None:
        d = self.dir
        ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
        _cmd(["openssl", "req", "-x509", *ec, "-keyout", str(d / "ca.key"), "-out", str(d / "ca.pem"), "-days", "2",
              "-subj", "/CN=coldstart netlab test CA", "-addext", "basicConstraints=critical,CA:TRUE",
              "-addext", "keyUsage=critical,keyCertSign,cRLSign"])  # fmt: skip
        _cmd(["openssl", "req", "-new", *ec, "-keyout", str(d / "server.key"), "-out", str(d / "server.csr"),
              "-subj", f"/CN={INET_NAME}"])  # fmt: skip
        (d / "server.ext").write_text(
            f"subjectAltName=DNS:{INET_NAME},IP:{INET_ADDR}\nbasicConstraints=CA:FALSE\n"
            "keyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n"
        )
        _cmd(["openssl", "x509", "-req", "-in", str(d / "server.csr"), "-CA", str(d / "ca.pem"),
              "-CAkey", str(d / "ca.key"), "-CAcreateserial", "-days", "2", "-extfile", str(d / "server.ext"),
              "-out", str(d / "server.pem")])  # fmt: skip
        self.ca_file = d / "ca.pem"

    def _start_inet_server(self) -> None:
        args = [str(self.dir / "server.pem"), str(self.dir / "server.key"), INET_ADDR, str(HTTPS_PORT), str(STORE_PORT)]
        with open(self.dir / "inet-server.log", "w") as log:  # the child keeps its own copy
            p = self.popen(self.inet, [sys.executable, "-c", _INET_SERVER, *args], stdout=subprocess.PIPE, stderr=log)
        assert p.stdout is not None
        ready, _, _ = select.select([p.stdout], [], [], 15)
        line = p.stdout.readline() if ready else ""  # EOF when it could not bind
        if line.strip() != "ready":
            raise LabError(f"the Internet's server did not start: {(self.dir / 'inet-server.log').read_text()[-2000:]}")

    def _start_proxies(self) -> None:
        proxies = (
            ("trap", "127.0.0.1", TRAP_PROXY_PORT, f"Allow 127.0.0.1\nAllow {WSL_SUBNET}\n"),
            ("lan", GATEWAY, LAN_PROXY_PORT, f"Allow 127.0.0.1\nAllow {WSL_SUBNET}\n"),
            ("strict", GATEWAY, STRICT_PROXY_PORT, "Allow 127.0.0.1\n"),
        )
        for name, listen, port, allow in proxies:
            conf = self.dir / f"tinyproxy-{name}.conf"
            conf.write_text(
                f"Port {port}\nListen {listen}\nTimeout 30\nMaxClients 64\nLogLevel Connect\n"
                f"{allow}ConnectPort {HTTPS_PORT}\nConnectPort {STORE_PORT}\nDisableViaHeader Yes\n"
            )
            with open(self.dir / f"tinyproxy-{name}.log", "w") as log:
                self.popen(self.win, ["tinyproxy", "-d", "-c", str(conf)], stdout=log, stderr=subprocess.STDOUT)
        with open(self.dir / "hangup.log", "w") as log:
            self.popen(
                self.win, [sys.executable, "-c", _HANG_UP, GATEWAY, str(HANGUP_PROXY_PORT)], stdout=log, stderr=log
            )
        self.wait_listening(
            self.win,
            [f"127.0.0.1:{TRAP_PROXY_PORT}", f"{GATEWAY}:{LAN_PROXY_PORT}", f"{GATEWAY}:{STRICT_PROXY_PORT}"],
        )

    def wait_listening(self, ns: str, endpoints: Sequence[str], timeout: float = 10) -> None:
        """Returns once each HOST:PORT accepts a connection from inside `ns`; LabError after `timeout` seconds."""
        r = self.run(ns, [sys.executable, "-c", _WAIT_LISTENING, str(timeout), *endpoints], timeout=timeout + 10)
        if r.returncode != 0:
            logs = "".join(f"\n{p.name}: {p.read_text()[-1000:]}" for p in sorted(self.dir.glob("*.log")))
            raise LabError(f"in {ns}: {r.stderr.strip()}{logs}")

    # -- running commands inside

    def env(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        """The controlled environment: PATH, HOME, LANG, sanitizer options if set, then `extra`. Nothing else (no
        proxy variable of the caller's) leaks in."""
        env = {"PATH": BASE_PATH, "HOME": os.environ.get("HOME", "/root"), "LANG": "C.UTF-8"}
        env.update({k: os.environ[k] for k in PASS_THROUGH if k in os.environ})
        env.update(extra or {})
        return env

    def argv_in(self, ns: str, argv: Sequence[str], hostname: str | None = None) -> list[str]:
        """The command line that runs `argv` in `ns` (its /etc/netns files over /etc), with the namespace's hostname
        (wslhost in csn-wsl and csn-sandbox, the peer's name in csn-pN) in a UTS namespace of its own."""
        host = hostname if hostname is not None else self._hostnames.get(ns, "")
        prefix = ["ip", "netns", "exec", ns]
        if host:
            prefix += ["unshare", "--uts", "--", "sh", "-c", 'hostname "$0" && exec "$@"', host]
        return prefix + list(argv)

    def run(
        self,
        ns: str,
        argv: Sequence[str],
        env: Mapping[str, str] | None = None,
        *,
        timeout: float = 60,
        hostname: str | None = None,
        stdin: str | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """Runs `argv` inside `ns` with the controlled environment plus `env`; its output captured as text."""
        return subprocess.run(
            self.argv_in(ns, argv, hostname),
            env=self.env(env),
            input=stdin,
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def popen(
        self,
        ns: str,
        argv: Sequence[str],
        env: Mapping[str, str] | None = None,
        *,
        hostname: str | None = None,
        stdout: int | object = subprocess.PIPE,
        stderr: int | object = subprocess.PIPE,
    ) -> subprocess.Popen[str]:
        """Starts `argv` inside `ns` in a process group of its own; teardown kills it if it still runs."""
        p = subprocess.Popen(
            self.argv_in(ns, argv, hostname),
            env=self.env(env),
            preexec_fn=_die_with_parent,
            stdin=subprocess.DEVNULL,
            stdout=stdout,  # type: ignore[arg-type]
            stderr=stderr,  # type: ignore[arg-type]
            text=True,
            start_new_session=True,
        )
        self._procs.append(p)
        return p

    def probe_connect(self, ns: str, host: str, port: int, timeout: float = 5) -> dict[str, Any]:
        """One TCP connect from inside `ns`: {"ok", "errno", "error" (EHOSTUNREACH...), "seconds"}."""
        r = self.run(ns, [sys.executable, "-c", _CONNECT, host, str(port), str(timeout)], timeout=timeout + 30)
        if r.returncode != 0:
            raise LabError(f"connect probe in {ns}: {r.stderr.strip()}")
        return dict(json.loads(r.stdout))

    def probe_resolve(self, ns: str, name: str, timeout: float = 2) -> dict[str, Any]:
        """getaddrinfo(name) from inside `ns`, given up after `timeout`: {"addresses", "error", "timed_out", ...}."""
        r = self.run(ns, [sys.executable, "-c", _RESOLVE, name, str(timeout)], timeout=timeout + 30)
        if r.returncode != 0:
            raise LabError(f"resolve probe in {ns}: {r.stderr.strip()}")
        return dict(json.loads(r.stdout))

    # -- knobs (each undone by calling it again with the other value, or by its context manager)

    def set_gateway_arp(self, on: bool) -> None:
        """The gateway answers ARP (on) or not (off). Both sides' neighbour caches are flushed, so that WSL's next
        connect asks again: with it off, connect() fails EHOSTUNREACH after ~3 s and WSL's entry is FAILED."""
        self._ip(self.win, "link", "set", "dev", WIN_WSL_IF, "arp", "on" if on else "off")
        # And no ARP frame crosses the link either way, on either end, whatever the kernel does with an interface's
        # NOARP flag while requests or replies are in flight: CI runs saw a connect succeed at the 3 s SYN retransmit
        # with the flag set, and again with the gateway's side dropping ARP; WSL's side now drops any ARP from the
        # gateway too, which is what "the gateway does not answer ARP" looks like from WSL.
        if on:
            self.run(self.win, ["nft", "delete", "table", "arp", "csn_noarp"])
            self.run(self.wsl, ["nft", "delete", "table", "arp", "csn_noarp"])
        else:
            self._nft(
                self.win,
                f"""table arp csn_noarp {{
                      chain input {{ type filter hook input priority 0; iifname "{WIN_WSL_IF}" drop; }}
                      chain output {{ type filter hook output priority 0; oifname "{WIN_WSL_IF}" drop; }}
                    }}""",
            )
            self._nft(
                self.wsl,
                f"""table arp csn_noarp {{
                      chain input {{ type filter hook input priority 0; iifname "{WSL_IF}" drop; }}
                    }}""",
            )
        self._ip(self.wsl, "neigh", "flush", "dev", WSL_IF)
        self._ip(self.win, "neigh", "flush", "dev", WIN_WSL_IF)

    def arp_state(self) -> str:
        """Both ends' neighbour entries and the gateway's link flags and ARP rules: what a failed ARP check prints."""
        parts = [
            ("wsl neigh", self.run(self.wsl, ["ip", "neigh", "show", "dev", WSL_IF]).stdout),
            ("win neigh", self.run(self.win, ["ip", "neigh", "show", "dev", WIN_WSL_IF]).stdout),
            ("win link", self.run(self.win, ["ip", "-o", "link", "show", WIN_WSL_IF]).stdout),
            ("win arp rules", self.run(self.win, ["nft", "list", "table", "arp", "csn_noarp"]).stdout),
            ("wsl arp rules", self.run(self.wsl, ["nft", "list", "table", "arp", "csn_noarp"]).stdout),
        ]
        return "; ".join(f"{k}: {v.strip()}" for k, v in parts)

    def set_forwarding(self, on: bool) -> None:
        """Windows forwards WSL's packets (on) or drops them silently (off: a connect beyond it times out)."""
        value = "1" if on else "0"
        r = self.run(self.win, ["sysctl", "-q", "-w", f"net.ipv4.ip_forward={value}"])
        if r.returncode != 0:
            raise LabError(f"sysctl in {self.win}: {r.stderr.strip()}")

    @contextlib.contextmanager
    def gateway_arp_off(self) -> Iterator[None]:
        self.set_gateway_arp(False)
        try:
            yield
        finally:
            self.set_gateway_arp(True)

    @contextlib.contextmanager
    def forwarding_off(self) -> Iterator[None]:
        self.set_forwarding(False)
        try:
            yield
        finally:
            self.set_forwarding(True)

    @contextlib.contextmanager
    def firewall(self, ns: str, hook: str, rule: str) -> Iterator[None]:
        """One nftables rule in `ns` for the block's time, in a chain at `hook`: "input" (a firewall on that host),
        "output" (on its way out) or "forward" (on a router), e.g. `tcp dport 29500 reject with icmp type
        host-prohibited` (firewalld's default reject)."""
        if hook not in ("input", "output", "forward"):
            raise ValueError(f"hook {hook!r}: input, output or forward")
        self._nft(
            ns,
            f"""table inet csn_fw {{
                  chain {hook} {{ type filter hook {hook} priority filter; }}
                }}
                add rule inet csn_fw {hook} {rule}""",
        )
        try:
            yield
        finally:
            _cmd(["ip", "netns", "exec", ns, "nft", "delete", "table", "inet", "csn_fw"], check=False)

    @contextlib.contextmanager
    def mtu_black_hole(self, mtu: int = 1280) -> Iterator[None]:
        """A path MTU black hole beyond WSL's gateway: Windows' side of the WSL link takes `mtu` (WSL's stays 1500, so
        TCP still agrees on full-size segments), and Windows drops the ICMP "fragmentation needed" it would send the
        Internet's server: full-size packets toward WSL are lost, small ones pass."""
        self._ip(self.win, "link", "set", "dev", WIN_WSL_IF, "mtu", str(mtu))
        try:
            with self.firewall(self.win, "output", "icmp type destination-unreachable icmp code frag-needed drop"):
                yield
        finally:
            self._ip(self.win, "link", "set", "dev", WIN_WSL_IF, "mtu", "1500")

    @contextlib.contextmanager
    def ip_entry(self, ns: str, kind: str, *spec: str) -> Iterator[None]:
        """`ip route add SPEC` or `ip rule add SPEC` (kind "route" or "rule") in `ns` for the block's time, e.g.
        ("route", "unreachable", "203.0.113.0/24") beside the default route, or ("rule", "to", ADDR, "prohibit",
        "priority", "1000")."""
        if kind not in ("route", "rule"):
            raise ValueError(f"kind {kind!r}: route or rule")
        self._ip(ns, kind, "add", *spec)
        try:
            yield
        finally:
            _cmd(["ip", "-n", ns, kind, "del", *spec], check=False)

    # -- peers

    def peer_address(self, i: int) -> str:
        return f"{PEER_NET}.{i + 1}"

    def add_peer_namespaces(self, n: int) -> list[str]:
        """n namespaces csn-p0..csn-p{n-1} on one bridge (inside csn-lan), at 10.77.0.1..n/24, each with its own
        hostname (its namespace's name), known to every peer's /etc/hosts. Replaces any peers made before."""
        if not 1 <= n <= 200:
            raise ValueError(f"{n} peers: 1 to 200")
        self.remove_peer_namespaces()
        self._add_namespace(self.lan)
        self._ip(self.lan, "link", "add", BRIDGE, "type", "bridge")
        self._ip(self.lan, "link", "set", BRIDGE, "up")
        self.peers = [f"{self.prefix}p{i}" for i in range(n)]
        hosts = "127.0.0.1\tlocalhost\n" + "".join(f"{self.peer_address(i)}\t{ns}\n" for i, ns in enumerate(self.peers))
        for i, ns in enumerate(self.peers):
            self._add_namespace(ns)
            self._link(ns, "eth0", self.lan, f"p{i}")
            self._ip(self.lan, "link", "set", f"p{i}", "master", BRIDGE)
            self._ip(ns, "addr", "add", f"{self.peer_address(i)}/{PEER_PREFIX_LEN}", "dev", "eth0")
            self._etc_netns(ns, hosts, "nameserver 127.0.0.1\n")
            self._hostnames[ns] = ns
        return list(self.peers)

    def remove_peer_namespaces(self) -> None:
        for ns in [*self.peers, self.lan]:
            if ns in self._own_namespaces():
                self._delete_namespace(ns)
            shutil.rmtree(Path("/etc/netns") / ns, ignore_errors=True)
            self._hostnames.pop(ns, None)
        self.peers = []
        self._dropped.clear()

    def drop_pair(self, i: int, j: int) -> None:
        """Peers i and j no longer hear each other: nftables in peer i drops what arrives from j (j's SYNs and the
        answers to i's own), so a connect either way times out, as on a path that silently drops."""
        if i == j or not (0 <= i < len(self.peers) and 0 <= j < len(self.peers)):
            raise ValueError(f"drop_pair({i}, {j}) with {len(self.peers)} peers")
        self._nft(
            self.peers[i],
            f"""table inet csn_drop {{
                  chain input {{ type filter hook input priority filter; }}
                }}
                add rule inet csn_drop input ip saddr {self.peer_address(j)} drop""",
        )
        self._dropped.add((i, j))

    def clear_drops(self) -> None:
        for i in {i for i, _ in self._dropped}:
            _cmd(["ip", "netns", "exec", self.peers[i], "nft", "delete", "table", "inet", "csn_drop"], check=False)
        self._dropped.clear()

    @contextlib.contextmanager
    def dropped_pair(self, i: int, j: int) -> Iterator[None]:
        self.drop_pair(i, j)
        try:
            yield
        finally:
            self.clear_drops()


if __name__ == "__main__":
    # python3 tests/net/netlab.py: build the lab, print what it made, wait for Enter, tear it down.
    with NetLab() as lab:
        print(f"lab up: {lab.wsl} {lab.win} {lab.inet} {lab.sandbox}; CA {lab.ca_file}")
        print(f"try: ip netns exec {lab.wsl} curl --cacert {lab.ca_file} https://{INET_NAME}/")
        with contextlib.suppress(EOFError, KeyboardInterrupt):
            input("Enter tears it down: ")
