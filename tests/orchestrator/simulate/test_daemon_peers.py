"""Other jobs' preemptions in the daemon's store, with ``[spot] signals`` off and on.

The replay's signals model records, 20 min late, half of each zone's outage starts as
another job's ``preempted`` in that zone (orchestrator/simulate/signal_polls.py; here the
``peer`` signal alone). With signals off the daemon's history is the job's own launches
only, so the daemon still decides, probes and costs as the ``launch-probe`` replay and
hands its policy the same history; with signals on, those preemptions are ``peer``
readings, as in the ``launch-probe+signals`` replay."""

from __future__ import annotations

import pytest

from gpuopt.orchestrator.simulate import daemon_engine
from gpuopt.orchestrator.simulate.daemon_engine import difference, run_daemon
from gpuopt.policies.spot.model import Information, Observation
from gpuopt.policies.spot.registry import get_policy
from gpuopt.policies.spot.replay import Scenario, simulate
from gpuopt.policies.spot.replay_signals import SignalModel, readings_at
from gpuopt.policies.spot.signals import Signal
from tests.orchestrator.simulate.test_daemon_signals import _first_signal_difference
from tests.orchestrator.simulate.test_daemon_tight import (
    MOVES,
    PROBE_S,
    Recorded,
    _first_input_difference,
    _scenario,
)

PEERS = SignalModel(kinds=frozenset({Signal.PEER}))


def _scenarios() -> list[Scenario]:
    return [_scenario(MOVES[0], 300.0, 8.0, 0.09, start) for start in (0, 8, 16, 24)]


def _peers_recorded(sc: Scenario) -> int:
    return sum(kind is Signal.PEER
               for t in range(round(sc.deadline_s / sc.gap_s) + 1)
               for _, kind, _ in readings_at(sc.traces, sc.gap_s, sc.start_tick + t, PEERS,
                                             first=t == 0))


def _first_difference(sc: Scenario, monkeypatch: pytest.MonkeyPatch, read: bool
                      ) -> tuple[str | None, list[Observation]]:
    """The daemon (other jobs' preemptions recorded; ``read``: ``[spot] signals``) against
    the replay (``launch-probe``, or ``launch-probe+signals`` with the same model)."""
    import gpuopt.policies.spot.live as live

    replayed = Recorded(get_policy("auto"))
    info = Information.LAUNCH_PROBE_SIGNALS if read else Information.LAUNCH_PROBE
    want = simulate(sc, replayed, info, probe_s=PROBE_S, signals=PEERS if read else None)
    daemon = Recorded(get_policy("auto"))
    settings = daemon_engine.simulation_settings
    monkeypatch.setattr(live, "get_policy", lambda _name, p=daemon: p)
    monkeypatch.setattr(daemon_engine, "simulation_settings",
                        lambda sc, name, probe_s=None, _signals=False, tries=3:
                        settings(sc, name, probe_s, read, tries))
    got = run_daemon(sc, "auto", probe_s=PROBE_S, signals=PEERS)
    monkeypatch.undo()
    why = difference(want, got, len(sc.traces)) or _first_signal_difference(
        replayed.seen, daemon.seen, sc.gap_s) or _first_input_difference(
        replayed.seen, daemon.seen, sc.gap_s)
    return why, daemon.seen


@pytest.mark.slow  # ~10 s each
@pytest.mark.parametrize("read", [False, True], ids=["signals-off", "signals-on"])
def test_other_jobs_preemptions_are_peer_readings_or_nothing(
        read: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    scs = _scenarios()
    assert all(_peers_recorded(sc) > 0 for sc in scs)
    found: list[str] = []
    peers = 0
    for sc in scs:
        why, seen = _first_difference(sc, monkeypatch, read)
        if why is not None:
            found.append(f"start {sc.start_tick}: {why}")
        peers += sum(o.history.signals_of(i).peer is not None
                     for o in seen for i in range(len(o.history.locations)))
    assert not found, "\n".join(found)
    assert (peers > 0) is read  # signals on: the preemptions reach the policy as readings
