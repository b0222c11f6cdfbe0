"""Issue 26.9: a provider's HTTP answer is bounded in size and in total time. Before, only
each socket read had a timeout, so a server dripping a byte a second held that cloud's
poll for as long as it liked, and any size of answer was read into memory. A local server
plays the slow or huge cloud (nothing leaves this machine)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from gpuopt.providers import http_json
from gpuopt.providers.base import ProviderError

Behaviour = Callable[[BaseHTTPRequestHandler, threading.Event], None]


@contextmanager
def serving(behave: Behaviour) -> Iterator[str]:
    stop = threading.Event()

    class H(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            behave(self, stop)

        def log_message(self, *_a: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), H)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        stop.set()
        server.shutdown()
        server.server_close()


def drip(h: BaseHTTPRequestHandler, stop: threading.Event) -> None:
    """A 200 of 100 bytes of JSON, sent one byte a second (100 s in all)."""
    body = b'{"data": [' + b" " * 88 + b"]}"
    h.send_response(200)
    h.send_header("Content-Type", "application/json")
    h.send_header("Content-Length", str(len(body)))
    h.end_headers()
    for i in range(len(body)):
        if stop.wait(1.0):
            return
        try:
            h.wfile.write(body[i:i + 1])
            h.wfile.flush()
        except OSError:
            return


def huge(declared: bool) -> Behaviour:
    def behave(h: BaseHTTPRequestHandler, stop: threading.Event) -> None:
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        if declared:
            h.send_header("Content-Length", str(http_json.MAX_BODY_BYTES + 1))
        h.end_headers()
        chunk = b" " * (1 << 20)
        try:
            for _ in range(http_json.MAX_BODY_BYTES // len(chunk) + 2):
                if stop.is_set():
                    return
                h.wfile.write(chunk)
        except OSError:
            return

    return behave


def _session() -> object:
    return http_json.session(retry_total=0, backoff_factor=0)


def test_a_slow_drip_answer_is_given_up_at_the_request_deadline() -> None:
    with serving(drip) as url:
        start = time.monotonic()
        with pytest.raises(ProviderError, match="not complete within the request's deadline"):
            http_json.request_json(_session(), "vast", "GET", url,  # type: ignore[arg-type]
                                   deadline_s=2.0)
        # the drip takes 100 s; the deadline (plus one byte's wait) ends it
        assert time.monotonic() - start < 30


@pytest.mark.parametrize("declared", [True, False])
def test_an_answer_beyond_the_size_cap_is_refused(declared: bool) -> None:
    with serving(huge(declared)) as url, pytest.raises(ProviderError, match="larger than"):
        http_json.request_json(_session(), "vast", "GET", url)  # type: ignore[arg-type]


def test_retry_after_is_capped_at_the_backoff_maximum() -> None:
    calls: list[float] = []

    def throttled_once(h: BaseHTTPRequestHandler, _stop: threading.Event) -> None:
        calls.append(time.monotonic())
        first = len(calls) == 1
        body = b"{}" if not first else b"slow down"
        h.send_response(429 if first else 200)
        if first:
            h.send_header("Retry-After", "3600")
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        h.wfile.write(body)

    with serving(throttled_once) as url:
        s = http_json.session(retry_total=2, backoff_factor=0.1, backoff_max=1.0)
        assert http_json.request_json(s, "vast", "GET", url) == {}
    assert len(calls) == 2 and calls[1] - calls[0] < 30  # not an hour


def test_a_dripping_cloud_fails_at_the_poll_deadline_and_the_others_are_stored(
        tmp_path: Path) -> None:
    from gpuopt.orchestrator.prices.poll import poll_prices
    from gpuopt.orchestrator.store import open_store
    from gpuopt.providers.vast.provider import VastProvider
    from tests.orchestrator.prices.test_poll_hostile import BatchProvider
    from tests.orchestrator.store.conftest import make_offer

    now = datetime(2025, 7, 1, tzinfo=UTC)
    store = open_store(f"sqlite:///{tmp_path / 'gpuopt.db'}")
    try:
        with serving(drip) as url:
            start = time.monotonic()
            results = poll_prices(store, {
                "vast": VastProvider(api_url=url, api_key="k", retry_total=0),
                "aws": BatchProvider("aws", [make_offer("1.2", now)]),
            }, now, deadline_s=2.0)
            took = time.monotonic() - start
        assert results["vast"].status == "error"
        assert "no answer within the poll's deadline (2 s)" in str(results["vast"].error)
        assert results["aws"].status == "ok" and results["aws"].new == 1
        assert took < 30  # the drip alone would take 100 s
    finally:
        store.close()
