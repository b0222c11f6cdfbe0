"""The pure side of telemetry: nvidia-smi's CSV, the summary, its bounds."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from gpuopt.jobs.telemetry.parse import (
    MAX_SERIES,
    QUERY_ARGS,
    Accumulator,
    GpuReading,
    parse_query_output,
    tokens_from_progress,
)
from gpuopt.jobs.telemetry.summary import (
    TELEMETRY_MARKER,
    parse_summary,
    summary_from_json,
    telemetry_from_lines,
)

# What `nvidia-smi --query-gpu=index,memory.used,memory.total,utilization.gpu,power.draw
# --format=csv,noheader,nounits` prints on a 2-GPU node, one of them without power
# readings.
REAL = "0, 1234, 81559, 87, 312.45\n1, 40960, 81559, 12, [N/A]\n"


def test_query_is_what_the_issue_names() -> None:
    assert QUERY_ARGS == ("--query-gpu=index,memory.used,memory.total,utilization.gpu,"
                          "power.draw", "--format=csv,noheader,nounits")


def test_parses_real_lines_and_na() -> None:
    assert parse_query_output(REAL) == [
        GpuReading(0, 1234.0, 81559.0, 87.0, 312.45),
        GpuReading(1, 40960.0, 81559.0, 12.0, None),
    ]


def test_junk_lines_are_skipped() -> None:
    text = ("No devices were found\n0, 1, 2\n, , , , \nx, 1, 2, 3, 4\n"
            "3, [Not Supported], 16384, 101, -5\n")
    assert parse_query_output(text) == [GpuReading(3, None, 16384.0, None, None)]


def test_tokens_from_progress() -> None:
    assert tokens_from_progress('{"step": 3, "total": 9, "tokens": 1200}') == 1200
    for bad in ('{"step": 3}', '{"tokens": -1}', '{"tokens": true}', "[1]", "{", ""):
        assert tokens_from_progress(bad) is None


def _acc() -> Accumulator:
    acc = Accumulator(15.0)
    readings = parse_query_output(REAL)
    for i in range(5):  # 60 s at 15 s, tokens 0, 1500, ... (100 tokens/s)
        acc.add(1000.0 + 15 * i, readings, tokens=1500 * i)
    return acc


def test_summary_of_samples() -> None:
    doc = _acc().to_json()
    assert doc["samples"] == 5 and doc["seconds"] == 60.0
    assert doc["peak_memory_mib"] == [1234, 40960]
    assert doc["memory_total_mib"] == [81559, 81559]
    assert doc["mean_utilization_pct"] == 49.5  # (87 + 12) / 2
    assert doc["median_utilization_pct"] == 12.0  # 5 x 12, 5 x 87: the lower middle
    # 312.45 W (GPU 1 reads [N/A]) for 4 intervals of 15 s = 5.206 Wh
    assert doc["energy_wh"] == round(312.45 * 60 / 3600, 3)
    assert doc["tokens_per_second"] == 100.0 and doc["tokens"] == 6000


def test_no_power_means_no_energy() -> None:
    acc = Accumulator(1.0)
    acc.add(0.0, [GpuReading(0, 10.0, 100.0, 50.0, None)])
    acc.add(1.0, [GpuReading(0, 10.0, 100.0, 50.0, None)])
    assert acc.to_json()["energy_wh"] is None


def test_series_stays_bounded_and_keeps_the_peak() -> None:
    acc = Accumulator(1.0)
    for i in range(10_000):
        used = 70_000.0 if i == 6_789 else 1_000.0
        acc.add(float(i), [GpuReading(0, used, 80_000.0, float(i % 100), 100.0)])
    doc = acc.to_json()
    series = doc["series"]
    assert isinstance(series, list) and 2 <= len(series) <= MAX_SERIES
    assert max(p[2] for p in series) == 70_000
    assert doc["peak_memory_mib"] == [70_000]
    assert len(json.dumps(doc)) < 4096


def test_summary_round_trip_and_status_keys() -> None:
    text = json.dumps(_acc().to_json())
    s = parse_summary(text)
    assert s is not None and s.gpus == 2 and s.low_utilization
    assert s.to_status_json() == {
        "peak_memory_mib": [1234, 40960], "mean_utilization_pct": 49.5,
        "energy_wh": 5.207, "samples": 5,
        "tokens_per_second": 100.0}
    assert summary_from_json(s.to_json()) == s


def test_hostile_summaries_are_dropped_not_raised() -> None:
    for bad in ("", "{", "[]", '{"samples": 0, "peak_memory_mib": [1]}',
                '{"samples": 2, "peak_memory_mib": "x"}', '{"samples": 2}',
                '{"samples": 2, "peak_memory_mib": [1e300]}', "9" * 20_000):
        assert parse_summary(bad) is None
    s = parse_summary('{"samples": 2, "peak_memory_mib": [5], "mean_utilization_pct": 400,'
                      ' "energy_wh": "x", "series": [[1, 2], "y", [1, 2, 3, 4]]}')
    assert s is not None and s.mean_utilization_pct is None and s.energy_wh is None
    assert s.series == ((1.0, 2.0, 3.0, 4.0),)


def test_newest_summary_from_log_lines() -> None:
    one = json.dumps({"samples": 1, "peak_memory_mib": [100]})
    two = json.dumps({"samples": 2, "peak_memory_mib": [200]})
    lines = ["hello", f"{TELEMETRY_MARKER} {one}", f"{TELEMETRY_MARKER} {two}",
             f"{TELEMETRY_MARKER} {{broken"]
    found = telemetry_from_lines(lines)
    assert found is not None and found.peak_memory_mib == (200,)


def test_the_parser_is_pure_and_ships_alone() -> None:
    import ast

    from tests.conftest import PACKAGE_ROOT
    from tests.test_layers import _impurities

    path = PACKAGE_ROOT / "jobs" / "telemetry" / "parse.py"
    assert _impurities(path) == []
    tree = ast.parse(path.read_text(encoding="utf-8"))
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)} | {
        a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    assert imported <= {"__future__", "typing", "json"}  # nothing of gpuopt: it runs alone


@given(st.text(max_size=2000))
def test_any_text_parses_without_raising(text: str) -> None:
    for r in parse_query_output(text):
        assert r.utilization_pct is None or 0 <= r.utilization_pct <= 100
    tokens_from_progress(text)
    parse_summary(text)


@given(st.lists(st.tuples(st.floats(0, 1e5), st.floats(0, 100), st.floats(0, 1e3)),
                min_size=1, max_size=300))
def test_summary_bounds_hold_for_any_samples(samples: list[tuple[float, float, float]]) -> None:
    acc = Accumulator(15.0)
    for i, (mem, util, power) in enumerate(samples):
        acc.add(15.0 * i, [GpuReading(0, mem, 1e5, util, power)], tokens=100 * i)
    doc = acc.to_json()
    assert doc["samples"] == len(samples)
    assert doc["peak_memory_mib"] == [round(max(m for m, _, _ in samples))]
    assert len(doc["series"]) <= MAX_SERIES  # type: ignore[arg-type]
    median = doc["median_utilization_pct"]
    assert isinstance(median, float) and 0 <= median <= 100
    assert summary_from_json(json.loads(json.dumps(doc))) is not None
