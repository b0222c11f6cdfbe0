"""The sweep's information columns: each is ``run_one`` under that model."""

from __future__ import annotations

import random

from gpuopt.policies.spot.model import Information
from gpuopt.policies.spot.sweep import COLUMNS, OPTIMUM, ColumnTable, run_columns, run_one
from tests.policies.spot.helpers import scenario


def test_each_column_is_the_replay_under_its_information_model() -> None:
    rng = random.Random(7)
    traces = [[int(rng.random() < 0.4) for _ in range(80)] for _ in range(2)]
    sc = scenario(*traces, task=30 * 600, deadline=36 * 600, overhead=300)
    cols = run_columns(sc, ["auto", "uniform-progress"])
    assert tuple(cols) == COLUMNS
    for info in COLUMNS:
        assert cols[info] == run_one(sc, ["auto", "uniform-progress"], info)
    table = ColumnTable(sc.deadline_s, ("auto", "uniform-progress"), COLUMNS)
    table.add("multi-zone", cols)
    md = table.markdown(["multi-zone"])
    opt = cols[Information.TICK][OPTIMUM]
    assert opt is not None
    res = table.results[(Information.LAUNCH_PROBE, "multi-zone")]
    assert res.runs == 1 and res.stats[OPTIMUM].mean == opt[0]
    tick = table.results[(Information.TICK, "multi-zone")].ratio("auto")
    assert f"| auto | multi-zone | {tick:.3f} (" in md
    assert "multi-zone: 1 runs (0 infeasible skipped)" in md
