"""The daemon engine's equivalence under ``launch-probe+signals``: the daemon with ``[spot]
probe`` and ``[spot] signals`` decides, probes and costs as the replay, and hands its policy
the same history, signal readings included (their chances and their ages), on the tight
deadlines, zone moves and start offsets of test_daemon_tight.py.

The signals the replay's model says were read each tick are written into the daemon's store
as its polls would write them (orchestrator/simulate/signal_polls.py: a price poll's offers
gone and back with their placement scores, an eviction-rate bucket, another job's
preemption) and read back by the daemon's own path (placement_inputs.signal_inputs,
policies/spot/observed_signals.py). A signal lost or misread on the way shows as a tick
whose history differs, even where the fitted weights give it no say in the decision
(``peer`` and ``placement-score`` weigh 0)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from gpuopt.orchestrator.simulate.daemon_engine import difference, run_daemon
from gpuopt.policies.spot.model import Information, Observation
from gpuopt.policies.spot.registry import get_policy
from gpuopt.policies.spot.replay import Scenario, SimResult, simulate
from gpuopt.policies.spot.replay_signals import DEFAULT_SIGNALS
from gpuopt.policies.spot.signals import SIGNALS, Signal
from tests.orchestrator.simulate.test_daemon_tight import (
    MOVES,
    PROBE_S,
    Recorded,
    _first_input_difference,
    _scenario,
    _shared_multi_zone_sets,
)

INFO = Information.LAUNCH_PROBE_SIGNALS


def _mismatches(scenarios: Sequence[Scenario], monkeypatch: pytest.MonkeyPatch,
                results: list[SimResult], seen: list[Observation]) -> list[str]:
    """Per scenario: the first decision, cost or policy input that differs. ``results``
    gets the replay's results, ``seen`` the daemon policy's observations."""
    import gpuopt.policies.spot.live as live

    out = []
    for sc in scenarios:
        replayed = Recorded(get_policy("auto"))
        want = simulate(sc, replayed, INFO, probe_s=PROBE_S, signals=DEFAULT_SIGNALS)
        results.append(want)
        daemon = Recorded(get_policy("auto"))
        monkeypatch.setattr(live, "get_policy", lambda _name, p=daemon: p)
        got = run_daemon(sc, "auto", probe_s=PROBE_S, signals=DEFAULT_SIGNALS)
        monkeypatch.undo()
        seen += daemon.seen
        why = difference(want, got, len(sc.traces)) or _first_signal_difference(
            replayed.seen, daemon.seen, sc.gap_s) or _first_input_difference(
            replayed.seen, daemon.seen, sc.gap_s)
        if why is not None:
            out.append(f"start {sc.start_tick}, deadline {sc.deadline_s:g} s: {why}")
    return out


def _first_signal_difference(want: Sequence[Observation], got: Sequence[Observation],
                             gap: float) -> str | None:
    """The first tick and location whose signal readings differ, each signal named."""
    a = {round(o.elapsed_s / gap): o for o in reversed(want)}
    b = {round(o.elapsed_s / gap): o for o in reversed(got)}
    for t in sorted(set(a) & set(b)):
        for i in range(len(a[t].history.locations)):
            x, y = a[t].history.signals_of(i), b[t].history.signals_of(i)
            for kind in SIGNALS:
                if x.get(kind) != y.get(kind):
                    return (f"tick {t}: location {i}'s {kind.value} reading differs: "
                            f"replay {x.get(kind)}, daemon {y.get(kind)}")
    return None


def _kinds_read(seen: Sequence[Observation]) -> set[Signal]:
    """The signals whose readings reached the daemon's policy (an offer read as gone
    counts as ``offer``; read as listed it does not: that is every zone at every poll)."""
    out: set[Signal] = set()
    for obs in seen:
        for i in range(len(obs.history.locations)):
            s = obs.history.signals_of(i)
            for kind in SIGNALS:
                r = s.get(kind)
                if r is not None and (kind is not Signal.OFFER or r.chance == 0.0):
                    out.add(kind)
    return out


@pytest.mark.slow  # ~25 s each
@pytest.mark.parametrize("traces", MOVES)
@pytest.mark.parametrize("slack", [0.06, 0.09])
def test_signals_on_tight_deadlines_with_zone_moves_decide_as_the_replay(
        traces: tuple[list[int], ...], slack: float, monkeypatch: pytest.MonkeyPatch) -> None:
    """8 h of work on 300 s ticks, 12 start offsets: every signal reaches the daemon's
    policy (checked), the signals change decisions against ``launch-probe`` in some of
    the scenarios (checked), and the daemon decides, probes and costs as the replay."""
    scs = [_scenario(traces, 300.0, 8.0, slack, start) for start in range(0, 48, 4)]
    results: list[SimResult] = []
    seen: list[Observation] = []
    found = _mismatches(scs, monkeypatch, results, seen)
    assert not found, "\n".join(found)
    assert _kinds_read(seen) == set(SIGNALS)
    plain = [simulate(sc, get_policy("auto"), Information.LAUNCH_PROBE, probe_s=PROBE_S)
             for sc in scs]
    assert any(p.decisions != r.decisions for p, r in zip(plain, results, strict=True))
    assert sum(r.probes for r in results) > 0
    assert all(r.met_deadline for r in results)


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_signals_on_the_shared_traces_decide_as_the_replay(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Every multi-zone set of the shared traces, 3 start offsets each, 6 h of work with
    8 % slack, under ``launch-probe+signals``."""
    from gpuopt.policies.spot.sweep import start_ticks

    sets = _shared_multi_zone_sets()
    if not sets:
        pytest.skip("no shared traces (CI always has ../shared beside the checkout)")
    found: list[str] = []
    results: list[SimResult] = []
    seen: list[Observation] = []
    for ts in sets:
        starts = start_ticks(ts.ticks, ts.gap_s, 6 * 3600 * 1.08, 3)
        scs = [_scenario(ts.traces, ts.gap_s, 6.0, 0.08, s) for s in starts]
        found += [f"{ts.name}: {m}" for m in _mismatches(scs, monkeypatch, results, seen)]
    assert not found, "\n".join(found)
