"""The trace replay: the fixed simulation model of `gpuopt simulate` (pure, no I/O).

Model (issue 5, kept exactly so results compare with "Can't Be Late", NSDI '24):

- time runs in ticks of ``gap_s``; ``trace[t] == 0`` means spot can be had during tick t;
- at tick t the policy first observes: if it held spot during tick t-1 and
  ``trace[t] == 1``, that spot is gone (a preemption); the work of tick t-1 still counts;
- then it requests what to hold during tick t; spot where ``trace[t] == 1`` is an error;
- requesting something other than nothing that differs from what is held starts a
  restart overhead: the next ``restart_overhead_s`` seconds of held time do no work;
- a held tick is billed in full at its hourly price x gap / 3600 and adds ``gap`` minus
  the overhead still to run (not below 0) seconds of work;
- the job ends at the moment its work reaches the task duration, and met its deadline if
  that moment is no later than the deadline (within ``TIME_TOLERANCE_S``, 1 us: the same
  instant added up two ways differs by float rounding, never by that much).

Ticks past the end of a trace count as "spot unavailable".

What the policy learns of availability is the information model (``Information``):

- ``tick`` (the published model, the default): at each tick the policy sees every
  location's availability, and the history observes all of them;
- ``launch`` (what the daemon can really know): the policy sees only the location of
  the spot it holds (still up, or gone: a preemption); every other location is
  unknown (``Observation.spot_known``) and the history gets no observation of it that
  tick. Requesting spot in a location other than the one held is a launch attempt,
  which tells whether spot was there during that tick (the history records it). A
  launch into a location without spot fails the way a real one does: SkyPilot's
  request is refused for capacity after a while, no instance ever ran, so nothing is
  billed, no work is done, no restart overhead is started, and the job holds nothing
  for the rest of that tick (whatever it held before was stopped first: the daemon
  never runs two attempts of a job at once). Its next decision is at the next tick.
  Requesting spot where the policy was *told* it is gone (the held location, just
  preempted) is still an error.
- ``launch-probe``: the same knowledge, but a launch from a held attempt (on-demand,
  or spot elsewhere) is a probe, made before the held attempt is broken
  (policies/spot/probe.py): failed, it costs nothing and the held attempt runs the
  tick on (``SimResult.probes_failed_at``); successful, the held attempt runs and is
  billed for the provisioning time ``probe_s``, its work counts, and the new spot is
  billed from the tick's start. A launch from nothing is a launch as under ``launch``.
  A probe or a launch refused for capacity fails over, as SkyPilot's provisioner fails
  over zones: the policy is asked again in the same tick, told that location had no
  spot, and may try another unobserved one, up to ``probes_per_tick`` tries a tick
  (``DEFAULT_PROBES_PER_TICK``). After a failed probe anything but another probe keeps
  the held attempt for the tick; after a refused launch from nothing the job holds
  what the policy asks (on-demand, say) for the tick, or nothing (another try when
  none is left, or nothing asked). The tick's decision is its last request (refused
  probes are in ``probes_failed_at`` with the hold kept, refused launches followed by
  another request in ``refused_at``, a last launch refused in ``failed_at``). The time
  a refusal takes is not modelled (seconds to two minutes: probe.py): it costs nothing,
  and what follows it is taken to start with the tick.
- ``launch-probe+signals``: ``launch-probe``, and after each tick's observation the
  history reads the capacity signals a daemon could have seen then, derived from the
  traces (policies/spot/replay_signals.py; ``simulate(signals=...)`` picks the model).
"""


from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import Decimal

from gpuopt.core.errors import GpuoptError
from gpuopt.policies.spot.history import AvailabilityHistory
from gpuopt.policies.spot.model import (
    NOTHING,
    TIME_TOLERANCE_S,
    Hold,
    Information,
    Kind,
    Observation,
    SpotPolicy,
)
from gpuopt.policies.spot.probe import DEFAULT_PROBE_S, DEFAULT_PROBES_PER_TICK, probe_tick
from gpuopt.policies.spot.replay_signals import DEFAULT_SIGNALS, SignalModel, readings_at
from gpuopt.policies.spot.signals import Signal


class SimulationError(GpuoptError):
    """The policy broke the model (spot where none is available, or never finishing)."""


@dataclass(frozen=True, slots=True)
class Scenario:
    """One replay: traces (one per location), the job, prices, and where to start."""

    traces: tuple[Sequence[int], ...]
    gap_s: float
    task_s: float
    deadline_s: float
    restart_overhead_s: float
    spot_prices: tuple[Decimal, ...]
    on_demand_price: Decimal
    start_tick: int = 0

    def __post_init__(self) -> None:
        if not self.traces:
            raise ValueError("at least one trace is needed")
        if len(self.spot_prices) != len(self.traces):
            raise ValueError("one spot price per trace is needed")
        if self.gap_s <= 0 or self.task_s <= 0 or self.restart_overhead_s < 0:
            raise ValueError("gap and task must be > 0, restart overhead >= 0")

    @property
    def deadline_ticks(self) -> int:
        return math.ceil(self.deadline_s / self.gap_s)

    def available(self, tick: int) -> tuple[bool, ...]:
        i = self.start_tick + tick
        return tuple(i < len(tr) and tr[i] == 0 for tr in self.traces)


@dataclass(frozen=True, slots=True)
class SimResult:
    cost: Decimal  # USD
    finish_s: float
    met_deadline: bool
    preemptions: int
    decisions: tuple[Hold, ...]  # what the policy requested at each tick
    # ticks whose (last) spot launch found no spot: nothing was held
    failed_at: tuple[int, ...] = ()
    # ticks whose probe found no spot (``launch-probe`` only), with the hold kept
    probes_failed_at: tuple[tuple[int, Hold], ...] = ()
    probes: int = 0  # probes that found spot (``launch-probe`` only)
    # ticks whose probe found spot (after failed ones, when the tick failed over)
    probes_found_at: tuple[int, ...] = ()
    # launches from nothing refused for capacity and followed, in the same tick, by
    # another request (``launch-probe`` failover; one entry per refusal)
    refused_at: tuple[int, ...] = ()

    @property
    def failed_launches(self) -> int:
        return len(self.failed_at)

    def held(self) -> tuple[Hold, ...]:
        """What was held at each tick (a failed launch held nothing; a failed probe,
        what was held before it)."""
        failed, found = set(self.failed_at), set(self.probes_found_at)
        kept = dict(self.probes_failed_at)
        return tuple(NOTHING if t in failed else d if t in found else kept.get(t, d)
                     for t, d in enumerate(self.decisions))

    def labels(self, locations: int) -> list[str]:
        return [d.label(locations) for d in self.decisions]


def price_of(hold: Hold, sc: Scenario) -> Decimal:
    if hold.kind is Kind.ON_DEMAND:
        return sc.on_demand_price
    assert hold.location is not None
    return sc.spot_prices[hold.location]


def _known(sc_avail: tuple[bool, ...], holding: Hold,
           information: Information) -> list[bool | None]:
    """What is observed of this tick before the decision: everything (``tick``), or
    only the location of the spot held (``launch``)."""
    if information is Information.TICK:
        return list(sc_avail)
    seen: list[bool | None] = [None] * len(sc_avail)
    if holding.is_spot:
        assert holding.location is not None
        seen[holding.location] = sc_avail[holding.location]
    return seen


@dataclass(slots=True)
class _Run:
    """The replayed job so far."""

    holding: Hold = NOTHING
    overhead_left: float = 0.0
    work: float = 0.0
    billed: Decimal = Decimal(0)  # sum of price x seconds; divided by 3600 once at the end
    preemptions: int = 0
    failed: list[int] = field(default_factory=list)
    decisions: list[Hold] = field(default_factory=list)
    probes_failed: list[tuple[int, Hold]] = field(default_factory=list)
    probes: int = 0
    probes_found: list[int] = field(default_factory=list)
    refused: list[int] = field(default_factory=list)

    def release(self) -> None:
        self.holding, self.overhead_left = NOTHING, 0.0

    def result(self, sc: Scenario, finish: float) -> SimResult:
        return SimResult(
            cost=self.billed / 3600,
            finish_s=finish,
            met_deadline=finish <= sc.deadline_s + TIME_TOLERANCE_S,
            preemptions=self.preemptions,
            decisions=tuple(self.decisions),
            failed_at=tuple(self.failed),
            probes_failed_at=tuple(self.probes_failed),
            probes=self.probes,
            probes_found_at=tuple(self.probes_found),
            refused_at=tuple(self.refused),
        )


def _max_ticks(sc: Scenario, information: Information) -> int:
    """A policy that has not finished long after the deadline is broken, not just late."""
    max_ticks = sc.deadline_ticks + 2 * math.ceil(
        (sc.task_s + sc.restart_overhead_s) / sc.gap_s) + 2
    if information is not Information.TICK:
        # Failed launches lose whole ticks: allow a policy as many of them as ticks.
        max_ticks *= 2
    return max_ticks


def _observation(sc: Scenario, t: int, run: _Run, seen: list[bool | None],
                 history: AvailabilityHistory, information: Information,
                 probe_s: float | None, tries_left: int | None = None) -> Observation:
    known = None if information is Information.TICK else tuple(a is not None for a in seen)
    return Observation(
        elapsed_s=t * sc.gap_s,
        deadline_s=sc.deadline_s,
        task_s=sc.task_s,
        work_done_s=run.work,
        restart_overhead_s=sc.restart_overhead_s,
        overhead_left_s=run.overhead_left,
        holding=run.holding,
        spot_available=tuple(a is not False for a in seen),
        spot_prices=sc.spot_prices,
        on_demand_price=sc.on_demand_price,
        tick_s=sc.gap_s,
        history=history,
        spot_known=known,
        probe_s=probe_s,
        tries_left=tries_left,
    )


def _check_spot_choice(t: int, policy: SpotPolicy, want: Hold, avail: Sequence[bool],
                       seen: list[bool | None]) -> int:
    """The location a spot decision names, refused when unknown or known unavailable."""
    loc = want.location if want.location is not None else -1
    if not 0 <= loc < len(avail):
        raise SimulationError(f"tick {t}: {policy.name} chose unknown location {loc}")
    if seen[loc] is False:
        raise SimulationError(
            f"tick {t}: policy {policy.name} requested spot in location {loc}, "
            "where the trace says it cannot be had"
        )
    return loc


def _probe(sc: Scenario, t: int, run: _Run, want: Hold, found: bool,
           probe_s: float) -> Hold | SimResult:
    """Make before break: provision ``want`` while the held attempt runs on. A failed
    probe costs nothing and keeps the hold; a found spot takes over once provisioned
    (and the restart overhead paid), the held attempt billed and working until then.
    What to hold for the rest of the tick, or the result if the job ends first."""
    if not found:  # costs nothing; the held attempt runs on
        run.probes_failed.append((t, run.holding))
        return run.holding
    run.probes += 1
    run.probes_found.append(t)
    gap = sc.gap_s
    p = probe_tick(gap, probe_s, sc.restart_overhead_s, run.overhead_left)
    if run.work + p.old_gain_s >= sc.task_s:  # done before the switch
        into = p.old_spent_s + (sc.task_s - run.work)
        run.billed += (price_of(run.holding, sc) + price_of(want, sc)) * Decimal(repr(into))
        return run.result(sc, t * gap + into)
    run.billed += price_of(run.holding, sc) * Decimal(repr(p.overlap_s))
    run.work += p.old_gain_s
    run.holding, run.overhead_left = want, p.new_overhead_s
    return want  # the new spot's tick, with no new restart overhead


def _hold_for_a_tick(sc: Scenario, t: int, run: _Run, want: Hold) -> SimResult | None:
    """Hold ``want`` for tick ``t``: bill it, pay the restart overhead, do the work;
    the result once the work is done."""
    gap = sc.gap_s
    if want != run.holding:
        run.overhead_left = sc.restart_overhead_s
    run.holding = want
    run.billed += price_of(want, sc) * Decimal(repr(gap))
    spent = min(gap, run.overhead_left)
    run.overhead_left -= spent
    gain = gap - spent
    if run.work + gain >= sc.task_s:
        return run.result(sc, t * gap + spent + (sc.task_s - run.work))
    run.work += gain
    return None


@dataclass(slots=True)
class _Tick:
    """One tick's spot requests: what is seen of it, the history before its tries (with
    the tick's signals) and after them."""

    sc: Scenario
    t: int
    avail: tuple[bool, ...]
    seen: list[bool | None]
    before: AvailabilityHistory
    history: AvailabilityHistory
    information: Information
    probe_s: float


def _readings(sc: Scenario, t: int, model: SignalModel,
              preempted: int | None) -> list[tuple[int, Signal, float]]:
    """The signals read during tick ``t``. Another job's preemption read in the second of
    the job's own there is not told apart from it (observed_signals.others_of: same
    kind, same second), so it is no reading."""
    found = readings_at(sc.traces, sc.gap_s, sc.start_tick + t, model, first=t == 0)
    return [r for r in found if not (r[1] is Signal.PEER and r[0] == preempted)]


def _fail_over(tk: _Tick, run: _Run, policy: SpotPolicy, want: Hold,
               tries: int) -> Hold | SimResult:
    """Carry the tick's request through its tries: a launch, a probe (make before
    break) and, refused for capacity, failover (as SkyPilot fails over zones): the
    policy, told that location had no spot, is asked again in the same tick: another try
    while tries are left; after a probe anything else keeps the held attempt; after a
    launch from nothing the job holds what it asks (on-demand), or nothing. What to hold
    for the rest of the tick (a refused spot: nothing), or the result if the job ends."""
    probing = tk.information.probes
    while want.is_spot:
        loc = _check_spot_choice(tk.t, policy, want, tk.avail, tk.seen)
        if tk.seen[loc] is not None:
            break  # the spot held: held for the tick
        tk.seen[loc] = tk.avail[loc]  # a launch attempt tells what was there
        tk.history = tk.before.observe(tk.seen, tk.sc.gap_s)
        probe = probing and run.holding.kind is not Kind.NONE
        kept = run.holding
        if probe:
            outcome = _probe(tk.sc, tk.t, run, want, tk.avail[loc], tk.probe_s)
            if isinstance(outcome, SimResult) or tk.avail[loc]:
                return outcome
        elif tk.avail[loc] or not probing:
            break  # a launch: held if found; refused under ``launch``: nothing held
        else:
            run.refused.append(tk.t)
        tries -= 1
        if probe and tries <= 0:
            return kept  # no probe left: the held attempt runs the tick
        again = policy.decide(_observation(tk.sc, tk.t, run, tk.seen, tk.history,
                                           tk.information, tk.probe_s, tries))
        fresh = again.is_spot and tk.seen[_check_spot_choice(tk.t, policy, again, tk.avail,
                                                             tk.seen)] is None
        if fresh and tries > 0:
            run.decisions[-1] = want = again
            continue
        if probe:
            return kept
        if not fresh and again.kind is not Kind.NONE:
            run.decisions[-1] = want = again
        break
    return want


def simulate(
    sc: Scenario, policy: SpotPolicy, information: Information = Information.TICK,
    probe_s: float = DEFAULT_PROBE_S, signals: SignalModel | None = None,
    probes_per_tick: int = DEFAULT_PROBES_PER_TICK,
) -> SimResult:
    """Replay ``policy`` over the scenario's traces, tick by tick. ``signals`` is the
    signal model under ``launch-probe+signals`` (default: ``DEFAULT_SIGNALS``).

    Raises SimulationError when the policy chooses a location the scenario lacks or has
    not finished long after the deadline (a broken policy, not a late one)."""
    max_ticks = _max_ticks(sc, information)
    probing = information.probes
    model = (signals or DEFAULT_SIGNALS) if information.signals else None
    history = AvailabilityHistory.empty(len(sc.traces))
    run = _Run()
    for t in range(max_ticks):
        avail = sc.available(t)
        seen = _known(avail, run.holding, information)
        preempted: int | None = None
        if run.holding.is_spot and not avail[run.holding.location or 0]:
            preempted = run.holding.location
            run.release()
            run.preemptions += 1
        before = history
        if model is not None:  # the signals read during this tick, before the decision
            before = before.read(_readings(sc, t, model, preempted))
        tk = _Tick(sc, t, avail, seen, before, before.observe(seen, sc.gap_s), information,
                   probe_s)
        want = policy.decide(_observation(sc, t, run, seen, tk.history, information,
                                          *((probe_s, probes_per_tick) if probing
                                            else (None, None))))
        run.decisions.append(want)
        outcome = _fail_over(tk, run, policy, want, probes_per_tick)
        history = tk.history
        if isinstance(outcome, SimResult):
            return outcome
        want = outcome
        if want.is_spot and not avail[want.location or 0]:  # the tick's last launch
            if probing:
                run.refused.pop()  # not followed by another request: nothing held
            run.failed.append(t)
            run.release()
            continue
        if want.kind is Kind.NONE:
            run.release()
            continue
        if (result := _hold_for_a_tick(sc, t, run, want)) is not None:
            return result
    raise SimulationError(
        f"policy {policy.name} did not finish within {max_ticks} ticks "
        f"({max_ticks * sc.gap_s / 3600:.1f} h)"
    )
