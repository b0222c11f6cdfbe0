"""The report's utilisation section: GPU-hours by band, mostly idle jobs, cost per million
tokens, worked out by hand."""

from __future__ import annotations

import json
from decimal import Decimal
from zoneinfo import ZoneInfo

from gpuopt.orchestrator.report.aggregate import build_report
from gpuopt.orchestrator.report.charts import DAILY, VERSUS
from gpuopt.orchestrator.report.render_html import render_html
from gpuopt.orchestrator.report.render_json import render_json
from gpuopt.orchestrator.report.render_text import render_text
from gpuopt.orchestrator.report.utilisation import utilisation_of
from gpuopt.orchestrator.report.weeks import IsoWeek
from tests.orchestrator.report.ledger import AS_OF, attempt, ledger, t

D = Decimal
START, END = t(23, 0), t(30, 0)


def _measured() -> list:  # type: ignore[type-arg]
    common = dict(owner="o", team="x", cloud="aws", region="us-east-1",
                  instance_type="g5.xlarge", market="on-demand", end_reason="succeeded")
    return [
        # busy: 2x A10G for 10 h at 90% = 20 GPU-h in "75% and over"; 36m tokens for $20
        attempt(job_id="busy", job_name="busy-ft", attempt=1, gpu="A10G", gpu_count=2,
                price_per_hour=D("2.00"), started_at=t(24, 0), ended_at=t(24, 10),
                utilization_pct=90.0, tokens_processed=36_000_000, **common),
        # idle: 1x A10G for 4 h at 30% = 4 GPU-h in "25-50%"; then 4 h at 10% = 4 GPU-h
        # "under 25%": weighted mean 20%
        attempt(job_id="idle", job_name="idle-ft", attempt=1, gpu="A10G", gpu_count=1,
                price_per_hour=D("1.00"), started_at=t(25, 0), ended_at=t(25, 4),
                utilization_pct=30.0, **common),
        attempt(job_id="idle", job_name="idle-ft", attempt=2, gpu="A10G", gpu_count=1,
                price_per_hour=D("1.00"), started_at=t(25, 4), ended_at=t(25, 8),
                utilization_pct=10.0, **common),
        # straddles the week's start: 2 h in the week of 4; 1m tokens -> 0.5m in the week
        attempt(job_id="early", job_name="early-ft", attempt=1, gpu="A10G", gpu_count=1,
                price_per_hour=D("3.00"), started_at=t(22, 22), ended_at=t(23, 2),
                utilization_pct=60.0, tokens_processed=1_000_000, **common),
        # not measured: 1 GPU-h
        attempt(job_id="dark", job_name="dark", attempt=1, gpu="A10G", gpu_count=1,
                price_per_hour=D("1.00"), started_at=t(26, 0), ended_at=t(26, 1), **common),
    ]


def test_bands_idle_jobs_and_cost_per_million_tokens() -> None:
    u = utilisation_of(_measured(), START, END)
    assert u is not None
    assert dict(u.bands) == {"under 25%": D("4.000000"), "25-50%": D("4.000000"),
                             "50-75%": D("2.000000"), "75% and over": D("20.000000")}
    assert u.unmeasured_gpu_hours == D("1.000000")
    assert [(j.job_id, j.gpu_hours, j.utilization_pct) for j in u.idle_jobs] == [
        ("idle", D("8.000000"), D("20.0"))]
    costs = {c.job_id: c for c in u.token_costs}
    assert set(costs) == {"busy", "early"}
    assert costs["busy"].cost == D("20.000000") and costs["busy"].tokens == 36_000_000
    assert costs["busy"].per_million == D("0.555556")  # $20 / 36
    assert costs["early"].tokens == 500_000 and costs["early"].cost == D("6.000000")
    assert costs["early"].per_million == D("12.000000")
    assert [c.job_id for c in u.token_costs] == ["early", "busy"]  # highest first


def test_no_measurement_no_section_figures() -> None:
    attempts, _ = ledger()
    assert utilisation_of(attempts, START, END) is None


def test_every_renderer_shows_the_section() -> None:
    attempts, jobs = ledger()
    r = build_report([*attempts, *_measured()], jobs, IsoWeek(2026, 48), ZoneInfo("UTC"),
                     as_of=AS_OF)
    text = render_text(r)
    assert "GPU utilisation (measured by nvidia-smi)" in text
    assert "idle-ft" in text and "busy-ft" in text
    assert all(len(line) <= 80 for line in text.splitlines())
    data = json.loads(render_json(r))["utilisation"]
    assert data["gpu_hours_by_band"]["75% and over"] == "20.000000"
    assert data["idle_jobs"][0]["name"] == "idle-ft"
    assert "Cost per million tokens" in render_html(r, {DAILY: "d.png", VERSUS: "v.png"})
    plain = build_report(attempts, jobs, IsoWeek(2026, 48), ZoneInfo("UTC"), as_of=AS_OF)
    assert json.loads(render_json(plain))["utilisation"] is None
    assert "no attempt of this report was measured" in render_text(plain)
