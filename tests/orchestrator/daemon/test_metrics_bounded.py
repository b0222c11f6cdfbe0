"""Issue 26.9: 3,000 idle half-open connections to /metrics made 3,006 daemon threads
(one per connection, each waiting on its request line). The server's threads stay
bounded, /metrics still answers beside them, and a connection that sends nothing, or a
byte at a time, is closed at its head's deadline."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from gpuopt.orchestrator.daemon.bounded_http import Limits
from gpuopt.orchestrator.daemon.health import DaemonHealth
from gpuopt.orchestrator.daemon.metrics import MetricsServer
from gpuopt.orchestrator.store import open_store

IDLE = 3000


@pytest.fixture
def server(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[MetricsServer]:
    store = open_store(f"sqlite:///{tmp_path / 'gpuopt.db'}")
    limits = getattr(request, "param", None)
    kwargs = {"limits": limits} if limits is not None else {}
    srv = MetricsServer("127.0.0.1:0", store, DaemonHealth("test-node"), **kwargs)
    srv.start()
    yield srv
    srv.stop()
    store.close()


def _port(srv: MetricsServer) -> int:
    return int(srv.address.rpartition(":")[2])


def _get(port: int, path: str = "/metrics") -> tuple[int, bytes]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=30) as resp:
        return resp.status, resp.read()


def test_three_thousand_idle_connections_do_not_make_threads(server: MetricsServer) -> None:
    before = threading.active_count()
    port = _port(server)
    idle: list[socket.socket] = []
    try:
        for _ in range(IDLE):  # connected, never a byte sent: half-open as far as HTTP goes
            idle.append(socket.create_connection(("127.0.0.1", port), timeout=30))
        # served after every connection above was accepted (the kernel queues them in order)
        code, body = _get(port)
        assert code == 200 and b"gpuopt_store_up 1.0" in body
        assert threading.active_count() - before <= Limits().workers + 1
        assert server.server.open_connections() <= Limits().max_connections
        code, body = _get(port, "/healthz")
        assert code in (200, 503) and b'"node": "test-node"' in body
    finally:
        for s in idle:
            s.close()


def _closed_by_server(sock: socket.socket, within: float, trickle: bytes = b"") -> float:
    """Seconds until the server closed ``sock`` (sending ``trickle`` a byte every 0.1 s)."""
    start = time.monotonic()
    sock.settimeout(0.1)
    sent = 0
    while time.monotonic() - start < within:
        with contextlib.suppress(TimeoutError):
            if sock.recv(1024) == b"":
                return time.monotonic() - start
        if sent < len(trickle):
            try:
                sock.send(trickle[sent:sent + 1])
            except OSError:  # reset: closed
                return time.monotonic() - start
            sent += 1
    raise AssertionError(f"still open after {within} s")


@pytest.mark.parametrize("server", [Limits(head_timeout_s=0.5)], indirect=True)
def test_idle_and_slow_drip_connections_are_closed_at_the_head_deadline(
        server: MetricsServer) -> None:
    port = _port(server)
    with socket.create_connection(("127.0.0.1", port)) as quiet:
        assert _closed_by_server(quiet, within=20) >= 0.4
    drip = b"GET /metrics HTTP/1.1\r\nHost: x\r\n" + b"X-Slow: " + b"a" * 1000
    with socket.create_connection(("127.0.0.1", port)) as slow:
        # it keeps sending (a byte per 0.1 s, 100 s of it) and is closed at the deadline
        assert _closed_by_server(slow, within=20, trickle=drip) < 20
    assert _get(port)[0] == 200


@pytest.mark.parametrize("server", [Limits(max_connections=8)], indirect=True)
def test_a_flood_beyond_the_cap_evicts_the_oldest_and_a_scrape_gets_in(
        server: MetricsServer) -> None:
    port = _port(server)
    idle = [socket.create_connection(("127.0.0.1", port), timeout=30) for _ in range(50)]
    try:
        assert _get(port)[0] == 200
        assert server.server.open_connections() <= 8
    finally:
        for s in idle:
            s.close()


def test_an_oversized_head_is_refused(server: MetricsServer) -> None:
    port = _port(server)
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        with contextlib.suppress(OSError):
            s.sendall(b"GET /metrics HTTP/1.1\r\nX: " + b"a" * (Limits().max_head_bytes + 10))
        assert _closed_by_server(s, within=20) < 20
