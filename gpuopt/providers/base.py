"""The provider interface every cloud adapter implements.

An adapter turns one cloud's own APIs into :class:`~gpuopt.providers.offer.Offer` rows. Its
module keeps *fetch* (SDK calls, paging, retries) and *parse* (pure functions over the
cloud's wire payloads) apart, so parsers are tested on recorded payloads. Adapters never
rank, filter by job, or decide anything: that is policy.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

from gpuopt.core.errors import GpuoptError, UserError
from gpuopt.providers.offer import Offer


class CredentialsMissing(UserError):
    """The cloud's SDK credential chain found nothing; the cloud is skipped."""


class ProviderError(GpuoptError):
    """The cloud answered with an error we could not retry past (throttled, 5xx, denied)."""


@dataclass(frozen=True, slots=True)
class FetchResult:
    cloud: str
    offers: tuple[Offer, ...]
    # Human-readable notes (e.g. "eu-west-9: no GPU instance types offered").
    warnings: tuple[str, ...] = field(default=())
    # Where this fetch lists spot offers completely: the (region, instance type) pairs the
    # cloud was asked about and answered for. A spot offer a previous poll listed in such
    # a pair and missing now is gone; outside them (a region that failed or was not
    # polled, a type not asked) a missing offer proves nothing. Empty: nothing complete.
    spot_scope: frozenset[tuple[str, str]] = field(default=frozenset())


class Provider(Protocol):
    """One cloud. Construction is cheap and does no I/O."""

    cloud: str

    def check_credentials(self) -> None:
        """Raise CredentialsMissing (one clear line) when the SDK chain has nothing."""

    def fetch(self, now: datetime, regions: Sequence[str] | None = None) -> FetchResult:
        """Poll the cloud and return every in-scope offer, priced as of ``now``."""
