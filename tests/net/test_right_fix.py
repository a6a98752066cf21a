"""doctor net names the setting that would change the outcome, not only the layer (issue 48): each case turns one knob
of the lab whose first answer alone reads as another fault (a port dropped by the destination's firewall looks like a
gateway that does not forward; firewalld's reject looks like a router without a route), and checks the verdict's
layer, its words and its fix. The binary is $COLDSTART_BIN, else build/coldstart (conftest.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from doctor_run import broken_at, doctor, run_peers, statuses
from netlab import (
    FAKE_IP,
    FAKE_NAME,
    GATEWAY,
    HANGUP_PROXY_PORT,
    INET_ADDR,
    INET_NAME,
    LAN_PROXY_PORT,
    LOOPBACK_HOST_ADDR,
    STORE_PORT,
    STRICT_PROXY_PORT,
    WSL_ADDR,
    WSL_HOSTNAME,
    NetLab,
    skip_without_namespaces,
)

skip_without_namespaces()

STORE = f"{INET_ADDR}:{STORE_PORT}"  # beyond the gateway; something listens there


# -- Who dropped or refused it, beyond the gateway


def test_a_port_the_hosts_firewall_drops_is_not_the_gateway(lab: NetLab, coldstart: str) -> None:
    """Only port 29500 is dropped, on the host itself: the host's other ports answer through the same gateway."""
    with lab.firewall(lab.inet, "input", f"tcp dport {STORE_PORT} drop"):
        run = doctor(lab, coldstart, [STORE, "--timeout", "2s"])
    v = broken_at(run, "transport")
    assert statuses(run, "forward") == {"ok"}, run.why()
    assert "answers on port" in v["summary"] and f"drops port {STORE_PORT}" in v["summary"], run.why()
    assert f"--add-port={STORE_PORT}/tcp" in v["fix"], run.why()


def test_firewalld_reject_is_the_hosts_firewall_not_a_router_without_a_route(lab: NetLab, coldstart: str) -> None:
    """firewalld's default reject (ICMP host-prohibited), which connect() reports as "No route to host"."""
    with lab.firewall(lab.inet, "input", f"tcp dport {STORE_PORT} reject with icmp type host-prohibited"):
        run = doctor(lab, coldstart, [STORE, "--timeout", "2s"])
    v = broken_at(run, "transport")
    assert f"{INET_ADDR} itself rejects port {STORE_PORT}" in v["summary"], run.why()
    assert "host administratively prohibited" in v["summary"] and "EHOSTUNREACH" in v["summary"], run.why()
    assert f"firewall-cmd --add-port={STORE_PORT}/tcp" in v["fix"], run.why()
    assert statuses(run, "forward") == {"ok"}, run.why()


def test_a_hosts_reject_with_port_unreachable_is_not_nothing_listening(lab: NetLab, coldstart: str) -> None:
    """nftables' plain `reject` answers TCP with ICMP port unreachable, which connect() reports as ECONNREFUSED."""
    with lab.firewall(lab.inet, "input", f"tcp dport {STORE_PORT} reject"):
        run = doctor(lab, coldstart, [STORE, "--timeout", "2s"])
    v = broken_at(run, "transport")
    assert "port unreachable" in v["summary"] and not v["summary"].startswith("nothing listens"), run.why()
    assert f"--add-port={STORE_PORT}/tcp" in v["fix"], run.why()


def test_a_reject_on_the_gateway_names_the_gateway(lab: NetLab, coldstart: str) -> None:
    with lab.firewall(lab.win, "forward", f"tcp dport {STORE_PORT} reject with icmp type admin-prohibited"):
        run = doctor(lab, coldstart, [STORE, "--timeout", "2s"])
    v = broken_at(run, "forward")
    assert f"the gateway {GATEWAY} rejects the connection" in v["summary"], run.why()
    assert "communication administratively prohibited" in v["summary"], run.why()
    assert "forward rules" in v["fix"] and "sysctl" not in v["fix"], run.why()


def test_this_hosts_own_output_drop_is_not_beyond_the_gateway(lab: NetLab, coldstart: str) -> None:
    with lab.firewall(lab.wsl, "output", f"tcp dport {STORE_PORT} drop"):
        run = doctor(lab, coldstart, [STORE, "--timeout", "2s"])
    v = broken_at(run, "transport")
    assert "never left this host" in v["summary"], run.why()
    assert "output" in v["fix"] and "ip_forward" not in v["fix"], run.why()
    assert statuses(run, "forward") == {"not_checked"}, run.why()


def test_a_peers_own_reject_is_its_firewall(lab: NetLab, coldstart: str, peers4: list[str]) -> None:
    """Rank 2's firewall rejects rank 1's connections the way firewalld does: the pair is the peer's firewall, not a
    missing ARP answer or a reject "from beyond"."""
    rule = f"ip saddr {lab.peer_address(1)} tcp flags & (syn | ack) == syn reject with icmp type host-prohibited"
    with lab.firewall(peers4[2], "input", rule):
        runs = run_peers(lab, coldstart, peers4, 29405)
    cell = runs[0].out["peers"]["cells"][1][2]
    assert (cell["ok"], cell["layer"]) == (False, "transport"), cell
    assert "the peer's own firewall rejects the port" in cell["why"], cell
    assert runs[0].out["peers"]["cells"][2][1]["ok"], runs[0].out["peers"]


# -- Routes of a special type: the entry itself is named, beside the default route it overrides


@pytest.mark.parametrize("kind", ["unreachable", "blackhole", "prohibit"])
def test_a_rejecting_route_is_named_not_a_missing_default_route(lab: NetLab, coldstart: str, kind: str) -> None:
    with lab.ip_entry(lab.wsl, "route", kind, "203.0.113.0/24"):
        run = doctor(lab, coldstart, [STORE, "--timeout", "2s"])
    v = broken_at(run, "route")
    assert f"`{kind} 203.0.113.0/24`" in v["summary"] and "before the default route" in v["summary"], run.why()
    assert v["fix"].startswith(f"remove it: ip route del {kind} 203.0.113.0/24"), run.why()
    assert "add a route" not in v["fix"], run.why()


@pytest.mark.parametrize("kind", ["prohibit", "unreachable"])
def test_a_rejecting_rule_is_named(lab: NetLab, coldstart: str, kind: str) -> None:
    """A policy rule of action prohibit (EACCES) or unreachable (which the lookup answers ENETUNREACH, as for no route
    at all)."""
    with lab.ip_entry(lab.wsl, "rule", "to", INET_ADDR, kind, "priority", "1000"):
        run = doctor(lab, coldstart, [STORE, "--timeout", "2s"])
    v = broken_at(run, "route")
    assert f"`rule 1000: from all to {INET_ADDR} {kind}`" in v["summary"], run.why()
    assert "ip rule del priority 1000" in v["fix"], run.why()


# -- A proxy that refuses this client: the allow-list is named, not the port


@pytest.mark.parametrize("port", [STRICT_PROXY_PORT, HANGUP_PROXY_PORT], ids=["403", "hangs-up"])
def test_a_proxy_refusing_this_client_names_its_allow_list(lab: NetLab, coldstart: str, port: int) -> None:
    """tinyproxy whose Allow admits only its own loopback answers 403; mihomo with allow-lan off closes at once."""
    env = {"https_proxy": f"http://{GATEWAY}:{port}"}
    run = doctor(lab, coldstart, [f"https://{INET_NAME}/", "--cacert", str(lab.ca_file), "--timeout", "2s"], env)
    v = broken_at(run, "proxy")
    assert f"refuses this client ({WSL_ADDR})" in v["summary"], run.why()
    assert f"Allow {WSL_ADDR}" in v["fix"] and "allow-lan" in v["fix"], run.why()
    assert "ConnectPort" not in v["fix"], run.why()


def test_a_proxy_refusing_the_port_still_names_the_port(lab: NetLab, coldstart: str) -> None:
    """The LAN proxy admits WSL but not port 29999 (ConnectPort): the recheck shows the client and the host served."""
    env = {"http_proxy": f"http://{GATEWAY}:{LAN_PROXY_PORT}"}
    run = doctor(lab, coldstart, [f"http://{INET_NAME}:29999/", "--timeout", "2s"], env)
    v = broken_at(run, "proxy")
    assert "it refuses port 29999" in v["summary"], run.why()
    assert "ConnectPort 29999" in v["fix"] and "Allow" not in v["fix"], run.why()


# -- Warnings that explain the failure: said where the failure is, with the name's fix


def test_a_fake_ip_leaving_by_the_gateway_is_the_proxy_tools_not_the_gateways_routes(
    lab: NetLab, coldstart: str
) -> None:
    """fake.test answers a proxy tool's fake IP, and no TUN device routes it: the gateway reports no route to it."""
    run = doctor(lab, coldstart, [f"{FAKE_NAME}:443", "--timeout", "2s"])
    v = broken_at(run, "route")
    assert statuses(run, "resolve") == {"warn"}, run.why()
    assert f"{FAKE_IP} is not the host's address but a fake IP" in v["summary"], run.why()
    assert "fake-ip-filter" in v["fix"] and "check the routes on" not in v["fix"], run.why()


def test_a_name_on_loopback_refused_says_where_the_connection_went(lab: NetLab, coldstart: str) -> None:
    run = doctor(lab, coldstart, [f"{WSL_HOSTNAME}:{STORE_PORT}", "--timeout", "2s"])
    v = broken_at(run, "transport")
    assert f"resolves to {LOOPBACK_HOST_ADDR}, a loopback address" in v["summary"], run.why()
    assert "/etc/hosts" in v["fix"] and "start the service" not in v["fix"], run.why()


# -- A connection that works and a service that never answers in full-size packets


def test_a_path_mtu_black_hole_is_the_path_not_the_service(lab: NetLab, coldstart: str) -> None:
    with lab.mtu_black_hole():
        run = doctor(lab, coldstart, [f"https://{INET_NAME}/big", "--cacert", str(lab.ca_file), "--timeout", "2s"])
    v = broken_at(run, "forward")
    assert "path MTU black hole" in v["summary"] and f"beyond the gateway {GATEWAY}" in v["summary"], run.why()
    assert "fragmentation needed" in v["fix"] and "clamp the TCP MSS" in v["fix"], run.why()
    assert statuses(run, "transport") == {"ok"} and statuses(run, "service") == {"not_checked"}, run.why()


# -- --compare: the layer that broke is the headline, not one a side skipped


def test_compare_headlines_the_proxy_that_broke_not_forward_skipped(
    lab: NetLab, coldstart: str, tmp_path: Path
) -> None:
    """Direct, forward is checked (ok) and the proxy skipped; through the on-link proxy that refuses this client,
    forward is skipped and the proxy broken: the proxy is the difference to name."""
    args = [f"https://{INET_NAME}/", "--cacert", str(lab.ca_file), "--timeout", "2s"]
    direct = doctor(lab, coldstart, args)
    proxied = doctor(lab, coldstart, args, {"https_proxy": f"http://{GATEWAY}:{STRICT_PROXY_PORT}"})
    assert (statuses(direct, "forward"), statuses(proxied, "forward")) == ({"ok"}, {"skipped"}), proxied.why()
    (tmp_path / "direct.json").write_text(json.dumps(direct.out))
    (tmp_path / "proxied.json").write_text(json.dumps(proxied.out))
    r = lab.run(lab.wsl, [coldstart, "doctor", "net", "--compare", str(tmp_path / "direct.json"),
                          str(tmp_path / "proxied.json"), "--json"])  # fmt: skip
    assert r.returncode == 1, r.stderr
    cmp = json.loads(r.stdout)
    assert (cmp["layer"], cmp["in_b"]["status"]) == ("proxy", "broken"), r.stdout
    assert "Allow" in cmp["in_b"]["fix"], r.stdout


# -- Words that never contradict the lines above them


def test_a_refusing_http_proxy_beside_master_addr_does_not_say_the_direct_path_fails(
    lab: NetLab, coldstart: str
) -> None:
    env = {
        "http_proxy": f"http://{GATEWAY}:{STRICT_PROXY_PORT}",
        "MASTER_ADDR": INET_ADDR,
        "MASTER_PORT": str(STORE_PORT),
        "GLOO_SOCKET_IFNAME": "eth0",
    }
    run = doctor(lab, coldstart, ["--timeout", "2s"], env)
    v = broken_at(run, "proxy")
    assert statuses(run, "transport") == {"ok"}, run.why()
    assert "and that proxy path fails" in v["summary"], run.why()
    assert "TCPStore, NCCL and Gloo connect directly, which works" in v["summary"], run.why()
    assert "directly, and that path fails" not in v["summary"], run.why()


def test_a_no_proxy_cidr_that_urllib_cannot_read_names_urllibs_path(lab: NetLab, coldstart: str) -> None:
    """curl (the deciding client) reads no_proxy's CIDR and goes direct; urllib reads no CIDR and takes the proxy."""
    env = {"https_proxy": f"http://{GATEWAY}:{STRICT_PROXY_PORT}", "no_proxy": "203.0.113.0/24"}
    run = doctor(lab, coldstart, [f"https://{INET_ADDR}/", "--cacert", str(lab.ca_file), "--timeout", "2s"], env)
    v = broken_at(run, "proxy")
    assert statuses(run, "transport") == {"ok"}, run.why()
    assert v["summary"].startswith("urllib would send"), run.why()
    assert "curl goes direct, which works" in v["summary"], run.why()
    assert "goes direct, and that path fails" not in v["summary"], run.why()
