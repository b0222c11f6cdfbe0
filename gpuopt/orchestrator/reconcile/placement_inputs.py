"""What placement decides from, loaded: the I/O around the pure policies.placement.

Loads the latest offers (store, else the embedded snapshot), the configuration's owned
reserved capacity and preemption defaults, and what gpuopt has observed, and hands them
to the placement policy:

- ``plan_spec``: `gpuopt plan` and `gpuopt submit` plan a spec on the prices of this
  moment;
- ``decide_placement``: the reconcile loop's decision for a job: its next attempt, or
  (a job under the deadline spot policy) whether the attempt it holds goes on. The
  decision is pure (policies.next_attempt: the budget left, one plan, the spot policy's
  live decision, the avoid list and its fallback); here are loaded the offers and the
  preemptions gpuopt observed, once per reconcile step (``TickInputs``), and per job its
  work left (from the last progress report), what its attempts cost (the ledger), what
  it holds, the places it should avoid and the availability history of the places it may
  hold spot in.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from typing import TYPE_CHECKING

from gpuopt.core.places import Place
from gpuopt.jobs.spec import JobSpec
from gpuopt.orchestrator.store.jobs_tables import AttemptRow, JobRow
from gpuopt.policies.avoid import avoid_set
from gpuopt.policies.index import OfferIndex
from gpuopt.policies.next_attempt import MIN_REMAINING, Decision, JobSoFar, NoPlace
from gpuopt.policies.placement import OwnedReserved, PlacementContext, Plan
from gpuopt.policies.spot.live import HOLDING_NOTHING, CurrentHold
from gpuopt.policies.spot.model import Kind
from gpuopt.providers.offer import Market
from gpuopt.providers.snapshot import Places

if TYPE_CHECKING:
    from gpuopt.jobs.estimate.calibration import Calibration
    from gpuopt.orchestrator.config.model import Settings
    from gpuopt.orchestrator.prices.current import CurrentOffers
    from gpuopt.orchestrator.store import Store
    from gpuopt.policies.spot.observed import Observed, SpotPlace
    from gpuopt.policies.spot.observed_signals import SignalInputs


# -- planning a spec (gpuopt plan, gpuopt submit) --------------------------------------
@dataclass(frozen=True, slots=True)
class PlannedJob:
    plan: Plan
    offers_source: str  # "store" or "snapshot"
    snapshot_as_of: date | None  # the oldest source date of the snapshot's offers
    offer_count: int
    snapshot_newest: date | None = None  # and the newest
    # the knobs off in the job that would make it fit, or fit cheaper (fit_advice.py)
    advice: tuple[str, ...] = ()
    # more nodes than resources.max_nodes would be cheaper / the only fit (policies.node_hint)
    nodes_hint: str | None = None
    # the data centres each "global" offer stands for (RunPod; policies/plan/places.py)
    places: Places = field(default_factory=dict)


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
    overrides.setdefault(
        "restart_overhead_hours", settings.placement.restart_overhead / timedelta(hours=1))
    overrides.setdefault("pessimistic_deadline", settings.placement.deadline_at_p90)
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


def executor_clouds(executor: str, settings: Settings) -> frozenset[str] | None:
    """The clouds a job run by ``executor`` may be placed on (None: any). The local
    executor's simulated runs keep to the clouds gpuopt has adapters for (a cloud priced
    only from SkyPilot's catalog is launchable only through SkyPilot, where `sky check`
    enables it); both within [clouds] enabled when that is set."""
    from gpuopt.providers.clouds import adapter_cloud_names

    enabled = frozenset(settings.clouds.enabled) if settings.clouds.enabled else None
    if executor != "local":
        return enabled
    local = frozenset(adapter_cloud_names())
    return local & enabled if enabled is not None else local


def executor_regions(executor: str) -> dict[str, frozenset[str]] | None:
    """Per cloud, the regions ``executor`` can launch in where it narrows them (SkyPilot:
    the AWS regions of the account's zone mapping); None: any region of any cloud."""
    if executor != "skypilot":
        return None
    from gpuopt.jobs.executors.sky_catalog import launchable_regions

    return launchable_regions() or None


def load_index(store: Store | None) -> tuple[OfferIndex, CurrentOffers]:
    from gpuopt.orchestrator.prices.current import current_offers_with_source

    current = current_offers_with_source(store)
    return OfferIndex.build(current.offers, current.places), current


def plan_spec(
    spec: JobSpec,
    settings: Settings,
    store: Store | None,
    now: datetime,
    submitted_at: datetime | None = None,
    observed: Mapping[Place, tuple[int, float]] | None = None,
    hint_nodes: bool = False,
    **overrides: object,
) -> PlannedJob:
    """``hint_nodes``: also say whether more nodes would pay (plans the job twice)."""
    from gpuopt.orchestrator.reconcile.measurements import load_calibration
    from gpuopt.policies.fit_advice import knob_advice
    from gpuopt.policies.node_hint import more_nodes_hint
    from gpuopt.policies.placement import plan_job

    if "calibration" not in overrides:  # what finished attempts measured (issue 17)
        overrides["calibration"] = load_calibration(store, spec)
    index, current = load_index(store)
    ctx = placement_context(
        settings, now, spec.deadline_at(submitted_at or now), observed, **overrides
    )
    plan = plan_job(spec, index, ctx)
    hint = more_nodes_hint(spec, index, ctx, plan) if hint_nodes else None
    return PlannedJob(plan, current.source, current.snapshot_as_of, len(current.offers),
                      snapshot_newest=current.snapshot_newest,
                      advice=knob_advice(spec, index, ctx, plan), nodes_hint=hint,
                      places=index.places)


# -- the next attempt of a job (the reconcile loop) ------------------------------------
def remaining_fraction(attempts: Sequence[AttemptRow]) -> float:
    """Work left, from the newest progress report ({"step", "total"}) of the job."""
    for a in reversed(attempts):
        if a.progress_step is not None and a.progress_total:
            return max(MIN_REMAINING, 1.0 - a.progress_step / a.progress_total)
    return 1.0


@dataclass(frozen=True, slots=True)
class TickInputs:
    """What every placement of one reconcile step reads, loaded once for the step: the
    offer index, the preemptions gpuopt observed (hazards) and the recent preemptions and
    failed launches per place (the avoid list), by executor kind.

    Loaded at the step's first placement, so a step that places nothing reads none of it;
    a job's own attempts that ended later in the same step are added to its avoid list by
    ``preemptions_for``; other jobs' are seen from the next step on."""

    now: datetime
    index: OfferIndex
    observed: Mapping[Place, tuple[int, float]]
    recent: tuple[tuple[int, str, Place, datetime], ...]  # (attempt id, executor, place, at)
    since: datetime  # the avoid window's start
    # per executor kind, the regions it can launch in where it narrows them (read once
    # per step: SkyPilot's AWS zone mapping); absent: any region
    regions: Mapping[str, Mapping[str, frozenset[str]]] = field(default_factory=dict)

    def preemptions_for(self, executor: str, attempts: Sequence[AttemptRow]
                        ) -> list[tuple[Place, datetime]]:
        from gpuopt.policies.avoid import counts_against_place

        seen = {i for i, *_ in self.recent}
        out = [(place, at) for _, ex, place, at in self.recent if ex == executor]
        out += [(Place(a.cloud, a.region, a.zone), a.ended_at) for a in attempts
                if a.id not in seen and a.ended_at is not None and a.ended_at >= self.since
                and counts_against_place(a.end_reason, a.failure_kind)]
        return out


def load_tick_inputs(store: Store, settings: Settings, now: datetime) -> TickInputs:
    from gpuopt.orchestrator.store.jobs_repo import recent_preemptions
    from gpuopt.orchestrator.store.ledger_repo import observed_preemptions

    since = now - settings.placement.avoid_window
    with store.session() as session:
        observed = observed_preemptions(session, now)
        recent = tuple(recent_preemptions(session, since))
    index, _current = load_index(store)
    sky = executor_regions("skypilot")
    return TickInputs(now, index, observed, recent, since,
                      {"skypilot": sky} if sky is not None else {})


def holding_of(a: AttemptRow | None, now: datetime) -> CurrentHold:
    """What the job holds through its open attempt ``a`` (None: nothing)."""
    if a is None:
        return HOLDING_NOTHING
    held_s = max(0.0, (now - a.started_at).total_seconds())
    if a.market == Market.SPOT.value:
        from gpuopt.orchestrator.reconcile.observing import attempt_place

        return CurrentHold(Kind.SPOT, attempt_place(a), held_s)
    return CurrentHold(Kind.ON_DEMAND, None, held_s)


def decide_placement(
    store: Store,
    spec: JobSpec,
    job: JobRow,
    attempts: Sequence[AttemptRow],
    settings: Settings,
    tick: TickInputs,
    spent_micros: int,
    also_avoid: frozenset[Place] = frozenset(),
    calibration: Calibration | None = None,
    held: AttemptRow | None = None,
    probe_s: float | None = None,
    tries_left: int | None = None,
) -> Decision:
    """``tick``: this step's offers and observations (loaded once per step);
    ``also_avoid``: places the job itself should not retry now (policies.lifecycle:
    where its last launches found no capacity), on top of repeated preemptions;
    ``calibration``: what finished attempts of this job's model measured (issue 17);
    ``held``: the job's open attempt (a governed job is decided for while it runs);
    ``probe_s``: a probe's provisioning time when the job's executor probes (make before
    break, orchestrator/reconcile/probing.py), None when a move stops first;
    ``tries_left``: the spot tries this step can still make (failover), None: no count.
    For a job under the deadline spot policy, the availability history of the places
    it may hold spot in is loaded here (orchestrator.store.availability)."""
    from gpuopt.core.money import from_micros
    from gpuopt.policies.next_attempt import (
        SpotPolicyInputs,
        decide_next_attempt,
        plan_next_attempt,
    )

    preemptions = tick.preemptions_for(job.executor, attempts)
    avoid = avoid_set(preemptions, tick.now, settings.placement.avoid_window) | also_avoid
    so_far = JobSoFar(submitted_at=job.submitted_at, deadline_at=job.deadline_at,
                      budget_micros=job.budget_micros, spent_micros=spent_micros,
                      fraction_left=remaining_fraction(attempts), avoid=avoid,
                      holding=holding_of(held, tick.now))
    ctx = placement_context(settings, tick.now, job.deadline_at, tick.observed, top=5,
                            calibration=calibration,
                            clouds=executor_clouds(job.executor, settings),
                            regions_by_cloud=tick.regions.get(job.executor))
    held_price = (from_micros(held.price_per_hour_micros)
                  if held is not None and held.price_per_hour_micros is not None else None)
    planned = plan_next_attempt(spec, tick.index, ctx, so_far, held_price)
    spot = None
    if not isinstance(planned, NoPlace) and planned.locations:
        from gpuopt.orchestrator.reconcile.observing import own_observations
        from gpuopt.orchestrator.store.availability import load_observations

        with store.session() as session:
            seen = load_observations(session, planned.spot_places, job.submitted_at)
        own = own_observations(attempts)
        signals = None
        if settings.spot.signals:  # the job's own apart: others' preemptions are signals
            signals = signal_inputs(store, own)
        else:  # the job's own only: other jobs' launches and ends are signals, off
            seen = own_only(seen, own)
        spot = SpotPolicyInputs(
            policy=settings.placement.spot_policy,
            tick_s=settings.daemon.reconcile_interval / timedelta(seconds=1),
            restart_overhead_s=settings.placement.restart_overhead / timedelta(seconds=1),
            observations=seen, probe_s=probe_s, tries_left=tries_left, signals=signals)
    return decide_next_attempt(spec, tick.index, planned, so_far, spot)


def own_only(seen: Mapping[SpotPlace, Sequence[Observed]],
             own: Sequence[tuple[SpotPlace, Observed]]) -> dict[SpotPlace, list[Observed]]:
    """Each place's stored observations without other jobs' launches and ends, with the
    job's own (``own``, from its attempts) added (observed_signals.own_history)."""
    from gpuopt.policies.spot.observed_signals import own_history

    mine: dict[SpotPlace, list[Observed]] = {}
    for place, ob in own:
        mine.setdefault(place, []).append(ob)
    return {place: own_history(obs, mine.get(place, [])) for place, obs in seen.items()}


def signal_inputs(store: Store, own: Sequence[tuple[SpotPlace, Observed]]) -> SignalInputs:
    """What ``[spot] signals`` reads beside the stored observations: the job's own
    (``own``, from its attempts) and, per cloud, the last price poll that answered."""
    from gpuopt.orchestrator.store.daemon_state import list_polls
    from gpuopt.policies.spot.observed_signals import SignalInputs

    mine: dict[SpotPlace, list[Observed]] = {}
    for place, ob in own:
        mine.setdefault(place, []).append(ob)
    polled = {p.cloud: p.last_ok_at for p in list_polls(store) if p.last_ok_at is not None}
    return SignalInputs(own=mine, polled_at=polled)
