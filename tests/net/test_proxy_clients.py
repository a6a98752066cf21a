"""The proxy table (tests/net/proxy_table.json, which src/net/proxy_test.cc holds decide() to) against the clients
installed here: curl, Python's urllib and, when importable, requests. Each case's proxy values are rewritten to
127.0.0.1 with one closed port per variable, so that the port a client goes to names the variable it used; direct
connections are sent to another closed port (curl --connect-to). Nothing leaves 127.0.0.1 and nothing is resolved.

A bypass is told from "no variable applies" by running again without the no_proxy variable named: the client must
then use a proxy. Rows the installed curl cannot check (ws:// without websocket support, CIDR before 7.86) are
skipped, saying why. Run by pytest, or alone: python3 tests/net/test_proxy_clients.py."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Callable

import pytest

TABLE = Path(__file__).with_name("proxy_table.json")
CASES = json.loads(TABLE.read_text())["cases"]
NO_VARS = ("no_proxy", "NO_PROXY", "no_grpc_proxy", "NO_GRPC_PROXY")
DEFAULT_PORTS = {"http": 80, "ws": 80, "https": 443, "wss": 443, "grpc": 443}


class Ports:
    """Closed TCP ports on 127.0.0.1: bound, never listening, so a connection is refused at once."""

    def __init__(self, n: int) -> None:
        self.socks = []
        for _ in range(n):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            self.socks.append(s)
        self.ports = [s.getsockname()[1] for s in self.socks]


PORTS = Ports(12)
DIRECT_PORT = PORTS.ports[0]


def proxy_vars(env: dict[str, str]) -> list[str]:
    return [k for k in env if k.lower().endswith("_proxy") and k not in NO_VARS]


def rewrite(value: str, port: int) -> str:
    """The same proxy value (scheme, credentials, path kept) pointing at 127.0.0.1:port."""
    if not value:
        return value
    m = re.match(r"^([A-Za-z][A-Za-z0-9+.-]*://)?([^@/]*@)?(\[[^\]]*\]|[^:/]*)(:\d+)?(/.*)?$", value)
    if not m:
        return value
    return f"{m.group(1) or ''}{m.group(2) or ''}127.0.0.1:{port}{m.group(5) or ''}"


def prepared(env: dict[str, str]) -> tuple[dict[str, str], dict[int, str]]:
    """The case's variables with every proxy on its own closed port, and port -> variable."""
    out, by_port = dict(env), {}
    for var, port in zip(proxy_vars(env), PORTS.ports[1:]):
        out[var] = rewrite(env[var], port)
        by_port[port] = var
    return out, by_port


def url_of(target: str, mapped: bool) -> str:
    """The URL a client is given: HOST:PORT and grpc:// as http://; ws/wss as http/https for Python."""
    if "://" not in target:
        return f"http://{target}/"
    scheme, rest = target.split("://", 1)
    if scheme == "grpc":
        scheme = "http"
    if mapped:
        scheme = {"ws": "http", "wss": "https"}.get(scheme, scheme)
    return f"{scheme}://{rest}"


def uses_cidr(case: dict) -> bool:
    return "/" in case["env"].get("no_proxy", "") + case["env"].get("NO_PROXY", "")


# ---- observers: each returns "via:VAR", "fails:VAR" or "direct" for a prepared environment ----


def port_of(hostport: str) -> int | None:
    m = re.search(r":(\d+)$", hostport)
    return int(m.group(1)) if m else None


@contextmanager
def environ(env: dict[str, str]) -> Iterator[None]:
    saved = dict(os.environ)
    for k in list(os.environ):
        if k.lower().endswith("_proxy") or k in ("REQUEST_METHOD", "RAY_grpc_enable_http_proxy"):
            del os.environ[k]
    os.environ.update(env)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


class Opened(Exception):
    def __init__(self, req: urllib.request.Request) -> None:
        super().__init__(req.host)
        self.req = req


class Recorder(urllib.request.BaseHandler):
    """Runs after ProxyHandler (order 100) and before the real HTTP handlers (500): records where urllib would
    connect, and stops."""

    handler_order = 200

    def http_open(self, req: urllib.request.Request) -> None:
        raise Opened(req)

    def https_open(self, req: urllib.request.Request) -> None:
        raise Opened(req)


def observe_urllib(env: dict[str, str], by_port: dict[int, str], url: str) -> str:
    with environ(env):
        opener = urllib.request.build_opener(urllib.request.ProxyHandler(), Recorder())
        try:
            opener.open(url, timeout=2)
        except Opened as e:
            port = port_of(e.req.host)
            if e.req.host != urllib.request.Request(url).host and port in by_port:
                return "via:" + by_port[port]
            return "direct"
        except urllib.error.URLError as e:  # "unknown url type: socks5": the proxy was chosen and cannot be used
            m = re.match(r"unknown url type: (\S+)", str(e.reason))
            chosen = [v for v in proxy_vars(env) if m and env[v].startswith(m.group(1) + "://")]
            return "fails:" + chosen[0] if len(chosen) == 1 else f"error: {e.reason}"
    return "direct"


def observe_requests(env: dict[str, str], by_port: dict[int, str], url: str) -> str:
    import requests
    from requests.utils import select_proxy

    with environ(env):
        proxies = requests.Session().merge_environment_settings(url, {}, None, None, None)["proxies"]
        proxy = select_proxy(url, proxies)
    if not proxy:
        return "direct"
    port = port_of(re.sub(r"/.*$", "", proxy.split("://")[-1]))
    return "via:" + by_port[port] if port in by_port else f"via unknown {proxy}"


def curl_version() -> tuple[tuple[int, ...], set[str]]:
    out = subprocess.run(["curl", "--version"], capture_output=True, text=True, check=True).stdout
    version = tuple(int(x) for x in out.split()[1].split("-")[0].split(".")[:3])
    protocols = set()
    for line in out.splitlines():
        if line.startswith("Protocols:"):
            protocols = set(line.split()[1:])
    return version, protocols


def observe_curl(env: dict[str, str], by_port: dict[int, str], url: str) -> str:
    cmd = ["curl", "-sv", "--max-time", "5", "-o", "/dev/null", "--connect-to", f"::127.0.0.1:{DIRECT_PORT}", url]
    p = subprocess.run(
        cmd, env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **env}, capture_output=True, text=True
    )
    log = p.stderr
    used = re.findall(r"Uses proxy env variable (\S+) ==", log)
    if "Unsupported proxy" in log:
        return "fails:" + next((v for v in used if v not in NO_VARS), "?")
    tried = [int(x) for x in re.findall(r"Trying 127\.0\.0\.1:(\d+)", log)]
    if not tried:
        return "error: " + log.strip().splitlines()[-1] if log.strip() else "error: no output"
    if tried[0] == DIRECT_PORT:
        return "direct"
    return "via:" + by_port.get(tried[0], f"unknown port {tried[0]}")


def observe(client: str, case: dict) -> str:
    """What the client does with the case's variables: via:VAR, fails:VAR, bypass:VAR or direct."""
    observer: Callable[[dict[str, str], dict[int, str], str], str] = {
        "curl": observe_curl,
        "urllib": observe_urllib,
        "requests": observe_requests,
    }[client]
    url = url_of(case["target"], mapped=client != "curl")
    env, by_port = prepared(case["env"])
    seen = observer(env, by_port, url)
    if seen != "direct":
        return seen
    # Direct: a bypass if taking one no_proxy variable away makes the client use a proxy.
    for var in NO_VARS:
        if var in env:
            without = {k: v for k, v in env.items() if k != var}
            if observer(without, by_port, url) != "direct":
                return "bypass:" + var
    return "direct"


def skip_reason(client: str, case: dict) -> str | None:
    if client == "curl":
        if not shutil.which("curl"):
            return "no curl on PATH"
        version, protocols = curl_version()
        scheme = case["target"].split("://")[0] if "://" in case["target"] else ""
        if scheme in ("ws", "wss") and (scheme not in protocols or version < (8, 4, 0)):
            return f"curl {'.'.join(map(str, version))} has no {scheme}:// (or predates the http_proxy fallback, 8.4)"
        if uses_cidr(case) and version < (7, 86, 0):
            return "curl before 7.86 has no CIDR in no_proxy"
    if client == "requests":
        try:
            import requests  # noqa: F401
        except ImportError:
            return "requests is not installed"
    return None


def accepted(client: str, expected: str) -> set[str]:
    # urllib picks a proxy it cannot speak and fails later, on the connection: choosing it is what shows here.
    if expected.startswith("fails:") and client in ("urllib", "requests"):
        return {expected, "via:" + expected.split(":", 1)[1]}
    return {expected}


PARAMS = [
    pytest.param(client, case, id=f"{i}-{client}-{case['name']}")
    for i, case in enumerate(CASES)
    for client in ("curl", "urllib", "requests")
]


@pytest.mark.parametrize(("client", "case"), PARAMS)
def test_client_follows_the_table(client: str, case: dict) -> None:
    why = skip_reason(client, case)
    if why:
        pytest.skip(why)
    expected = case["expect"][client]
    seen = observe(client, case)
    assert seen in accepted(client, expected), f"{case['name']}: {client} did {seen}, the table says {expected}"


def main() -> int:
    failed = skipped = passed = 0
    for i, case in enumerate(CASES):
        for client in ("curl", "urllib", "requests"):
            why = skip_reason(client, case)
            if why:
                skipped += 1
                continue
            seen = observe(client, case)
            if seen in accepted(client, case["expect"][client]):
                passed += 1
            else:
                failed += 1
                print(f"FAIL {i} {case['name']} / {client}: saw {seen}, table says {case['expect'][client]}")
    print(f"{passed} passed, {failed} failed, {skipped} skipped")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
