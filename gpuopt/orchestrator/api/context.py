"""What every request of the API and dashboard is handed (``app.state.ctx``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from gpuopt.orchestrator.api.auth import FailedAuthLimiter

if TYPE_CHECKING:
    from gpuopt.orchestrator.config.model import Settings
    from gpuopt.orchestrator.store import Store


def utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass
class ApiContext:
    store: Store
    settings: Settings
    upload_root: Path  # each remote submit's files go in a fresh directory here
    clock: Callable[[], datetime] = utc_now
    limiter: FailedAuthLimiter = field(default_factory=FailedAuthLimiter)
    session_secret: bytes = b""  # signs dashboard sessions (random per server start)
    session_secure: bool = False  # the session cookie only over HTTPS

    @property
    def max_upload_bytes(self) -> int:
        return int(self.settings.api.max_upload_mib) * 2**20
