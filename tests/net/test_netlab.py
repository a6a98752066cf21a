"""The lab itself, checked on the raw network with curl, getent and Python sockets inside the namespaces: each fault
doctor net must name is really there, with the errno and the timing the field report describes."""

from __future__ import annotations

import re
import subprocess
import time
from pathlib import Path

import pytest
from netlab import (
    CLOSED_PORT,
    FAKE_IP,
    FAKE_NAME,
    GATEWAY,
    HANGUP_PROXY_PORT,
    HTTPS_PORT,
    INET_ADDR,
    INET_NAME,
    LAN_PROXY_PORT,
    LOOPBACK_HOST_ADDR,
    STORE_PORT,
    STRICT_PROXY_PORT,
    TRAP_PROXY_PORT,
    WIN_INET_ADDR,
    WSL_HOSTNAME,
    WSL_IF,
    NetLab,
    skip_without_namespaces,
)

skip_without_namespaces()

URL = f"https://{INET_NAME}/"


def curl(lab: NetLab, ns: str, url: str, *args: str) -> tuple[int, str, str]:
    r = lab.run(ns, ["curl", "-sS", "--max-time", "5", "--cacert", str(lab.ca_file), *args, url], timeout=20)
    return r.returncode, r.stdout, r.stderr


def test_https_direct_with_the_test_ca_and_masquerade(lab: NetLab) -> None:
    rc, out, err = curl(lab, lab.wsl, f"https://{INET_NAME}/ip")
    assert rc == 0, err
    assert out.strip() == WIN_INET_ADDR  # WSL's packets leave Windows masqueraded
    # The certificate is the test CA's: without it, verification fails (curl exit 60).
    r = lab.run(lab.wsl, ["curl", "-sS", "--max-time", "5", URL], timeout=20)
    assert r.returncode == 60, r.stderr


def test_proxy_on_the_gateway_works_and_windows_loopback_is_not_wsls(lab: NetLab) -> None:
    rc, out, err = curl(lab, lab.wsl, URL, "-x", f"http://{GATEWAY}:{LAN_PROXY_PORT}")
    assert (rc, out) == (0, "inet.test ok\n"), err
    rc, _, err = curl(lab, lab.wsl, URL, "-x", f"http://127.0.0.1:{TRAP_PROXY_PORT}")
    assert rc == 7, err  # couldn't connect: WSL's own 127.0.0.1
    assert lab.probe_connect(lab.wsl, "127.0.0.1", TRAP_PROXY_PORT)["error"] == "ECONNREFUSED"
    # On Windows itself, the same address and port is the proxy, and it works.
    rc, out, err = curl(lab, lab.win, URL, "-x", f"http://127.0.0.1:{TRAP_PROXY_PORT}")
    assert (rc, out) == (0, "inet.test ok\n"), err


def test_names_from_hosts_and_a_resolver_that_does_not_answer(lab: NetLab) -> None:
    assert lab.probe_resolve(lab.wsl, WSL_HOSTNAME)["addresses"] == [LOOPBACK_HOST_ADDR]
    assert lab.probe_resolve(lab.wsl, INET_NAME)["addresses"] == [INET_ADDR]
    assert lab.run(lab.wsl, ["hostname"]).stdout.strip() == WSL_HOSTNAME
    # A name not in hosts goes to the gateway's port 53, where nftables drops it: no answer, no refusal, within 1.5 s.
    res = lab.probe_resolve(lab.wsl, "nowhere.test", timeout=1.5)
    assert res["timed_out"], res
    assert 1.4 < res["seconds"] < 2.5


def test_ports_on_the_internet(lab: NetLab) -> None:
    assert lab.probe_connect(lab.wsl, INET_ADDR, STORE_PORT)["ok"]
    assert lab.probe_connect(lab.wsl, INET_ADDR, HTTPS_PORT)["ok"]
    closed = lab.probe_connect(lab.wsl, INET_ADDR, CLOSED_PORT)
    assert closed["error"] == "ECONNREFUSED" and closed["seconds"] < 0.5, closed


def test_gateway_without_arp_gives_ehostunreach_after_about_3_s(lab: NetLab) -> None:
    with lab.gateway_arp_off():
        c = lab.probe_connect(lab.wsl, INET_ADDR, HTTPS_PORT, timeout=10)
        if c["ok"] and 2.5 < c["seconds"] < 4.5:
            # Seen in 2 of the last 6 clean-clone CI runs, always at the 3 s SYN retransmit with every ARP frame
            # dropped at both ends and the neighbour FAILED: Python's connect() reported success where the kernel had
            # failed it (cause not found yet). The fault itself is asked once more; a second success still fails.
            c = lab.probe_connect(lab.wsl, INET_ADDR, HTTPS_PORT, timeout=10)
        assert c["error"] == "EHOSTUNREACH", (c, lab.arp_state())
        assert 2.5 < c["seconds"] < 4.5, c
        neigh = lab.run(lab.wsl, ["ip", "neigh", "show", GATEWAY, "dev", WSL_IF]).stdout
        assert re.search(r"\b(INCOMPLETE|FAILED)\b", neigh), neigh
        arp = lab.run(lab.wsl, ["cat", "/proc/net/arp"]).stdout
        row = next(line.split() for line in arp.splitlines() if line.startswith(GATEWAY + " "))
        assert row[2] == "0x0" and row[3] == "00:00:00:00:00:00", arp  # flags 0x0: incomplete
    # Restored: the gateway answers again.
    assert lab.probe_connect(lab.wsl, INET_ADDR, HTTPS_PORT)["ok"]
    assert "REACHABLE" in lab.run(lab.wsl, ["ip", "neigh", "show", GATEWAY]).stdout


def test_forwarding_off_drops_silently(lab: NetLab) -> None:
    with lab.forwarding_off():
        c = lab.probe_connect(lab.wsl, INET_ADDR, HTTPS_PORT, timeout=1.5)
        assert c["error"] == "ETIMEDOUT", c  # no ICMP comes back: the packet is dropped
        assert lab.probe_connect(lab.wsl, GATEWAY, LAN_PROXY_PORT)["ok"]  # the gateway itself still answers
    assert lab.probe_connect(lab.wsl, INET_ADDR, HTTPS_PORT)["ok"]


def test_the_knobs_of_the_right_fix_cases_are_real(lab: NetLab) -> None:
    """What tests/net/test_right_fix.py's faults look like on the raw network, with curl and Python's sockets."""
    with lab.firewall(lab.inet, "input", f"tcp dport {STORE_PORT} reject with icmp type host-prohibited"):
        assert lab.probe_connect(lab.wsl, INET_ADDR, STORE_PORT)["error"] == "EHOSTUNREACH"  # "No route to host"
    with lab.ip_entry(lab.wsl, "route", "unreachable", "203.0.113.0/24"):
        assert lab.probe_connect(lab.wsl, INET_ADDR, STORE_PORT)["error"] == "EHOSTUNREACH"
    assert lab.probe_connect(lab.wsl, INET_ADDR, STORE_PORT)["ok"]
    # The strict proxy answers WSL 403 (its Allow admits only its loopback); the other closes every connection at once.
    rc, _, err = curl(lab, lab.wsl, URL, "-x", f"http://{GATEWAY}:{STRICT_PROXY_PORT}")
    assert rc == 56 and "403" in err, (rc, err)
    rc, _, err = curl(lab, lab.wsl, URL, "-x", f"http://{GATEWAY}:{HANGUP_PROXY_PORT}")
    assert rc in (52, 56), (rc, err)  # an empty reply, or a receive failure
    assert lab.probe_resolve(lab.wsl, FAKE_NAME)["addresses"] == [FAKE_IP]
    # The MTU black hole: a large answer stalls while a small one passes; restored, the large one arrives.
    with lab.mtu_black_hole():
        rc, _, err = curl(lab, lab.wsl, f"https://{INET_NAME}/big", "--max-time", "2")
        assert rc == 28, (rc, err)
        rc, out, err = curl(lab, lab.wsl, f"https://{INET_NAME}/")
        assert (rc, out) == (0, "inet.test ok\n"), err  # a small answer passes
    rc, out, err = curl(lab, lab.wsl, f"https://{INET_NAME}/big")
    assert rc == 0 and len(out) == 49152, err


def test_sandbox_has_only_loopback(lab: NetLab) -> None:
    links = lab.run(lab.sandbox, ["ip", "-o", "link", "show"]).stdout
    assert [line.split(":")[1].strip() for line in links.splitlines()] == ["lo"]
    assert "UP" in links or "UNKNOWN" in links
    c = lab.probe_connect(lab.sandbox, INET_ADDR, HTTPS_PORT)
    assert c["error"] == "ENETUNREACH", c
    assert lab.probe_connect(lab.sandbox, "127.0.0.1", 1)["error"] == "ECONNREFUSED"  # lo is up


def test_no_namespace_routes_beyond_the_lab(lab: NetLab) -> None:
    # Only WSL has a default route, and it leads to Windows, which has none: nothing can leave the lab.
    for ns in (lab.win, lab.inet, lab.sandbox):
        assert lab.run(ns, ["ip", "route", "show", "default"]).stdout.strip() == "", ns
    assert lab.run(lab.wsl, ["ip", "route", "show", "default"]).stdout.split()[:3] == ["default", "via", GATEWAY]


def test_peers_on_a_bridge_and_a_dropped_pair(lab: NetLab, peers4: list[str]) -> None:
    assert peers4 == [f"{lab.prefix}p{i}" for i in range(4)]
    assert lab.run(peers4[2], ["hostname"]).stdout.strip() == peers4[2]
    assert lab.probe_resolve(peers4[0], peers4[3])["addresses"] == [lab.peer_address(3)]
    with lab.dropped_pair(1, 2):
        for a, b in ((1, 2), (2, 1)):
            c = lab.probe_connect(peers4[a], lab.peer_address(b), 1, timeout=1)
            assert c["error"] == "ETIMEDOUT", (a, b, c)
        for a, b in ((0, 1), (1, 0), (2, 0), (3, 2), (1, 3)):
            c = lab.probe_connect(peers4[a], lab.peer_address(b), 1, timeout=1)
            assert c["error"] == "ECONNREFUSED", (a, b, c)  # reached: nothing listens on port 1
    c = lab.probe_connect(peers4[1], lab.peer_address(2), 1, timeout=1)
    assert c["error"] == "ECONNREFUSED", c


def test_teardown_leaves_nothing_even_after_a_failure(lab: NetLab) -> None:
    other = NetLab(prefix="csn-x-")
    with pytest.raises(RuntimeError, match="boom"), other:
        other.add_peer_namespaces(2)
        pid = other.popen(other.inet, ["sleep", "60"]).pid
        workdir = other.dir
        raise RuntimeError("boom")
    names = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert not re.search(r"^csn-x-", names, re.M), names
    assert not Path("/etc/netns").exists() or not list(Path("/etc/netns").glob("csn-x-*"))
    assert not Path(f"/proc/{pid}").exists()
    assert not workdir.exists()
    # The session's lab is untouched.
    assert lab.probe_connect(lab.wsl, INET_ADDR, HTTPS_PORT)["ok"]


def test_leftovers_of_a_killed_run_are_removed(lab: NetLab) -> None:
    # A run killed half way: its namespace and a process in it are still there.
    subprocess.run(["ip", "netns", "add", "csn-y-wsl"], check=True)
    stray = subprocess.Popen(["ip", "netns", "exec", "csn-y-wsl", "sleep", "60"])
    time.sleep(0.1)
    t = time.monotonic()
    with NetLab(prefix="csn-y-") as again:
        assert stray.wait(timeout=5) == -9  # killed by pid, as a process in one of its namespaces
        assert again.probe_connect(again.wsl, INET_ADDR, STORE_PORT)["ok"]
    assert time.monotonic() - t < 5
    assert "csn-y-" not in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
