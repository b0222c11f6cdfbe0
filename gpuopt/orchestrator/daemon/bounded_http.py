"""A small HTTP server whose threads and connections are bounded, for /metrics and /healthz.

``http.server.ThreadingHTTPServer`` starts a thread per connection, and that thread waits
on the request line for as long as the client keeps the connection open: 3,000 idle
half-open connections made 3,006 daemon threads (issue 26.9). Here:

- one selector thread accepts connections and reads each request's head (up to
  ``MAX_HEAD_BYTES``) without blocking; a connection takes a worker only once its whole
  head has arrived, so idle and slow-drip connections never hold a thread;
- a connection whose head is not complete ``HEAD_TIMEOUT_S`` after it was accepted is
  closed, whatever it keeps trickling (a total deadline, not a per-read one);
- at most ``MAX_CONNECTIONS`` connections are open at once (waiting for their head,
  queued or answered); beyond that the one waiting longest is closed to make room, so a
  flood cannot lock a scraper out for long;
- ``WORKERS`` threads answer (a pool); writing an answer to a client that does not read
  gives up after ``WRITE_TIMEOUT_S``.

Requests are GET-style (no body is read); each connection carries one request
(HTTP/1.0 semantics, ``Connection: close``). The handler is a
``BaseHTTPRequestHandler`` subclass, as for the standard library's servers.
"""

from __future__ import annotations

import contextlib
import io
import logging
import selectors
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

log = logging.getLogger("gpuopt.daemon.metrics")

# A Prometheus scrape or a health probe sends its head at once (a few hundred bytes); a
# second is plenty on a loaded host, five leave room for a slow network.
HEAD_TIMEOUT_S = 5.0
MAX_HEAD_BYTES = 16 * 1024  # Prometheus' own server takes 1 MiB of headers; ~300 B needed
MAX_CONNECTIONS = 256
WORKERS = 4  # collect() reads the store; a scrape every 15 s needs one
WRITE_TIMEOUT_S = 10.0
LISTEN_BACKLOG = 128


@dataclass(frozen=True, slots=True)
class Limits:
    head_timeout_s: float = HEAD_TIMEOUT_S
    max_head_bytes: int = MAX_HEAD_BYTES
    max_connections: int = MAX_CONNECTIONS
    workers: int = WORKERS
    write_timeout_s: float = WRITE_TIMEOUT_S


@dataclass(slots=True)
class _Pending:
    sock: socket.socket
    address: Any
    deadline: float
    head: bytearray = field(default_factory=bytearray)


class BoundedHTTPServer:
    """Serve ``handler`` on ``(host, port)`` (port 0: any free one) within ``limits``."""

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler],
                 limits: Limits | None = None) -> None:
        self.limits = limits or Limits()
        self.handler = handler
        self.listener = socket.create_server(address, backlog=LISTEN_BACKLOG,
                                             family=_family(address[0]))
        self.listener.setblocking(False)
        self.server_address = self.listener.getsockname()
        self._pending: dict[int, _Pending] = {}  # fd -> connection waiting for its head
        self._busy = 0  # connections handed to the pool, not yet closed
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._wake_r, self._wake_w = socket.socketpair()
        self._pool = ThreadPoolExecutor(max_workers=self.limits.workers,
                                        thread_name_prefix="gpuopt-metrics-worker")
        self._thread = threading.Thread(target=self._serve, name="gpuopt-metrics",
                                        daemon=True)

    # -- life cycle ----------------------------------------------------------------------

    def start(self) -> None:
        self._thread.start()

    def shutdown(self) -> None:
        """Stop accepting, close every open connection, wait for the workers."""
        self._stop.set()
        with contextlib.suppress(OSError):
            self._wake_w.send(b"x")
        if self._thread.is_alive():
            self._thread.join()
        self._pool.shutdown(wait=True, cancel_futures=True)
        for p in list(self._pending.values()):
            _close(p.sock)
        self._pending.clear()
        for s in (self.listener, self._wake_r, self._wake_w):
            _close(s)

    def open_connections(self) -> int:
        """Connections open now (waiting for their head, queued or being answered)."""
        with self._lock:
            return len(self._pending) + self._busy

    # -- the selector thread -------------------------------------------------------------

    def _serve(self) -> None:
        with selectors.DefaultSelector() as sel:
            sel.register(self.listener, selectors.EVENT_READ, "accept")
            sel.register(self._wake_r, selectors.EVENT_READ, "wake")
            while not self._stop.is_set():
                for key, _events in sel.select(timeout=self._next_timeout()):
                    if key.data == "accept":
                        self._accept(sel)
                    elif key.data == "read":
                        self._read(sel, key.fd)
                self._expire(sel)

    def _next_timeout(self) -> float:
        if not self._pending:
            return 1.0
        soonest = min(p.deadline for p in self._pending.values())
        return max(0.0, min(1.0, soonest - time.monotonic()))

    def _accept(self, sel: selectors.BaseSelector) -> None:
        for _ in range(LISTEN_BACKLOG):  # drain what the kernel queued, then select again
            try:
                sock, address = self.listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as err:  # EMFILE and the like: keep serving what is open
                log.warning("metrics server: accept failed: %s", err)
                return
            sock.setblocking(False)
            if self.open_connections() >= self.limits.max_connections:
                self._evict_oldest(sel)
            if self.open_connections() >= self.limits.max_connections:
                _close(sock)  # every slot is being answered: no room for a new one
                continue
            pending = _Pending(sock, address, time.monotonic() + self.limits.head_timeout_s)
            self._pending[sock.fileno()] = pending
            sel.register(sock, selectors.EVENT_READ, "read")

    def _evict_oldest(self, sel: selectors.BaseSelector) -> None:
        if self._pending:
            fd = min(self._pending, key=lambda f: self._pending[f].deadline)
            self._drop(sel, fd)

    def _read(self, sel: selectors.BaseSelector, fd: int) -> None:
        p = self._pending.get(fd)
        if p is None:
            return
        try:
            chunk = p.sock.recv(4096)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            chunk = b""
        if not chunk:
            self._drop(sel, fd)
            return
        p.head += chunk
        end = p.head.find(b"\r\n\r\n")
        if end < 0:
            end = p.head.find(b"\n\n")
        if end < 0:
            if len(p.head) > self.limits.max_head_bytes:
                self._drop(sel, fd)
            return
        sel.unregister(p.sock)
        del self._pending[fd]
        with self._lock:
            self._busy += 1
        try:
            self._pool.submit(self._answer, p)
        except RuntimeError:  # shutting down
            self._done(p.sock)

    def _expire(self, sel: selectors.BaseSelector) -> None:
        now = time.monotonic()
        for fd in [fd for fd, p in self._pending.items() if p.deadline <= now]:
            self._drop(sel, fd)

    def _drop(self, sel: selectors.BaseSelector, fd: int) -> None:
        p = self._pending.pop(fd)
        with contextlib.suppress(KeyError, ValueError):
            sel.unregister(p.sock)
        _close(p.sock)

    # -- a worker ------------------------------------------------------------------------

    def _answer(self, p: _Pending) -> None:
        try:
            p.sock.setblocking(True)
            p.sock.settimeout(self.limits.write_timeout_s)
            _OneRequest(p.sock, bytes(p.head), p.address, self, self.handler)
        except Exception:  # a client that went away, a handler bug: that request only
            log.debug("metrics server: request failed", exc_info=True)
        finally:
            self._done(p.sock)

    def _done(self, sock: socket.socket) -> None:
        _close(sock)
        with self._lock:
            self._busy -= 1


class _OneRequest:
    """Runs ``handler`` on one connection whose head was read already."""

    def __init__(self, sock: socket.socket, head: bytes, address: Any, server: Any,
                 handler: type[BaseHTTPRequestHandler]) -> None:
        class Once(handler):  # type: ignore[valid-type, misc]
            def setup(self) -> None:
                super().setup()
                self.rfile = io.BytesIO(head)  # the head; no body is read

        Once(sock, address, server)


def _family(host: str) -> socket.AddressFamily:
    return socket.AF_INET6 if ":" in host else socket.AF_INET


def _close(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.close()
