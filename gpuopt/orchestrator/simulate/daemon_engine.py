"""`gpuopt simulate --engine daemon`: one scenario through the real daemon path.

Where the replay (policies/spot/replay.py) is the model alone, this runs what the daemon
runs: a throwaway store (SQLite in a temporary GPUOPT_HOME, migrated as the daemon's),
one job submitted as `gpuopt submit` stores it, the real reconcile step
(orchestrator.reconcile.step.reconcile_once) once per tick, its real placement and spot
policy, and an executor double (trace_executor.TraceExecutor) answering launches and
preemptions from the traces on a virtual clock. The result is the replay's SimResult:

- the offers are one spot offer per trace (zones ``us-east-1a``, ``us-east-1b``, ... in
  trace order) and one on-demand offer, all the same instance type, recorded in the
  store's price history at the start;
- the job is a ``spot: auto`` fine-tune with the scenario's deadline whose plan estimate
  on that GPU is the task length (``workload.mfu`` solved for it, checked to 1e-6 s);
- the settings: ``[daemon] reconcile_interval`` = the tick, ``[placement]
  restart_overhead`` and ``spot_policy`` = the scenario's and the policy asked for;
- cost: the ledger (the job's attempts' ``cost_micros``); finish time: the double's;
  decisions per tick: the attempt launched at that step (a failed spot launch counts as
  its ``spot:<zone>``, as the replay counts it), else the attempt held through it, else
  nothing; ``failed_at``: the ticks of failed launches.
"""

from __future__ import annotations

import math
import os
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING

from gpuopt.orchestrator.simulate.trace_executor import TRACE_EXECUTOR, TraceExecutor, VirtualClock
from gpuopt.policies.spot.model import NOTHING, ON_DEMAND, TIME_TOLERANCE_S, Hold, spot
from gpuopt.policies.spot.probe import DEFAULT_PROBE_S, DEFAULT_PROBES_PER_TICK
from gpuopt.policies.spot.replay import Scenario, SimResult, SimulationError
from gpuopt.policies.spot.replay_signals import SignalModel

if TYPE_CHECKING:
    from gpuopt.jobs.spec import JobSpec
    from gpuopt.orchestrator.config.model import Settings
    from gpuopt.orchestrator.store import Store
    from gpuopt.orchestrator.store.jobs_tables import AttemptRow
    from gpuopt.providers.offer import Offer

# Virtual time of tick 0 (any whole second: the store keeps times to the microsecond).
START = datetime(2026, 1, 5, 0, 0, tzinfo=UTC)
CLOUD, REGION = "aws", "us-east-1"
INSTANCE_TYPE, GPU = "p3.2xlarge", "V100"  # the traces' instance (spot-traces v100_1)
VCPUS, RAM_GIB = 8.0, 61.0
TASK_TOLERANCE_S = 1e-6
_SEED_TOKENS = 10**9
HALF_CENT = Decimal("0.005")


def zone_names(n: int) -> list[str]:
    """``us-east-1a``, ``us-east-1b``, ...: AWS zone names that sort in trace order."""
    if not 0 < n <= 26:
        raise ValueError(f"the daemon engine names up to 26 zones, not {n}")
    return [f"{REGION}{chr(ord('a') + i)}" for i in range(n)]


def max_ticks(sc: Scenario) -> int:
    """The replay's bound under the launch information model, and the step after it
    (the reconcile step notices an attempt's success at the next tick)."""
    return 2 * (sc.deadline_ticks
                + 2 * math.ceil((sc.task_s + sc.restart_overhead_s) / sc.gap_s) + 2) + 1


def run_daemon(sc: Scenario, policy_name: str,
               progress: Callable[[int], None] | None = None,
               trail: list[str] | None = None, probe_s: float | None = None,
               signals: SignalModel | None = None,
               probes_per_tick: int = DEFAULT_PROBES_PER_TICK) -> SimResult:
    """Replay ``sc`` through the daemon's reconcile step with ``policy_name`` as its
    spot policy; ``progress(t)`` is called after each step; ``trail`` (if given) gets
    the job's events and waits, ``tick <t>: <kind>: <message>``. ``probe_s``: the
    daemon probes (``[spot] probe``, the replay's ``launch-probe`` with that
    provisioning time); None: it stops, then launches (``launch``). ``signals``: the
    daemon reads the clouds' signals (``[spot] signals``), which this model says were
    read each tick, recorded as its polls would (signal_polls.py): with ``probe_s``, the
    replay's ``launch-probe+signals``. SimulationError when
    the daemon ends the job without finishing it or never finishes it, or started the
    job on a probe's instance while another attempt ran it."""
    with _simulation_home() as home:
        from gpuopt.orchestrator.store import open_store

        store = open_store(f"sqlite:///{home / 'gpuopt.db'}")
        try:
            return _run(store, home, sc, policy_name, progress, trail, probe_s, signals,
                        probes_per_tick)
        finally:
            store.close()


@contextmanager
def _simulation_home() -> Iterator[Path]:
    """A temporary GPUOPT_HOME for the run (secrets, attempts, drills live there)."""
    before = os.environ.get("GPUOPT_HOME")
    with tempfile.TemporaryDirectory(prefix="gpuopt-simulate-") as tmp:
        os.environ["GPUOPT_HOME"] = tmp
        try:
            yield Path(tmp)
        finally:
            if before is None:
                os.environ.pop("GPUOPT_HOME", None)
            else:
                os.environ["GPUOPT_HOME"] = before


def simulation_settings(sc: Scenario, policy_name: str,
                        probe_s: float | None = None, signals: bool = False,
                        probes_per_tick: int = DEFAULT_PROBES_PER_TICK) -> Settings:
    from gpuopt.orchestrator.config.model import Settings

    return Settings.model_validate({
        "spot": {"probe": probe_s is not None,
                 "probe_seconds": probe_s if probe_s is not None else DEFAULT_PROBE_S,
                 "probes_per_step": probes_per_tick,
                 "signals": signals},
        "clouds": {"enabled": [CLOUD]},
        "daemon": {"reconcile_interval": timedelta(seconds=sc.gap_s)},
        "placement": {"restart_overhead": timedelta(seconds=sc.restart_overhead_s),
                      "spot_policy": policy_name,
                      # a simulated run takes exactly its estimate
                      "deadline_at_p90": False},
    })


def simulation_offers(sc: Scenario, zones: Sequence[str], at: datetime) -> list[Offer]:
    from gpuopt.providers.hardware import GPUS
    from gpuopt.providers.offer import Market, Offer

    def offer(market: Market, zone: str | None, price: Decimal) -> Offer:
        return Offer(cloud=CLOUD, region=REGION, zone=zone, instance_type=INSTANCE_TYPE,
                     gpu=GPU, gpu_count=1, gpu_memory_gib=GPUS[GPU].memory_gib, vcpus=VCPUS,
                     ram_gib=RAM_GIB, market=market, price_per_hour=price, observed_at=at,
                     source=f"api:{CLOUD}")

    return [offer(Market.SPOT, z, p) for z, p in zip(zones, sc.spot_prices, strict=True)] + [
        offer(Market.ON_DEMAND, None, sc.on_demand_price)]


def _record_offers(store: Store, offers: Sequence[Offer], at: datetime) -> None:
    from gpuopt.orchestrator.store.price_history import record_offers

    with store.transaction() as session:
        summary = record_offers(session, offers, now=at)
    refused = summary.rejected + summary.held
    if refused:
        raise SimulationError("the simulated offers were not accepted: "
                              + "; ".join(r.describe() for r in refused))


def job_yaml(deadline_s: float, mfu: float, tokens: int) -> str:
    return f"""\
name: simulate
run: "true"
model:
  name: gpt2
workload:
  type: finetune
  method: full
  precision: fp16
  batch_size: 8
  seq_len: 512
  tokens: {tokens}
  mfu: {mfu!r}
resources:
  gpus: [{GPU}]
  max_gpus_per_node: 1
  clouds: [{CLOUD}]
  spot: auto
deadline: {deadline_s!r}
owner: simulate@example.com
team: simulate
checkpoint:
  dir: s3://gpuopt-simulate/checkpoints
  interval: 1m
max_restarts_on_errors: 1000
"""


def _parse(text: str, home: Path) -> JobSpec:
    from gpuopt.jobs.loader import parse_job_spec

    return parse_job_spec(text, str(home / "simulate.yaml"), base_dir=home, purpose="plan",
                          now=START)


def plan_estimate_s(spec: JobSpec, offers: Sequence[Offer]) -> float:
    """The plan's uninterrupted seconds on the on-demand offer (what the policy reads)."""
    from gpuopt.policies.index import OfferIndex
    from gpuopt.policies.placement import PlacementContext, plan_job
    from gpuopt.providers.offer import Market

    plan = plan_job(spec, OfferIndex.build(list(offers)),
                    PlacementContext(now=START, pessimistic_deadline=False))
    best = plan.best_in(Market.ON_DEMAND)
    if best is None:
        raise SimulationError(f"the simulated job fits nowhere: {plan.excluded}")
    return best.est_hours * 3600


def solve_job(sc: Scenario, offers: Sequence[Offer], home: Path) -> tuple[str, JobSpec]:
    """A job file whose plan estimate is ``sc.task_s`` (to TASK_TOLERANCE_S): tokens for
    a utilisation near 0.3, then ``workload.mfu`` rescaled until the estimate matches."""
    guess = _parse(job_yaml(sc.deadline_s, 0.3, _SEED_TOKENS), home)
    tokens = max(1, round(_SEED_TOKENS * sc.task_s / plan_estimate_s(guess, offers)))
    mfu = 0.3
    for _ in range(8):
        text = job_yaml(sc.deadline_s, mfu, tokens)
        spec = _parse(text, home)
        est = plan_estimate_s(spec, offers)
        if abs(est - sc.task_s) <= TASK_TOLERANCE_S:
            return text, spec
        mfu = mfu * est / sc.task_s
        if not 0 < mfu <= 1:
            break
    raise SimulationError(f"no workload.mfu makes the plan estimate {sc.task_s} s "
                          f"(last: {est} s with mfu {mfu})")


def _submit(store: Store, text: str, spec: JobSpec, settings: Settings, home: Path) -> str:
    """Store the job queued at START through the submit service, as `gpuopt submit`
    does (orchestrator/submit/service.py)."""
    from gpuopt.orchestrator.submit.service import JobFile, Submission, plan_job, store_job

    path = home / "simulate.yaml"
    path.write_text(text, encoding="utf-8")
    sub = Submission(JobFile(path, text), spec)
    planned = plan_job(sub, settings, store, START)
    if planned.plan.best is None:
        raise SimulationError("the simulated job fits nowhere in its own offers")
    return store_job(store, sub, planned, TRACE_EXECUTOR, START)


def _run(store: Store, home: Path, sc: Scenario, policy_name: str,
         progress: Callable[[int], None] | None, trail: list[str] | None,
         probe_s: float | None = None, signals: SignalModel | None = None,
         probes_per_tick: int = DEFAULT_PROBES_PER_TICK) -> SimResult:
    from gpuopt.jobs.states import TERMINAL_JOB_STATUSES, JobStatus
    from gpuopt.orchestrator.reconcile.step import reconcile_once
    from gpuopt.orchestrator.simulate.signal_polls import record_signals
    from gpuopt.orchestrator.store.jobs_repo import attempts_of, events_of, find_job

    zones = zone_names(len(sc.traces))
    settings = simulation_settings(sc, policy_name, probe_s, signals is not None,
                                   probes_per_tick)
    offers = simulation_offers(sc, zones, START)
    _record_offers(store, offers, START)
    text, spec = solve_job(sc, offers, home)
    job_id = _submit(store, text, spec, settings, home)
    clock = VirtualClock(START)
    executor = TraceExecutor(traces=sc.traces, zones=zones, gap_s=sc.gap_s, start=START,
                             restart_overhead_s=sc.restart_overhead_s, task_s=sc.task_s,
                             clock=clock, start_tick=sc.start_tick,
                             probe_s=probe_s if probe_s is not None else DEFAULT_PROBE_S)
    limit = max_ticks(sc)
    for t in range(limit):
        clock.now = executor.at(t)
        if signals is not None:  # the polls of this tick, before its step reads them
            record_signals(store, sc, signals, offers[:len(zones)], t, clock.now)
        report = reconcile_once(store, lambda _kind: executor, settings, now=clock.now)
        if report.errors:
            raise SimulationError(f"tick {t}: the reconcile step failed: {report.errors}")
        if executor.overlaps:
            raise SimulationError(f"tick {t}: the job ran twice at once: {executor.overlaps}")
        if progress is not None:
            progress(t)
        with store.session() as session:
            job = find_job(session, job_id)
            attempts = attempts_of(session, [job_id])[job_id]
            if trail is not None:
                trail.extend(f"tick {t}: {e.kind}: {e.message}"
                             for e in events_of(session, job_id) if e.at == clock.now)
                trail.extend(f"tick {t}: waiting: {why}" for jid, why in report.waiting
                             if jid == job_id)
        if job.status in TERMINAL_JOB_STATUSES:
            if job.status != JobStatus.SUCCEEDED:
                raise SimulationError(f"tick {t}: the daemon ended the job {job.status}: "
                                      f"{job.last_error}")
            return _result(sc, executor, job_id, attempts, zones, steps=t, now=clock.now)
    raise SimulationError(f"policy {policy_name} did not finish within {limit} ticks "
                          f"({limit * sc.gap_s / 3600:.1f} h) under the daemon")


def _tick_of(at: datetime, gap_s: float) -> int:
    return round((at - START) / timedelta(seconds=1) / gap_s)


def _hold_of(a: AttemptRow, zones: Sequence[str]) -> Hold:
    from gpuopt.providers.offer import Market

    if a.market == Market.SPOT.value:
        return spot(zones.index(a.zone or ""))
    return ON_DEMAND


def decisions_of(attempts: Sequence[AttemptRow], zones: Sequence[str], gap_s: float,
                 steps: int) -> tuple[tuple[Hold, ...], tuple[int, ...], tuple[int, ...]]:
    """Per tick before ``steps``: the attempt launched then (the last, when a refusal
    failed over), else the one held through it, else nothing; the ticks whose last
    launch was refused (it held nothing; a failed probe is no failed launch:
    :func:`probes_of`); and the refused launches another request followed in their
    tick (the replay's ``refused_at``)."""
    from gpuopt.jobs.states import EndReason

    launched: dict[int, AttemptRow] = {}
    refused: list[AttemptRow] = []
    spans: list[tuple[int, int | None, Hold]] = []
    for a in sorted(attempts, key=lambda x: x.number):
        t0 = _tick_of(a.created_at, gap_s)
        launched[t0] = a
        never_held = a.end_reason == EndReason.FAILED and a.ended_at == a.started_at
        if never_held:
            if a.probe_of is None:
                refused.append(a)
            continue
        end = None if a.ended_at is None else _tick_of(a.ended_at, gap_s)
        spans.append((t0, end, _hold_of(a, zones)))
    out: list[Hold] = []
    for t in range(steps):
        if t in launched:
            out.append(_hold_of(launched[t], zones))
            continue
        held = [h for t0, end, h in spans if t0 < t and (end is None or end > t)]
        out.append(held[-1] if held else NOTHING)
    # a refused launch that was its tick's last request held nothing that tick (failed);
    # one followed by another request in the tick failed over (refused_at)
    failed = tuple(sorted({_tick_of(a.created_at, gap_s) for a in refused
                           if launched[_tick_of(a.created_at, gap_s)] is a}))
    over = tuple(_tick_of(a.created_at, gap_s) for a in refused
                 if launched[_tick_of(a.created_at, gap_s)] is not a)
    return tuple(out), failed, over


def probes_of(attempts: Sequence[AttemptRow], zones: Sequence[str], gap_s: float
              ) -> tuple[tuple[tuple[int, Hold], ...], tuple[int, ...]]:
    """The failed probes (tick, what was held through it) and the ticks of the probes
    that found spot, as the replay counts them (``launch-probe``)."""
    from gpuopt.jobs.states import EndReason

    by_number = {a.number: a for a in attempts}
    failed: list[tuple[int, Hold]] = []
    found: list[int] = []
    for a in sorted(attempts, key=lambda x: x.number):
        if a.probe_of is None:
            continue
        if a.end_reason == EndReason.FAILED and a.ended_at == a.started_at:
            failed.append((_tick_of(a.created_at, gap_s), _hold_of(by_number[a.probe_of],
                                                                   zones)))
        else:
            found.append(_tick_of(a.created_at, gap_s))
    return tuple(failed), tuple(found)


def _result(sc: Scenario, executor: TraceExecutor, job_id: str,
            attempts: Sequence[AttemptRow], zones: Sequence[str], steps: int,
            now: datetime) -> SimResult:
    from gpuopt.core.money import from_micros
    from gpuopt.jobs.states import EndReason
    from gpuopt.orchestrator.store.ledger_repo import job_cost_micros

    finish = executor.finish_s(job_id)
    if finish is None:
        raise SimulationError("the daemon says the job succeeded; the traces say its work "
                              "is not done")
    # the step of a probe whose held attempt finished before the switch ends the job in
    # that step: its decision (the probe) is the last one
    steps = max([steps, *(_tick_of(a.created_at, sc.gap_s) + 1 for a in attempts)])
    decisions, failed, refused = decisions_of(attempts, zones, sc.gap_s, steps)
    probes_failed, probes = probes_of(attempts, zones, sc.gap_s)
    return SimResult(
        cost=from_micros(job_cost_micros(attempts, now)),
        finish_s=finish,
        met_deadline=finish <= sc.deadline_s + TIME_TOLERANCE_S,
        preemptions=sum(a.end_reason == EndReason.PREEMPTED for a in attempts),
        decisions=decisions,
        failed_at=failed,
        refused_at=refused,
        probes_failed_at=probes_failed,
        probes=len(probes),
        probes_found_at=probes,
    )


def difference(expected: SimResult, got: SimResult, locations: int) -> str | None:
    """Where two results of one scenario part (None: the same decisions and failed
    launches, costs within half a cent): the first tick whose decision differs, with
    both, or the costs."""
    want, have = expected.labels(locations), got.labels(locations)
    for t, (w, h) in enumerate(zip(want, have, strict=False)):
        if w != h:
            return f"tick {t}: expected {w}, got {h}"
    if len(want) != len(have):
        return (f"{len(want)} decisions expected, {len(have)} got (tick {min(len(want), len(have))}"
                f": expected {want[len(have)] if len(want) > len(have) else 'the end'}, got "
                f"{have[len(want)] if len(have) > len(want) else 'the end'})")
    if abs(expected.cost - got.cost) >= HALF_CENT:
        return f"cost: expected {expected.cost:.6f}, got {got.cost:.6f}"
    if expected.failed_at != got.failed_at:
        return f"failed launches: expected at {expected.failed_at}, got at {got.failed_at}"
    if expected.refused_at != got.refused_at:
        return (f"refused launches that failed over: expected at {expected.refused_at}, "
                f"got at {got.refused_at}")
    if expected.probes_failed_at != got.probes_failed_at:
        return (f"failed probes: expected {expected.probes_failed_at}, "
                f"got {got.probes_failed_at}")
    if (expected.probes, expected.probes_found_at) != (got.probes, got.probes_found_at):
        return (f"probes that found spot: expected {expected.probes} at "
                f"{expected.probes_found_at}, got {got.probes} at {got.probes_found_at}")
    return None
