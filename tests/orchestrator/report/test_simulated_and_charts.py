"""Local-executor (simulated) runs are summed apart from real spend in the weekly report;
chart axes show cents for small figures."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime
from decimal import Decimal
from zoneinfo import ZoneInfo

from gpuopt.orchestrator.report.aggregate import build_report
from gpuopt.orchestrator.report.charts import bar_label, money_tick, render_charts
from gpuopt.orchestrator.report.render_html import render_html
from gpuopt.orchestrator.report.render_json import render_json
from gpuopt.orchestrator.report.render_text import render_text
from gpuopt.orchestrator.report.weeks import IsoWeek
from tests.orchestrator.report.ledger import AS_OF, attempt, job, ledger, t

WEEK, UTC_ZONE = IsoWeek(2026, 48), ZoneInfo("UTC")


def _demo_runs() -> tuple[list, list]:  # type: ignore[type-arg]
    """A week of local demo runs: 3 jobs of 10 min at the L4 spot price, one preempted."""
    runs = [
        attempt(job_id=f"demo{i}", job_name="quickstart", owner="alice", team="nlp",
                attempt=1, cloud="aws", region="us-east-1", instance_type="g6.xlarge",
                gpu="L4", gpu_count=1, market="spot", price_per_hour=Decimal("0.2709"),
                started_at=t(24 + i, 9), ended_at=t(24 + i, 9, 10),
                end_reason="preempted" if i == 0 else "succeeded", simulated=True)
        for i in range(3)
    ]
    jobs = [replace(job(f"demo{i}", "quickstart", "alice", "nlp", "succeeded", t(24 + i, 9, 10),
                        None), simulated=True) for i in range(3)]
    return runs, jobs


def test_simulated_spend_is_apart_from_real_spend() -> None:
    attempts, jobs = ledger()
    real = build_report(attempts, jobs, WEEK, UTC_ZONE, as_of=AS_OF)
    runs, demo_jobs = _demo_runs()
    both = build_report([*attempts, *runs], [*jobs, *demo_jobs], WEEK, UTC_ZONE, as_of=AS_OF)
    # Every real figure is what it was without the demo runs.
    assert both.summary == real.summary and both.by_cloud == real.by_cloud
    assert both.jobs == real.jobs and both.preemptions == real.preemptions
    assert real.simulated is None
    sim = both.simulated
    assert sim is not None and both.simulated_jobs == ("demo0", "demo1", "demo2")
    # 3 x 10 min at $0.2709/h = $0.13545 (0.045150 each); one preemption.
    assert sim.total == Decimal("0.135450") and sim.preemptions == 1
    text = render_text(both)
    assert "Simulated runs (local executor" in text and "$0.14 for 3 job(s)" in " ".join(
        text.split())
    doc = json.loads(render_json(both))
    assert doc["simulated"]["spend"] == "0.135450" and doc["simulated"]["jobs"] == [
        "demo0", "demo1", "demo2"]
    assert json.loads(render_json(real))["simulated"] is None
    assert "Simulated runs" in render_html(both, {"daily-spend": "a.png", "vs-on-demand": "b.png"})


def test_a_demo_only_week_shows_no_real_spend() -> None:
    runs, demo_jobs = _demo_runs()
    r = build_report(runs, demo_jobs, WEEK, UTC_ZONE, as_of=AS_OF)
    assert r.summary.total == 0 and r.jobs == () and r.simulated is not None
    assert r.simulated.total > 0


def test_chart_axes_show_cents_for_small_figures() -> None:
    small, large = money_tick(0.5), money_tick(1200.0)
    assert [small(v) for v in (0.0, 0.25, 0.5)] == ["$0.00", "$0.25", "$0.50"]
    assert [large(v) for v in (0.0, 500.0, 1000.0)] == ["$0", "$500", "$1,000"]
    assert bar_label(Decimal("0.42")) == "$0.42" and bar_label(Decimal("1234.5")) == "$1,234"


def test_charts_render_for_a_cents_only_week() -> None:
    from gpuopt.orchestrator.ledger.records import AttemptRecord

    tiny: AttemptRecord = attempt(
        job_id="j", job_name="j", owner="a", team="t", cloud="aws", region="us-east-1",
        instance_type="g6.xlarge", gpu="L4", gpu_count=1, market="spot",
        price_per_hour=Decimal("0.2709"), started_at=datetime(2026, 11, 24, 9, tzinfo=UTC),
        ended_at=datetime(2026, 11, 24, 10, tzinfo=UTC), end_reason="succeeded")
    pngs = render_charts(build_report([tiny], [], WEEK, UTC_ZONE, as_of=AS_OF))
    assert all(p.startswith(b"\x89PNG") for p in pngs.values())


def test_the_ledger_marks_local_executor_runs_simulated(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from gpuopt.orchestrator.store import open_store
    from gpuopt.orchestrator.store.jobs_tables import AttemptRow, JobRow
    from gpuopt.orchestrator.store.ledger_repo import load_report_ledger

    store = open_store(f"sqlite:///{tmp_path / 'gpuopt.db'}")
    now = t(24, 9)
    with store.transaction() as session:
        for jid, executor in (("local-1", "local"), ("sky-1", "skypilot")):
            session.add(JobRow(id=jid, name=jid, status="succeeded", spec_yaml="run: x",
                               spec_path="/j.yaml", submitted_at=now, executor=executor,
                               plan_json="{}",
                               updated_at=now, finished_at=t(24, 10)))
            session.flush()
            session.add(AttemptRow(job_id=jid, number=1, cluster_name=f"{jid}-1", cloud="aws",
                                   region="us-east-1", instance_type="g6.xlarge", gpu="L4",
                                   gpu_count=1, market="spot", price_per_hour_micros=270900,
                                   status="ended", created_at=now, started_at=now,
                                   ended_at=t(24, 10), end_reason="succeeded"))
    with store.session() as session:
        attempts, jobs = load_report_ledger(session, t(23, 0), t(30, 0))
    store.close()
    assert {a.job_id: a.simulated for a in attempts} == {"local-1": True, "sky-1": False}
    assert {j.job_id: j.simulated for j in jobs} == {"local-1": True, "sky-1": False}
