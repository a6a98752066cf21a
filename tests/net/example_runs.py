#!/usr/bin/env python3
"""The examples in docs/doctor-net.md, run for real: the network lab (netlab.py) built, each case of the field report
set up in turn, `coldstart doctor net` run inside "WSL" (or the sandbox, or the peers), and each command with its
output printed as Markdown. Run as root: python3 tests/net/example_runs.py build/coldstart > /tmp/examples.md"""

from __future__ import annotations

import shlex
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from netlab import (
    GATEWAY,
    HANGUP_PROXY_PORT,
    INET_ADDR,
    INET_NAME,
    LAN_PROXY_PORT,
    STORE_PORT,
    TRAP_PROXY_PORT,
    NetLab,
)

REPO = Path(__file__).resolve().parents[2]


def show(lab: NetLab, title: str, ns: str, argv: Sequence[str], env: Mapping[str, str] | None = None) -> None:
    r = lab.run(ns, list(argv), dict(env or {}), timeout=60)
    words = [f"{k}={v}" for k, v in (env or {}).items()] + ["coldstart", *argv[1:]]
    shown = " ".join(shlex.quote(w) for w in words).replace(str(REPO) + "/", "").replace(str(lab.ca_file), "ca.pem")
    print(f"### {title}\n\n```console\n$ {shown}\n{r.stdout.rstrip()}\n```\n(exit status {r.returncode})\n")


def main(binary: str) -> None:
    cs = str(Path(binary).resolve())
    url = f"https://{INET_NAME}/"
    with NetLab() as lab:
        ca = ["--cacert", str(lab.ca_file)]
        show(lab, "Healthy: the HTTPS server, direct", lab.wsl, [cs, "doctor", "net", url, *ca])
        show(
            lab,
            "The report's case: a proxy on Windows' loopback, seen from WSL in NAT mode",
            lab.wsl,
            [cs, "doctor", "net", url, *ca, "--root", str(REPO / "tests/data/net/wsl-nat")],
            {"https_proxy": f"http://127.0.0.1:{TRAP_PROXY_PORT}"},
        )
        show(
            lab,
            "The fix: the proxy on the Windows host's address, allowing LAN clients",
            lab.wsl,
            [cs, "doctor", "net", url, *ca],
            {"https_proxy": f"http://{GATEWAY}:{LAN_PROXY_PORT}"},
        )
        with lab.gateway_arp_off():
            # connect() gives up with EHOSTUNREACH after about 3 s of unanswered ARP: the default 2 s would end first.
            argv = [cs, "doctor", "net", url, *ca, "--timeout", "5s"]
            show(lab, "The gateway answers no ARP (errno 113)", lab.wsl, argv)
        with lab.forwarding_off():
            show(lab, "The gateway does not forward", lab.wsl, [cs, "doctor", "net", url, *ca])
        store = f"{INET_ADDR}:{STORE_PORT}"
        with lab.firewall(lab.inet, "input", f"tcp dport {STORE_PORT} drop"):
            show(lab, "The destination's firewall drops one port: its other ports answer", lab.wsl,
                 [cs, "doctor", "net", store])  # fmt: skip
        with lab.firewall(lab.inet, "input", f"tcp dport {STORE_PORT} reject with icmp type host-prohibited"):
            show(lab, "firewalld's reject (\"No route to host\"), from the destination itself", lab.wsl,
                 [cs, "doctor", "net", store])  # fmt: skip
        with lab.ip_entry(lab.wsl, "route", "unreachable", "203.0.113.0/24"):
            show(lab, "An unreachable route beside the default route", lab.wsl, [cs, "doctor", "net", store])
        show(lab, "A proxy that refuses this client (mihomo with allow-lan off)", lab.wsl,
             [cs, "doctor", "net", url, *ca], {"https_proxy": f"http://{GATEWAY}:{HANGUP_PROXY_PORT}"})  # fmt: skip
        with lab.mtu_black_hole():
            show(lab, "A path MTU black hole: the connection opens, full-size packets are lost", lab.wsl,
                 [cs, "doctor", "net", f"{url}big", *ca])  # fmt: skip
        with tempfile.TemporaryDirectory() as tmp:
            a, b = f"{tmp}/outside.json", f"{tmp}/sandbox.json"
            for ns, path in ((lab.wsl, a), (lab.sandbox, b)):
                r = lab.run(ns, [cs, "doctor", "net", url, *ca, "--json"], {}, timeout=60)
                Path(path).write_text(r.stdout)
            show(lab, "A sandbox with only lo", lab.sandbox, [cs, "doctor", "net", url, *ca])
            r = lab.run(lab.wsl, [cs, "doctor", "net", "--compare", a, b], {}, timeout=60)
            print(
                "### The sandbox against its parent\n\n```console\n$ coldstart doctor net --compare outside.json "
                f"sandbox.json\n{r.stdout.rstrip().replace(tmp + '/', '')}\n```\n(exit status {r.returncode})\n"
            )
        show(lab, "A resolver that does not answer", lab.wsl, [cs, "doctor", "net", "https://nowhere.test/"])
        show(
            lab,
            "http_proxy set, MASTER_ADDR not in no_proxy",
            lab.wsl,
            [cs, "doctor", "net"],
            {
                "http_proxy": f"http://{GATEWAY}:{LAN_PROXY_PORT}",
                "MASTER_ADDR": INET_ADDR,
                "MASTER_PORT": str(STORE_PORT),
                "GLOO_SOCKET_IFNAME": "eth0",
            },
        )
        show(lab, "MASTER_ADDR is a host name /etc/hosts maps to 127.0.1.1", lab.wsl, [cs, "doctor", "net"],
             {"MASTER_ADDR": "wslhost", "MASTER_PORT": str(STORE_PORT)})  # fmt: skip
        show(lab, "Nothing listens on the port", lab.wsl, [cs, "doctor", "net", f"{INET_ADDR}:29999"])
        peers = lab.add_peer_namespaces(4)
        try:
            with lab.dropped_pair(1, 2):
                procs = []
                for rank, ns in enumerate(peers):
                    env = {"RANK": str(rank), "WORLD_SIZE": "4", "LOCAL_RANK": "0", "LOCAL_WORLD_SIZE": "1",
                           "MASTER_ADDR": lab.peer_address(0), "MASTER_PORT": str(STORE_PORT),
                           "TORCHELASTIC_RUN_ID": "example", "COLDSTART_COORD_PORT": "29402"}  # fmt: skip
                    procs.append(lab.popen(ns, [cs, "doctor", "net", "--peers", "--timeout", "1s"], env))
                outs = [p.communicate(timeout=60) for p in procs]
            print(
                "### --peers: 4 ranks in 4 namespaces, the pair 1-2 dropped by nftables\n\n```console\n"
                f"$ torchrun --nnodes 4 ... coldstart doctor net --peers --timeout 1s   # rank 0's output\n"
                f"{outs[0][0].rstrip()}\n```\n(exit status {procs[0].returncode})\n"
            )
        finally:
            lab.remove_peer_namespaces()


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: example_runs.py COLDSTART_BIN (as root)")
    try:
        main(sys.argv[1])
    except subprocess.TimeoutExpired as e:
        sys.exit(f"example_runs: {e}")
