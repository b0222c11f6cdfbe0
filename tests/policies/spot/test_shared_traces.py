"""Issue 5's target on the real traces in ../shared/data/spot-traces (every file alone and
each folder's files of one instance type together as zones; task 48 h, deadlines 52 h and
56 h, restart 0.1 h, on-demand 3.06, spot 0.9731 USD/h).
The full table: benchmarks/simulate_sweep.py."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest

from gpuopt.orchestrator.simulate.traces import load_traces, sweep_sets
from gpuopt.policies.spot.sweep import Job, SweepResult, run_sweep

pytestmark = pytest.mark.slow

STARTS = 5  # per trace set and deadline; the benchmark uses more
POLICIES = ("auto", "greedy", "uniform-progress", "uniform-progress-zones")


@pytest.fixture(scope="module")
def sweeps() -> list[SweepResult]:
    root = Path(__file__).resolve().parents[3] / ".." / "shared" / "data" / "spot-traces"
    files = sorted(root.glob("*/*.json"))
    if not files:
        pytest.skip(f"{root} is absent (CI always has ../shared beside the checkout)")
    sets = sweep_sets(load_traces(files), "both")
    job = Job(48 * 3600.0, 360.0, Decimal("0.9731"), Decimal("3.06"))
    return [run_sweep(sets, job, h * 3600.0, POLICIES, STARTS) for h in (52, 56)]


def test_auto_never_misses_and_beats_uniform_progress(sweeps: list[SweepResult]) -> None:
    for res in sweeps:
        assert res.runs > 0
        assert res.stats["auto"].misses == 0
        assert res.stats["auto"].mean < res.stats["uniform-progress"].mean
        assert res.ratio("auto") is not None and res.ratio("auto") >= 1  # type: ignore[operator]


def test_issue_target_five_percent_below_uniform_progress(sweeps: list[SweepResult]) -> None:
    """The target, against the published rules (which run in one zone: the first of a
    multi-zone set). The full sweep (24 starts) measures -10.9 % (52 h) and -9.2 % (56 h)."""
    for res in sweeps:
        up = res.stats["uniform-progress"].mean
        assert res.stats["auto"].mean <= up * Decimal("0.95")


def test_auto_beats_uniform_progress_given_zone_moves_too(sweeps: list[SweepResult]) -> None:
    """Against the published rules allowed to move zones like auto does, auto is still
    cheaper, but not by 5 % at 56 h: the full sweep measures -5.5 % (52 h), -3.1 % (56 h)."""
    for res in sweeps:
        assert res.stats["auto"].mean < res.stats["uniform-progress-zones"].mean
