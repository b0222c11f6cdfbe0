"""Sweep sets: multi-zone sets only combine traces of the same instance type."""

from __future__ import annotations

from pathlib import Path

from gpuopt.orchestrator.simulate.traces import Trace, instance_kind, sweep_sets


def _t(path: str) -> Trace:
    return Trace(Path(path), 600.0, (0, 1, 0))


def test_instance_kind_from_the_spot_traces_naming() -> None:
    assert instance_kind(Path("d/us-west-2a_v100_8.json")) == "v100_8"
    assert instance_kind(Path("d/plain.json")) == ""


def test_multi_sets_group_by_folder_and_instance_type() -> None:
    traces = [_t("a/us-west-2a_k80_1.json"), _t("a/us-west-2b_k80_1.json"),
              _t("a/us-west-2a_v100_8.json"), _t("a/us-west-2b_v100_8.json"),
              _t("a/us-west-2a_v100_1.json"), _t("b/us-east-1c_v100_1.json"),
              _t("b/us-east-1f_v100_1.json"), _t("c/x.json"), _t("c/y.json")]
    multi = {s.name: len(s.traces) for s in sweep_sets(traces, "multi")}
    # v100_1 in folder a has one zone only: no set; K80 never joins V100.
    assert multi == {"a/*_k80_1.json": 2, "a/*_v100_8.json": 2, "b/*_v100_1.json": 2,
                     "c/*": 2}
    both = sweep_sets(traces, "both")
    assert len(both) == len(traces) + len(multi)
