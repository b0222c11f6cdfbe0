"""Bounded exponential backoff: how long to wait after the n-th consecutive failure, and
what is kept of those failures (``FailureState``, e.g. a weekly report's sends)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta


@dataclass(frozen=True, slots=True)
class FailureState:
    count: int  # consecutive failures (of one weekly report's (week, scope), ...)
    last_at: datetime
    last_error: str


@dataclass(frozen=True, slots=True)
class Backoff:
    first: timedelta = timedelta(minutes=5)
    factor: int = 2
    cap: timedelta = timedelta(hours=6)

    def delay(self, failures: int) -> timedelta:
        """Wait after the ``failures``-th consecutive failure: first, first x factor, ...,
        never more than ``cap``."""
        try:
            return min(self.cap, self.first * self.factor ** max(0, failures - 1))
        except OverflowError:  # far past the cap
            return self.cap
