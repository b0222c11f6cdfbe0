from __future__ import annotations

import json
import re
from decimal import Decimal
from zoneinfo import ZoneInfo

from gpuopt.orchestrator.report.aggregate import build_report
from gpuopt.orchestrator.report.charts import DAILY, VERSUS, render_charts
from gpuopt.orchestrator.report.model import WeeklyReport
from gpuopt.orchestrator.report.render_html import render_html
from gpuopt.orchestrator.report.render_json import SCHEMA, render_json
from gpuopt.orchestrator.report.render_text import render_text
from gpuopt.orchestrator.report.weeks import IsoWeek
from tests.orchestrator.report.ledger import AS_OF, TEAM_BUDGETS, attempt, ledger, t

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def report(**kw: object) -> WeeklyReport:
    attempts, jobs = ledger()
    return build_report(
        attempts, jobs, IsoWeek(2026, 48), ZoneInfo("UTC"), as_of=AS_OF,
        team_budgets=TEAM_BUDGETS, **kw,  # type: ignore[arg-type]
    )


def test_json_money_is_exact_and_keys_are_stable() -> None:
    r = report()
    data = json.loads(render_json(r))
    assert data["schema"] == SCHEMA
    assert data["summary"]["spend"] == "780.666666"
    assert Decimal(data["summary"]["on_demand"]) == r.summary.on_demand
    assert data["summary"]["savings_pct"] == "20.3"
    assert data["summary"]["wasted_gpu_hours"] == "4.000000"
    assert data["previous"]["spend"] == "30.000000"
    assert data["change"] == {"spend": "750.666666", "spend_pct": "2502.2"}
    # The days add up exactly when read back as Decimal.
    assert sum(Decimal(d["total"]) for d in data["daily"]) == Decimal(data["summary"]["spend"])
    assert data["daily"][3]["by_cloud"]["azure"] == "3.333333"
    assert data["top_jobs"] == ["j1", "j3", "j2", "j5"]
    jobs = {j["job_id"]: j for j in data["jobs"]}
    assert jobs["j1"]["cost_to_date"] == "732.000000" and jobs["j1"]["budget_burn_pct"] == "73.2"
    assert jobs["j2"]["budget"] is None
    assert data["team_budgets"][1] == {
        "team": "vision", "budget": "50.000000", "spent": "62.666666",
        "remaining": "-12.666666", "burn_pct": "125.3",
    }
    # Same input, same bytes; keys sorted at every level.
    assert render_json(report()) == render_json(r)
    text = render_json(r)
    assert list(json.loads(text)) == sorted(json.loads(text))
    # No float anywhere a money value lives.
    assert not any(isinstance(v, float) for v in _leaves(data))


def _leaves(value: object) -> list[object]:
    if isinstance(value, dict):
        return [x for v in value.values() for x in _leaves(v)]
    if isinstance(value, list):
        return [x for v in value for x in _leaves(v)]
    return [value]


def test_text_shows_rounded_figures_in_aligned_columns() -> None:
    out = render_text(report())
    assert "gpuopt weekly cost report - 2026-W48 (2026-11-23 to 2026-11-29, UTC)" in out
    summary = out.split("\n\n")[1].splitlines()
    assert re.search(r"Spend\s+\$780\.67\s+\$30\.00\s+\+\$750\.67 \(\+2502\.2%\)", summary[2])
    assert re.search(r"Saved %\s+20\.3%", out)
    assert re.search(r"GPU-hours wasted\s+4\.0\s+0\.2", out)
    # Right-aligned money columns: every row of a table has the same length up to its last cell.
    cloud_rows = out.split("Spend by cloud\n")[1].split("\n\n")[0].splitlines()
    assert len({len(row) for row in cloud_rows}) == 1
    assert "Jobs still running (1)" in out and "mistral-ft" in out
    assert re.search(r"vision\s+\$50\.00\s+\$62\.67\s+125\.3%\s+-\$12\.67", out)


def test_html_is_email_safe_and_references_the_given_images() -> None:
    html = render_html(report(), {DAILY: "cid:a@x", VERSUS: "cid:b@x"})
    assert 'src="cid:a@x"' in html and 'src="cid:b@x"' in html
    lowered = html.lower()
    for banned in ("<script", "<style", "<link", "class=", "display:flex", "javascript:"):
        assert banned not in lowered
    assert "$780.67" in html and "$198.80" in html and "20.3%" in html
    assert "4.0 GPU-h wasted" in html


def test_html_escapes_names() -> None:
    evil = attempt(job_id="e", job_name="<b>x</b>&", owner="o<", team="t", cloud="aws",
                   region="r", instance_type="i", gpu="L4", gpu_count=1, market="spot",
                   price_per_hour=Decimal(1), started_at=t(24, 0), ended_at=t(24, 1),
                   end_reason="succeeded")
    r = build_report([evil], [], IsoWeek(2026, 48), ZoneInfo("UTC"), as_of=AS_OF)
    html = render_html(r, {DAILY: "d.png", VERSUS: "v.png"})
    assert "<b>x</b>" not in html and "&lt;b&gt;x&lt;/b&gt;&amp;" in html


def test_charts_are_png() -> None:
    charts = render_charts(report())
    assert set(charts) == {DAILY, VERSUS}
    for png in charts.values():
        assert png.startswith(PNG_MAGIC) and len(png) > 5000


def test_an_empty_week_renders() -> None:
    r = build_report([], [], IsoWeek(2026, 48), ZoneInfo("Europe/Paris"))
    assert "$0.00" in render_text(r)
    assert json.loads(render_json(r))["summary"]["savings_pct"] is None
    assert all(p.startswith(PNG_MAGIC) for p in render_charts(r).values())


def test_long_job_lists_end_with_a_more_row_in_html() -> None:
    extra = [
        attempt(job_id=f"x{i:02d}", job_name=f"x{i:02d}", owner="erin", team="nlp", cloud="aws",
                region="us-east-1", instance_type="g5.xlarge", gpu="A10G", gpu_count=1,
                market="on-demand", price_per_hour=Decimal(1), started_at=t(24, 0),
                ended_at=t(24, 1), end_reason="succeeded")
        for i in range(12)
    ]
    attempts, jobs = ledger()
    r = build_report(attempts + extra, jobs, IsoWeek(2026, 48), ZoneInfo("UTC"), as_of=AS_OF)
    assert len(r.jobs_in("finished")) == 14
    html = render_html(r, {DAILY: "d.png", VERSUS: "v.png"})
    # 14 finished jobs: j1, j5, x00..x07, then "4 more" (x08..x11, $1 each); text lists all.
    assert "... 4 more" in html and "Jobs finished (14, $726.67 this week)" in html
    assert "x07" in html and "x08" not in html and "x11" in render_text(r)


def test_invariants_on_the_sample_ledger() -> None:
    import importlib.util
    from pathlib import Path

    script = Path(__file__).resolve().parents[3] / "docs" / "make_sample_report.py"
    spec = importlib.util.spec_from_file_location("make_sample_report", script)
    assert spec is not None and spec.loader is not None
    sample = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(sample)
    attempts, jobs = sample.synthetic_ledger()
    tz = sample.TZ
    r = build_report(attempts, jobs, sample.WEEK, tz, as_of=sample.WEEK.bounds(tz)[1])
    total = r.summary.total
    assert total > 0
    for lines in (r.by_cloud, r.by_gpu, r.by_market, r.by_owner, r.by_team):
        assert sum((ln.cost for ln in lines), Decimal(0)) == total
        assert sum((ln.on_demand for ln in lines), Decimal(0)) == r.summary.on_demand
    assert sum((d.total for d in r.daily), Decimal(0)) == total
    assert sum((j.week_cost for j in r.jobs), Decimal(0)) == total
    start, end = sample.WEEK.bounds(tz)
    assert total == sum((a.cost_between(start, end) for a in attempts), Decimal(0))
    assert r.summary.savings >= 0
