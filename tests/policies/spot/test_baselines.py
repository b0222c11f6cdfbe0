"""The published baselines behave as "Can't Be Late" describes them."""

from __future__ import annotations

from gpuopt.policies.spot.model import Kind
from gpuopt.policies.spot.registry import get_policy
from gpuopt.policies.spot.replay import simulate
from tests.policies.spot.helpers import scenario

H = 3600.0


def kinds(labels: list[str]) -> str:
    return "".join({"none": ".", "spot": "s", "on-demand": "O"}[x] for x in labels)


def test_on_demand_never_uses_spot() -> None:
    sc = scenario([0] * 20, task=2 * H, deadline=3 * H, overhead=360)
    r = simulate(sc, get_policy("on-demand"))
    assert set(r.labels(1)) == {"on-demand"}
    assert r.finish_s == 2 * H + 360


def test_greedy_waits_then_switches_for_good() -> None:
    # No spot for 1 h, then spot for ever: greedy idles while the deadline allows, goes
    # on-demand when it must and never comes back, even though spot returns.
    trace = [1] * 12 + [0] * 60
    sc = scenario(trace, task=4 * H, deadline=4.5 * H, overhead=360)
    r = simulate(sc, get_policy("greedy"))
    s = kinds(r.labels(1))
    assert s.startswith(".")
    first_od = s.index("O")
    assert set(s[first_od:]) == {"O"}
    assert r.met_deadline


def test_uniform_progress_goes_on_demand_when_behind_and_takes_spot_when_there() -> None:
    # Spot gone at the start: behind the line -> on-demand (not idle). Once ahead of the
    # line at t + 2d it returns to spot (hysteresis), and uses spot whenever idle.
    trace = [1] * 6 + [0] * 200
    sc = scenario(trace, task=10 * H, deadline=14 * H, overhead=360)
    r = simulate(sc, get_policy("uniform-progress"))
    s = kinds(r.labels(1))
    assert s[0] == "."  # at t = 0 it is exactly on the line: not behind yet
    assert s[1] == "O"
    assert "s" in s[6:]
    od_run = s[1:].split("s")[0]
    assert len(od_run) > 5, "hysteresis keeps on-demand for a while after spot returns"
    assert r.met_deadline


def test_uniform_progress_safety_net_switches_idle_job_to_on_demand() -> None:
    # Never any spot: it must end on on-demand and still meet the deadline.
    sc = scenario([1] * 100, task=5 * H, deadline=6 * H, overhead=360)
    r = simulate(sc, get_policy("uniform-progress"))
    assert r.met_deadline
    assert r.decisions[-1].kind is Kind.ON_DEMAND
    assert r.preemptions == 0


def test_published_baselines_stay_in_the_first_zone_and_the_extension_moves() -> None:
    # Zone 0 loses spot at tick 3 for good; zone 1 has it from then on.
    a = [0] * 3 + [1] * 40
    b = [1] * 3 + [0] * 40
    sc = scenario(a, b, task=3 * H, deadline=4 * H, overhead=360)
    for name in ("greedy", "uniform-progress"):
        r = simulate(sc, get_policy(name))
        labels = r.labels(2)
        assert labels[:3] == ["spot:0"] * 3, name
        assert "spot:1" not in labels, f"{name}: the published rules know one zone"
        assert r.met_deadline and r.preemptions == 1
    r = simulate(sc, get_policy("uniform-progress-zones"))
    labels = r.labels(2)
    assert labels[:4] == ["spot:0"] * 3 + ["spot:1"]
    assert r.preemptions == 1 and r.met_deadline
