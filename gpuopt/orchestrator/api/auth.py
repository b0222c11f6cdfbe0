"""Who a request is: ``Authorization: Bearer <token>`` (or the dashboard's session
cookie), looked up by the token's SHA-256 on every request, so a revoked token stops at
once. Failed attempts are rate-limited per client address: after MAX_FAILURES within
WINDOW_S, that address gets 429 (with Retry-After) until the window has passed."""

from __future__ import annotations

import threading
import time
from collections import deque
from dataclasses import dataclass, field

MAX_FAILURES = 10
WINDOW_S = 60.0
MAX_TRACKED = 10_000  # addresses remembered at most (the oldest forgotten first)


@dataclass
class FailedAuthLimiter:
    """Failed authentications per client address in a sliding window (thread-safe)."""

    max_failures: int = MAX_FAILURES
    window_s: float = WINDOW_S
    clock: object = time.monotonic
    _seen: dict[str, deque[float]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def _now(self) -> float:
        return float(self.clock())  # type: ignore[operator]

    def retry_after(self, client: str) -> float | None:
        """Seconds until ``client`` may try again (None: it may now)."""
        now = self._now()
        with self._lock:
            times = self._seen.get(client)
            if not times:
                return None
            while times and times[0] <= now - self.window_s:
                times.popleft()
            if len(times) < self.max_failures:
                return None
            return max(1.0, times[0] + self.window_s - now)

    def failed(self, client: str) -> None:
        now = self._now()
        with self._lock:
            if client not in self._seen and len(self._seen) >= MAX_TRACKED:
                self._seen.pop(next(iter(self._seen)))
            times = self._seen.setdefault(client, deque())
            times.append(now)
            while len(times) > self.max_failures:
                times.popleft()
