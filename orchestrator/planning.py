"""Plan a job on the prices of this moment: the I/O around policies.placement.

Loads the latest offers (store, else the embedded snapshot), the configuration's owned
reserved capacity and preemption defaults, and what gpuopt has observed, then hands
them to the pure placement policy. `gpuopt plan`, `gpuopt submit` and the reconcile
loop all plan through here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date, datetime
from typing import TYPE_CHECKING

from gpuopt.core.places import Place
from gpuopt.jobs.spec import JobSpec
from gpuopt.policies.placement import OwnedReserved, PlacementContext, Plan

if TYPE_CHECKING:
    from gpuopt.orchestrator.config.model import Settings
    from gpuopt.orchestrator.store import Store
    from gpuopt.policies.index import OfferIndex


@dataclass(frozen=True, slots=True)
class PlannedJob:
    plan: Plan
    offers_source: str  # "store" or "snapshot"
    snapshot_as_of: date | None
    offer_count: int


def placement_context(
    settings: Settings,
    now: datetime,
    deadline_at: datetime | None,
    observed: Mapping[Place, tuple[int, float]] | None = None,
    **overrides: object,
) -> PlacementContext:
    # [clouds] enabled narrows every plan to the clouds this installation launches on
    # (unset or empty: any, as the local executor runs jobs whatever cloud priced them).
    overrides.setdefault(
        "clouds", frozenset(settings.clouds.enabled) if settings.clouds.enabled else None)
    return PlacementContext(
        now=now,
        deadline_at=deadline_at,
        observed_preemptions=dict(observed or {}),
        default_preemptions={k: v for k, v in settings.placement.preemption_rates.items()},
        owned_reserved=tuple(
            OwnedReserved(r.cloud, r.region, r.instance_type, r.count) for r in settings.reserved
        ),
        **overrides,  # type: ignore[arg-type]
    )


def load_index(store: Store | None) -> tuple[OfferIndex, str, date | None, int]:
    from gpuopt.orchestrator.prices.current import current_offers_with_source
    from gpuopt.policies.index import OfferIndex

    current = current_offers_with_source(store)
    return OfferIndex.build(current.offers), current.source, current.snapshot_as_of, len(
        current.offers
    )


def plan_spec(
    spec: JobSpec,
    settings: Settings,
    store: Store | None,
    now: datetime,
    submitted_at: datetime | None = None,
    observed: Mapping[Place, tuple[int, float]] | None = None,
    **overrides: object,
) -> PlannedJob:
    from gpuopt.orchestrator.telemetry import load_calibration
    from gpuopt.policies.placement import plan_job

    if "calibration" not in overrides:  # what finished attempts measured (issue 17)
        overrides["calibration"] = load_calibration(store, spec)
    index, source, as_of, count = load_index(store)
    ctx = placement_context(
        settings, now, spec.deadline_at(submitted_at or now), observed, **overrides
    )
    return PlannedJob(plan_job(spec, index, ctx), source, as_of, count)
