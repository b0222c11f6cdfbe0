"""One price poll: every enabled cloud fetched concurrently, validated, changes stored.

A cloud that raises, or has no credentials, is reported and skipped; the others are
stored regardless, and nothing already stored is ever deleted. Beside a cloud's prices,
in the same transaction, its spot offers that went away or came back (and their placement
scores) are recorded in the availability history (orchestrator.store.offer_listing).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import TYPE_CHECKING

from gpuopt.providers.base import CredentialsMissing, FetchResult, Provider
from gpuopt.providers.extras import MissingExtra
from gpuopt.providers.offer import Offer

if TYPE_CHECKING:
    from gpuopt.orchestrator.store import Store

log = logging.getLogger("gpuopt.prices")


@dataclass(slots=True)
class CloudPollResult:
    cloud: str
    status: str = "ok"  # "ok" | "skipped" (no credentials) | "error"
    new: int = 0
    changed: int = 0
    unchanged: int = 0
    rejected: int = 0
    held: int = 0  # new series far outside their GPU's range, awaiting a second poll
    error: str | None = None
    warnings: tuple[str, ...] = ()
    rejections: tuple[str, ...] = ()
    changes: tuple[tuple[Offer, Decimal], ...] = field(default=())

    @property
    def failed(self) -> bool:
        return self.status != "ok"


ProgressCallback = Callable[[str, str], None]  # (cloud, "fetching" | "storing" | "done")


# A cloud's whole fetch (every region and page, retries included) gets this long; the
# poll then reports it as failed and stores the others. Real fetches take seconds to a
# couple of minutes (AWS's price list over many regions is the longest); the daemon polls
# every 10 minutes by default, so a stuck cloud cannot hold the next poll back.
POLL_DEADLINE_S = 300.0


def _fetch(provider: Provider, now: datetime, regions: Sequence[str] | None) -> FetchResult:
    provider.check_credentials()
    return provider.fetch(now, regions)


def poll_prices(
    store: Store,
    providers: Mapping[str, Provider | Exception],
    now: datetime,
    regions: Mapping[str, Sequence[str] | None] | None = None,
    on_progress: ProgressCallback | None = None,
    deadline_s: float = POLL_DEADLINE_S,
) -> dict[str, CloudPollResult]:
    """Poll every provider concurrently; store each cloud's changes as its fetch completes.

    ``providers`` maps cloud -> adapter, or -> the exception met while loading it.
    Writes happen on the calling thread, one transaction per cloud. A cloud that has not
    answered ``deadline_s`` after the poll began is reported failed ("no answer within
    the poll's deadline"); its fetch goes on in a daemon thread whose answer is dropped
    (a thread cannot be killed; its own requests are bounded, providers/http_json.py).
    """
    import queue
    import threading
    import time

    regions = regions or {}
    results: dict[str, CloudPollResult] = {}
    notify = on_progress or (lambda _c, _s: None)
    answers: queue.Queue[tuple[str, FetchResult | BaseException]] = queue.Queue()
    waiting: set[str] = set()

    def run(cloud: str, provider: Provider) -> None:
        try:
            answers.put((cloud, _fetch(provider, now, regions.get(cloud))))
        except BaseException as err:  # isolation: reported by the polling thread
            answers.put((cloud, err))

    deadline = time.monotonic() + deadline_s
    for cloud, provider in providers.items():
        if isinstance(provider, MissingExtra):  # not installed: like no credentials
            results[cloud] = CloudPollResult(cloud, status="skipped", error=str(provider))
            notify(cloud, "done")
            continue
        if isinstance(provider, Exception):
            results[cloud] = CloudPollResult(cloud, status="error", error=str(provider))
            notify(cloud, "done")
            continue
        notify(cloud, "fetching")
        waiting.add(cloud)
        threading.Thread(target=run, args=(cloud, provider), name=f"gpuopt-poll-{cloud}",
                         daemon=True).start()
    while waiting:
        try:  # answers already in are taken even after the deadline
            cloud, outcome = answers.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            break
        waiting.discard(cloud)
        results[cloud] = _outcome(store, cloud, outcome, now, notify)
    for cloud in sorted(waiting):
        log.warning("%s: price poll gave no answer within %g s; given up", cloud, deadline_s)
        results[cloud] = CloudPollResult(
            cloud, status="error",
            error=f"no answer within the poll's deadline ({deadline_s:g} s); given up")
        notify(cloud, "done")
    return {c: results[c] for c in providers}


def _outcome(store: Store, cloud: str, outcome: FetchResult | BaseException, now: datetime,
             notify: ProgressCallback) -> CloudPollResult:
    if isinstance(outcome, CredentialsMissing):  # the caller reports every result, once
        result = CloudPollResult(cloud, status="skipped", error=str(outcome))
    elif isinstance(outcome, BaseException):  # one cloud's failure is only reported
        log.debug("%s: price poll failed", cloud, exc_info=outcome)
        result = CloudPollResult(cloud, status="error",
                                 error=f"{type(outcome).__name__}: {outcome}")
    else:
        notify(cloud, "storing")
        result = _store(store, cloud, outcome, now)
    notify(cloud, "done")
    return result


def _store(store: Store, cloud: str, fetched: FetchResult, now: datetime) -> CloudPollResult:
    return store_fetch(store, cloud, fetched, now)


def store_fetch(store: Store, cloud: str, fetched: FetchResult, now: datetime, *,
                keep_older: bool = False, availability: bool = True) -> CloudPollResult:
    """Store one cloud's fetched offers in one transaction. ``keep_older``: see
    record_offers; ``availability``: record the spot listing's comings and goings (an API
    poll's view of now; a catalog file's rows are not)."""
    from gpuopt.orchestrator.store.offer_listing import previous_listing, record_poll_observations
    from gpuopt.orchestrator.store.price_history import record_offers

    offers = [o for o in fetched.offers if o.cloud == cloud]
    foreign = len(fetched.offers) - len(offers)
    try:
        with store.transaction() as session:
            # What the previous poll listed is read before this one's prices move it;
            # the availability observations go in under a savepoint that never fails this.
            before = previous_listing(session, cloud, fetched, now) if availability else None
            summary = record_offers(session, offers, now=now, keep_older=keep_older)
            if before is not None:
                record_poll_observations(session, cloud, offers, before, now)
    except Exception as err:
        log.debug("%s: storing prices failed", cloud, exc_info=True)
        return CloudPollResult(cloud, status="error", error=f"store: {type(err).__name__}: {err}")
    warnings = list(fetched.warnings)
    if foreign:
        warnings.append(f"{foreign} offers of another cloud ignored")
    if summary.older:
        warnings.append(f"{summary.older} prices older than the stored ones: kept in the "
                        f"history, the newer price stays current")
    return CloudPollResult(
        cloud,
        new=summary.new,
        changed=summary.changed,
        unchanged=summary.unchanged,
        rejected=len(summary.rejected),
        held=len(summary.held),
        warnings=tuple(warnings),
        rejections=tuple(r.describe() for r in summary.rejected)
        + tuple(f"held for confirmation: {r.describe()}" for r in summary.held),
        changes=tuple(summary.changes),
    )


def load_providers(clouds: Sequence[str]) -> dict[str, Provider | Exception]:
    """Adapter instances for ``clouds``; a cloud whose adapter will not import (or whose SDK
    extra is not installed) maps to the error."""
    from gpuopt.providers.extras import MissingExtra
    from gpuopt.providers.registry import ProviderUnavailable, load_provider

    out: dict[str, Provider | Exception] = {}
    for cloud in clouds:
        try:
            out[cloud] = load_provider(cloud)
        except (ProviderUnavailable, MissingExtra) as err:
            out[cloud] = err
    return out
