"""Failover in one tick (``launch-probe``, up to ``probes_per_tick`` tries): a probe or a
launch from nothing refused for capacity is followed, in the same tick, by the policy's
next pick (another zone; after a launch, on-demand too).
The daemon engine must do it as the replay does: the same probes in the same order, each
re-decision handed the same observation (the refused zone known down, the others still
guesses), the same costs; and a cap of one probe a tick is the one-probe model of before.

Three zones of two-state Markov availability (fixed traces, drawn once from a named
stream), 8 h of work on 600 s ticks, 6 % and 30 % slack, 12 start offsets each."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Sequence

import pytest

from gpuopt.orchestrator.simulate.daemon_engine import difference, run_daemon
from gpuopt.policies.spot.model import Information, Observation
from gpuopt.policies.spot.registry import get_policy
from gpuopt.policies.spot.replay import Scenario, SimResult, simulate
from tests.orchestrator.simulate.test_daemon_tight import PROBE_S, Recorded, _scenario
from tests.policies.spot.helpers import markov_trace

PROBE = Information.LAUNCH_PROBE


def _traces(p_fail: float, p_recover: float) -> tuple[list[int], ...]:
    rng = random.Random(f"failover:{p_fail}:{p_recover}")
    return tuple(markov_trace(rng, 400, p_fail, p_recover) for _ in range(3))


def _failovers(r: SimResult) -> int:
    """Ticks with more than one probe: several refused, or refused then found."""
    refused = Counter(t for t, _ in r.probes_failed_at)
    return (sum(1 for n in refused.values() if n > 1)
            + sum(1 for t in r.probes_found_at if t in refused))


def _by_tick(seen: Sequence[Observation], gap: float) -> dict[int, list[Observation]]:
    out: dict[int, list[Observation]] = {}
    for obs in seen:
        out.setdefault(round(obs.elapsed_s / gap), []).append(obs)
    return out


def _input_difference(want: Sequence[Observation], got: Sequence[Observation],
                      gap: float) -> str | None:
    """The first decision (a tick's first, or a failover's) whose input differs, over the
    ticks both asked the policy (the daemon does not ask it once the job runs its last
    on-demand stretch: test_daemon_tight compares the same ticks)."""
    a, b = _by_tick(want, gap), _by_tick(got, gap)
    for t in sorted(set(a) & set(b)):
        if len(a[t]) != len(b[t]):
            return f"tick {t}: {len(a[t])} decisions in the replay, {len(b[t])} in the daemon"
        for i, (x, y) in enumerate(zip(a[t], b[t], strict=True)):
            for part in ("holding", "overhead_left_s", "spot_known", "spot_available",
                         "history", "probe_s", "tries_left"):
                if getattr(x, part) != getattr(y, part):
                    return (f"tick {t}, decision {i}: the policy's {part} differs: replay "
                            f"{getattr(x, part)}, daemon {getattr(y, part)}")
    return None


def _mismatches(scs: Sequence[Scenario], monkeypatch: pytest.MonkeyPatch,
                results: list[SimResult], probes_per_tick: int = 3) -> list[str]:
    import gpuopt.policies.spot.live as live

    out = []
    for sc in scs:
        replayed = Recorded(get_policy("auto"))
        want = simulate(sc, replayed, PROBE, probe_s=PROBE_S,
                        probes_per_tick=probes_per_tick)
        results.append(want)
        daemon = Recorded(get_policy("auto"))
        monkeypatch.setattr(live, "get_policy", lambda _name, p=daemon: p)
        got = run_daemon(sc, "auto", probe_s=PROBE_S, probes_per_tick=probes_per_tick)
        monkeypatch.undo()
        why = difference(want, got, len(sc.traces)) or _input_difference(
            replayed.seen, daemon.seen, sc.gap_s)
        if why is not None:
            out.append(f"start {sc.start_tick}, deadline {sc.deadline_s:g} s: {why}")
    return out


@pytest.mark.slow  # ~30 s each
@pytest.mark.parametrize(("pattern", "slack"), [((0.2, 0.2), 0.06), ((0.2, 0.2), 0.3),
                                                ((0.05, 0.05), 0.3)])
def test_probes_fail_over_in_the_daemon_as_in_the_replay(
        pattern: tuple[float, float], slack: float, monkeypatch: pytest.MonkeyPatch) -> None:
    traces = _traces(*pattern)
    scs = [_scenario(traces, 600.0, 8.0, slack, start) for start in range(0, 48, 4)]
    results: list[SimResult] = []
    found = _mismatches(scs, monkeypatch, results)
    assert not found, "\n".join(found)
    assert sum(_failovers(r) for r in results) >= 3  # the scenarios do fail over
    assert sum(len(r.refused_at) for r in results) >= 3  # launches from nothing too
    assert all(r.met_deadline for r in results)


def test_one_probe_a_tick_never_fails_over(monkeypatch: pytest.MonkeyPatch) -> None:
    """``probes_per_tick=1`` (``[spot] probes_per_step = 1``): one probe a tick, in the
    replay and the daemon alike, where three fail over on the same windows."""
    traces = _traces(0.2, 0.2)
    scs = [_scenario(traces, 600.0, 8.0, 0.3, start) for start in (0, 8, 16)]
    three = [simulate(sc, get_policy("auto"), PROBE, probe_s=PROBE_S) for sc in scs]
    assert sum(_failovers(r) for r in three) > 0
    results: list[SimResult] = []
    found = _mismatches(scs, monkeypatch, results, probes_per_tick=1)
    assert not found, "\n".join(found)
    assert sum(_failovers(r) for r in results) == 0
    assert all(Counter(t for t, _ in r.probes_failed_at).most_common(1)[0][1] == 1
               for r in results if r.probes_failed_at)
