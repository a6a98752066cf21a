"""`coldstart doctor net` on a real network: the field report's WSL-behind-Windows case built from namespaces
(netlab.py), one fault at a time, each run of the binary inside "WSL" with --json, checked for the layer its verdict
names and a word of its fix. The binary is $COLDSTART_BIN (ctest sets it), else build/coldstart."""

from __future__ import annotations

import errno
import json
from pathlib import Path

import pytest
from doctor_run import WSL_NAT_ROOT, broken_at, check_shape, doctor, evidence, run_peers, statuses
from netlab import (
    CLOSED_PORT,
    DUAL_IPV6,
    DUAL_NAME,
    GATEWAY,
    INET_ADDR,
    INET_NAME,
    LAN_PROXY_PORT,
    LOOPBACK_HOST_ADDR,
    STORE_PORT,
    TRAP_PROXY_PORT,
    WSL_HOSTNAME,
    NetLab,
    skip_without_namespaces,
)

skip_without_namespaces()

URL = f"https://{INET_NAME}/"


# (1)
def test_healthy_direct(lab: NetLab, coldstart: str) -> None:
    run = doctor(lab, coldstart, [URL, "--cacert", str(lab.ca_file)])
    check_shape(run)
    assert (run.rc, run.verdict["status"]) == (0, "ok"), run.why()
    for t in run.out["targets"]:
        assert {c["status"] for c in t["layers"]} <= {"ok", "skipped"}, run.why()


# (2)
def test_healthy_through_the_proxy_on_the_gateway(lab: NetLab, coldstart: str) -> None:
    env = {"https_proxy": f"http://{GATEWAY}:{LAN_PROXY_PORT}"}
    run = doctor(lab, coldstart, [URL, "--cacert", str(lab.ca_file)], env)
    check_shape(run)
    assert (run.rc, run.verdict["status"]) == (0, "ok"), run.why()
    assert "ok" in statuses(run, "proxy"), run.why()  # the proxy was in the way and was checked


# (3)
def test_proxy_on_windows_loopback_under_wsl_nat(lab: NetLab, coldstart: str) -> None:
    if not WSL_NAT_ROOT.is_dir():
        pytest.fail(f"the recorded WSL fixture root {WSL_NAT_ROOT} is missing")
    env = {"https_proxy": f"http://127.0.0.1:{TRAP_PROXY_PORT}"}
    run = doctor(lab, coldstart, [URL, "--cacert", str(lab.ca_file), "--root", str(WSL_NAT_ROOT)], env)
    v = broken_at(run, "proxy")
    assert GATEWAY in v["fix"] or "mirrored" in v["fix"], run.why()


# (4)
def test_gateway_answering_no_arp(lab: NetLab, coldstart: str) -> None:
    with lab.gateway_arp_off():
        run = doctor(lab, coldstart, [URL, "--cacert", str(lab.ca_file), "--timeout", "5s"])
        state = lab.arp_state()
    v = broken_at(run, "next_hop")
    assert "EHOSTUNREACH" in evidence(v), (run.why(), state)


# (5)
def test_windows_not_forwarding(lab: NetLab, coldstart: str) -> None:
    with lab.forwarding_off():
        run = doctor(lab, coldstart, [URL, "--cacert", str(lab.ca_file), "--timeout", "2s"])
    broken_at(run, "forward")


# (6)
def test_sandbox_against_its_parent(lab: NetLab, coldstart: str, tmp_path: Path) -> None:
    args = [URL, "--cacert", str(lab.ca_file), "--timeout", "2s"]
    a = doctor(lab, coldstart, args)
    b = doctor(lab, coldstart, args, ns=lab.sandbox)
    check_shape(a)
    assert a.verdict["status"] == "ok", a.why()
    broken_at(b, "context")  # alone, the sandbox's run names its own context
    (tmp_path / "A.json").write_text(json.dumps(a.out))
    (tmp_path / "B.json").write_text(json.dumps(b.out))
    r = lab.run(lab.wsl, [coldstart, "doctor", "net", "--compare", str(tmp_path / "A.json"), str(tmp_path / "B.json"),
                          "--json"])  # fmt: skip
    assert r.returncode in (0, 1), r.stderr
    cmp = json.loads(r.stdout)
    assert (cmp.get("schema"), cmp.get("layer")) == ("coldstart.net.compare/1", "context"), r.stdout


# (7)
def test_resolver_that_does_not_answer(lab: NetLab, coldstart: str) -> None:
    run = doctor(lab, coldstart, ["https://nowhere.test/", "--timeout", "2s"])
    broken_at(run, "resolve")
    assert run.seconds <= 2 + 1, run.why()


# (8)
def test_http_proxy_in_the_way_of_master_addr(lab: NetLab, coldstart: str) -> None:
    env = {
        "http_proxy": f"http://{GATEWAY}:{LAN_PROXY_PORT}",
        "MASTER_ADDR": INET_ADDR,
        "MASTER_PORT": str(STORE_PORT),
        # wslhost is 127.0.1.1 here, which puts Gloo on lo (a warning of its own, at the route): name its interface.
        "GLOO_SOCKET_IFNAME": "eth0",
    }
    run = doctor(lab, coldstart, ["--timeout", "2s"], env)
    check_shape(run)
    v = run.verdict
    assert (v["status"] != "ok", v["layer"]) == (True, "proxy"), run.why()
    assert "no_proxy" in v["fix"], run.why()
    # The fix applied: with no_proxy naming MASTER_ADDR, the proxy is no longer the verdict.
    fixed = doctor(lab, coldstart, ["--timeout", "2s"], {**env, "no_proxy": INET_ADDR})
    check_shape(fixed)
    assert fixed.verdict["status"] == "ok" or fixed.verdict["layer"] != "proxy", fixed.why()


# (9)
def test_master_addr_resolving_to_loopback(lab: NetLab, coldstart: str) -> None:
    env = {"MASTER_ADDR": WSL_HOSTNAME, "MASTER_PORT": str(STORE_PORT)}
    run = doctor(lab, coldstart, ["--timeout", "2s"], env)
    check_shape(run)
    v = run.verdict
    assert (v["status"] != "ok", v["layer"]) == (True, "resolve"), run.why()
    assert LOOPBACK_HOST_ADDR in evidence(v), run.why()


def test_any_other_name_on_loopback_is_a_warning(lab: NetLab, coldstart: str) -> None:
    """The same name given as a target, not as a rendezvous: only this host answers there, which may be meant."""
    run = doctor(lab, coldstart, [f"{WSL_HOSTNAME}:{STORE_PORT}", "--timeout", "2s"])
    check_shape(run)
    assert statuses(run, "resolve") == {"warn"}, run.why()
    assert (run.verdict["status"], run.verdict["layer"]) in {("warn", "resolve"), ("broken", "transport")}, run.why()


def test_master_addr_with_an_unrouted_ipv6_address(lab: NetLab, coldstart: str) -> None:
    """MASTER_ADDR asked as c10d asks it: every address with its route. glibc sorts the IPv6 address it has no route
    to after the IPv4 one (RFC 6724's first rule, from a UDP connect of its own), whatever the hosts file's order, so
    the store is reached over IPv4 and the resolve layer only records the IPv6 address as unrouted."""
    run = doctor(lab, coldstart, ["--timeout", "2s"], {"MASTER_ADDR": DUAL_NAME, "MASTER_PORT": str(STORE_PORT)})
    check_shape(run)
    resolve = next(c for c in run.out["targets"][0]["layers"] if c["layer"] == "resolve")
    assert f"{INET_ADDR} (IPv4): a route, dev eth0" in resolve["evidence"], run.why()
    assert f"{DUAL_IPV6} (IPv6): no route (ENETUNREACH)" in resolve["evidence"], run.why()
    assert resolve["status"] == "ok" and statuses(run, "transport") == {"ok"}, run.why()


# (10)
def test_port_with_nothing_listening(lab: NetLab, coldstart: str) -> None:
    run = doctor(lab, coldstart, [f"{INET_ADDR}:{CLOSED_PORT}", "--timeout", "2s"])
    v = broken_at(run, "transport")
    assert "ECONNREFUSED" in evidence(v), run.why()


# (11)
def test_peers_all_pairs_healthy(lab: NetLab, coldstart: str, peers4: list[str]) -> None:
    runs = run_peers(lab, coldstart, peers4, 29400)
    m = runs[0].out["peers"]
    assert runs[0].rc == 0, runs[0].why()
    assert m["world"] == 4 and [e["address"] for e in m["endpoints"]] == [lab.peer_address(i) for i in range(4)]
    bad = [(i, j) for i in range(4) for j in range(4) if i != j and not m["cells"][i][j]["ok"]]
    assert bad == [], json.dumps(m)
    # Gloo, from each peer's hostname in /etc/hosts, is on the interface the matrix probed.
    assert [(e["gloo_interface"], e["gloo_differs"]) for e in m["endpoints"]] == [("eth0", False)] * 4, json.dumps(m)
    # MASTER_ADDR is checked beside the matrix: its host answers, though nothing listens before the job.
    check_shape(runs[0])
    assert runs[0].verdict["status"] == "ok", runs[0].why()
    master = [t for t in runs[0].out["targets"] if t["origin"] == "MASTER_ADDR"]
    assert [t["target"] for t in master] == [f"{lab.peer_address(0)}:{STORE_PORT}"], runs[0].why()
    assert statuses(runs[0], "transport") == {"ok"}, runs[0].why()


def test_peers_with_a_proxy_in_the_way_of_master_addr(lab: NetLab, coldstart: str, peers4: list[str]) -> None:
    """The pairs all connect, but http_proxy would take MASTER_ADDR to a proxy where nothing listens: named under
    --peers too (the environment's targets are checked beside the matrix)."""
    proxy = {"http_proxy": f"http://{lab.peer_address(0)}:{CLOSED_PORT}"}
    runs = run_peers(lab, coldstart, peers4, 29402, proxy)
    zero = runs[0]
    assert zero.out["peers"]["failing_pairs"] == 0, json.dumps(zero.out["peers"])
    v = broken_at(zero, "proxy")
    assert v["target"] == f"{lab.peer_address(0)}:{STORE_PORT}" and "no_proxy" in v["fix"], zero.why()
    # no_proxy naming MASTER_ADDR takes it off the proxy; the proxy itself stays dead (its own target's transport).
    fixed = run_peers(lab, coldstart, peers4, 29403, {**proxy, "no_proxy": lab.peer_address(0)})[0]
    check_shape(fixed)
    assert statuses(fixed, "proxy", target=0) != {"broken"}, fixed.why()
    assert (fixed.verdict["layer"], fixed.verdict["target"]) == ("transport", f"{lab.peer_address(0)}:{CLOSED_PORT}")


def test_peers_with_gloo_on_another_interface(lab: NetLab, coldstart: str, peers4: list[str]) -> None:
    runs = run_peers(lab, coldstart, peers4, 29404, rank_extra={3: {"GLOO_SOCKET_IFNAME": "lo"}})
    zero = runs[0]
    check_shape(zero)
    three = zero.out["peers"]["endpoints"][3]
    assert (three["interface"], three["gloo_interface"], three["gloo_differs"]) == ("eth0", "lo", True), three
    assert zero.out["peers"]["failing_pairs"] == 0, json.dumps(zero.out["peers"])
    v = zero.verdict
    assert (v["status"], v["layer"], v["target"], zero.rc) == ("warn", "route", "peers rank 3", 0), zero.why()
    assert "GLOO_SOCKET_IFNAME=eth0" in v["fix"], zero.why()


def test_peers_with_one_pair_dropped(lab: NetLab, coldstart: str, peers4: list[str]) -> None:
    with lab.dropped_pair(1, 2):
        runs = run_peers(lab, coldstart, peers4, 29401)
    zero = runs[0]
    assert zero.rc == 1, zero.why()
    assert all(r.rc in (0, 1) for r in runs), [(r.rc, r.stderr[-300:]) for r in runs]
    m = zero.out["peers"]
    assert m["world"] == 4 and len(m["cells"]) == 4 and all(len(row) == 4 for row in m["cells"]), json.dumps(m)
    failing = {(i, j) for i in range(4) for j in range(4) if i != j and not m["cells"][i][j]["ok"]}
    assert failing == {(1, 2), (2, 1)}, json.dumps(m)
    for i, j in failing:
        cell = m["cells"][i][j]
        assert cell["err"] == errno.ETIMEDOUT, json.dumps(cell)
        # On-link peers whose ARP answers (nftables drops IP only): the peer's side, not a gateway's.
        assert cell["layer"] == "transport" and "answers ARP" in cell["why"], json.dumps(cell)
    assert (zero.verdict["layer"], zero.verdict["target"]) == ("transport", "peers 1 -> 2"), zero.why()


# The casebook's entry 22 (NVIDIA/nccl#1837): NCCL_SOCKET_IFNAME naming an interface the host does not have. NCCL says
# nothing until it connects with an empty address; the route layer warns, naming the list and the route's interface.
def test_nccl_socket_ifname_matching_no_interface(lab: NetLab, coldstart: str) -> None:
    env = {"MASTER_ADDR": INET_ADDR, "MASTER_PORT": str(STORE_PORT), "NCCL_SOCKET_IFNAME": "nope"}
    run = doctor(lab, coldstart, ["--timeout", "2s"], env)
    check_shape(run)
    route = next(c for c in run.out["targets"][0]["layers"] if c["layer"] == "route")
    assert route["status"] == "warn", run.why()
    assert "NCCL_SOCKET_IFNAME=nope matches no running interface with an address" in route["summary"], run.why()
    assert "NCCL would use no interface (NCCL_SOCKET_IFNAME=nope)" in evidence(route), run.why()
    assert "NCCL_SOCKET_IFNAME=eth0" in route["fix"], run.why()
    assert statuses(run, "transport") == {"ok"}, run.why()  # the store itself is reachable: only NCCL's pick is off


# The casebook's entry 26 (ray-project/ray#2722, dask/distributed#1260): a node with no default route, where Ray finds
# its node IP from a UDP socket toward 8.8.8.8. The peer namespaces have only their LAN: the route layer warns for
# RAY_ADDRESS, with the address to give ray start (nothing listens at the head here: its transport layer says so).
def test_ray_node_ip_discovery_without_a_default_route(lab: NetLab, coldstart: str, peers4: list[str]) -> None:
    head = lab.peer_address(0)
    run = doctor(lab, coldstart, ["--timeout", "2s"], {"RAY_ADDRESS": f"{head}:{STORE_PORT}"}, ns=peers4[1])
    check_shape(run)
    route = next(c for c in run.out["targets"][0]["layers"] if c["layer"] == "route")
    assert route["status"] == "warn", run.why()
    assert "8.8.8.8:53): ENETUNREACH" in evidence(route), run.why()
    assert f"--node-ip-address={lab.peer_address(1)}" in route["fix"], run.why()
