"""The daemon engine's equivalence on voluntary releases of spot.

``auto`` keeps a spot it holds while it is safe, and a job's last attempt ends after its
last decision, so in the scenarios of test_daemon_tight.py no spot is ever released
while decisions are still to come: a daemon that recorded a release (the job stopping
its spot of its own accord) as a preemption ("spot gone") passed them. Here a policy
that leaves spot on purpose -- ``auto``, except that on every fifth tick a held spot is
given up for on-demand when that is safe -- makes the daemon record releases mid-job;
the replay (launch information model) knows the zone was still up at the release, so
the history the policy reads next must say so in both. Tight deadlines (8 % slack),
two zones with outages that overlap in part, several start offsets."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import pairwise

import pytest

from gpuopt.orchestrator.simulate.daemon_engine import difference, run_daemon
from gpuopt.policies.spot.auto import AutoPolicy
from gpuopt.policies.spot.model import ON_DEMAND, Hold, Information, Kind, Observation
from gpuopt.policies.spot.replay import Scenario, simulate
from gpuopt.policies.spot.slack import is_safe
from tests.orchestrator.simulate.test_daemon_tight import (
    Recorded,
    _first_input_difference,
    _scenario,
    _zone,
)

EVERY = 5  # a held spot is given up on ticks t with t % EVERY == EVERY - 1


@dataclass(frozen=True)
class Restless:
    """``auto``, leaving a held spot for on-demand every ``EVERY`` ticks when safe."""

    inner: AutoPolicy = field(default_factory=AutoPolicy)
    name: str = "auto"

    def decide(self, obs: Observation) -> Hold:
        tick = round(obs.elapsed_s / obs.tick_s)
        if obs.holding.is_spot and tick % EVERY == EVERY - 1 and obs.work_left_s > 0 \
                and is_safe(obs, ON_DEMAND):
            return ON_DEMAND
        return self.inner.decide(obs)


TRACES = (_zone(29, 3, 0, 43), _zone(31, 6, 14, 97))


def _mismatches(scenarios: Sequence[Scenario], monkeypatch: pytest.MonkeyPatch
                ) -> tuple[list[str], int]:
    """(per scenario, the first decision, cost or input that differs; the releases made)."""
    import gpuopt.policies.spot.live as live

    out, releases = [], 0
    for sc in scenarios:
        replayed = Recorded(Restless())
        want = simulate(sc, replayed, Information.LAUNCH)
        held = want.held()
        releases += sum(a.is_spot and b.kind is Kind.ON_DEMAND for a, b in pairwise(held))
        daemon = Recorded(Restless())
        monkeypatch.setattr(live, "get_policy", lambda _name, p=daemon: p)
        got = run_daemon(sc, "auto")
        monkeypatch.undo()
        why = difference(want, got, len(sc.traces)) or _first_input_difference(
            replayed.seen, daemon.seen, sc.gap_s)
        if why is not None:
            out.append(f"start {sc.start_tick}: {why}")
    return out, releases


@pytest.mark.slow  # ~20 s
def test_voluntary_releases_are_recorded_as_releases(monkeypatch: pytest.MonkeyPatch) -> None:
    scs = [_scenario(TRACES, 300.0, 4.0, 0.08, start) for start in range(0, 40, 8)]
    found, releases = _mismatches(scs, monkeypatch)
    assert releases > 0  # the scenarios do give up spot mid-job
    assert not found, "\n".join(found)
