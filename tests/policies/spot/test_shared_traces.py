"""Issue 5's target on the real traces in ../shared/data/spot-traces (every file alone and
each folder's files of one instance type together as zones; task 48 h, deadlines 52 h and
56 h, restart 0.1 h, on-demand 3.06, spot 0.9731 USD/h).
The full table: benchmarks/simulate_sweep.py."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest

from orchestrator.simulate.traces import load_traces, sweep_sets
from policies.spot.sweep import Job, SweepResult, run_sweep

pytestmark = pytest.mark.slow

STARTS = 5  # per trace set and deadline; the benchmark uses more
POLICIES = ("auto", "greedy", "uniform-progress")


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


@pytest.mark.xfail(strict=True, reason="issue 5 target not reached yet: auto is ~5.5 % (52 h) "
                   "but only ~3.1 % (56 h) below uniform-progress, not 5 %")
def test_issue_target_five_percent_below_uniform_progress(sweeps: list[SweepResult]) -> None:
    for res in sweeps:
        up = res.stats["uniform-progress"].mean
        assert res.stats["auto"].mean <= up * Decimal("0.95")
