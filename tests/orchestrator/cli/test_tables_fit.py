"""Every table at 80 columns (and 60 where sensible): no line wider, no number or id cut
('…'), and each number and id printed whole; richer when wider. The width comes from
COLUMNS, so each case sets it (the suite passes at any COLUMNS)."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import pytest

from tests.conftest import PACKAGE_ROOT, REPO_ROOT

EXAMPLES = REPO_ROOT / "deploy" / "examples"
LONG_ID = "qlora-llama2-7b-2fq8x1"  # job ids: a slug of <= 16 characters + 6


@pytest.fixture
def width(monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> int:
    monkeypatch.setenv("COLUMNS", str(request.param))
    return int(request.param)


def _check(text: str, width: int, whole: list[str], messages: tuple[str, ...] = ()) -> None:
    """Tables fit ``width``; the lines starting with one of ``messages`` are messages,
    never wrapped to the width (issue 14: a pipe or CI gets each on one line)."""
    lines = text.splitlines()
    assert lines, "nothing printed"
    too_wide = [ln for ln in lines if len(ln.rstrip()) > width and not ln.startswith(messages)]
    assert too_wide == [], "\n".join(too_wide)
    assert "…" not in text
    flat = " ".join(text.split())
    for cell in whole:
        assert cell in flat, f"{cell!r} is not printed whole:\n{text}"


def _planned(job: str, now: datetime):  # type: ignore[no-untyped-def]
    from gpuopt.jobs.loader import load_job_spec
    from gpuopt.orchestrator.config import load_config
    from gpuopt.orchestrator.reconcile.placement_inputs import plan_spec

    spec = load_job_spec(EXAMPLES / job)
    return spec, plan_spec(spec, load_config(env={}), None, now, top=15)


@pytest.mark.parametrize("width", [80], indirect=True)
@pytest.mark.parametrize("job", ["qlora-7b.yaml", "full-13b-zero3.yaml", "inference-70b.yaml"])
def test_plan(width: int, job: str, capsys: pytest.CaptureFixture[str]) -> None:
    from gpuopt.orchestrator.cli.plan_cmd import print_plan

    now = datetime(2026, 12, 1, tzinfo=UTC)
    spec, planned = _planned(job, now)
    assert planned.snapshot_as_of is not None
    # the snapshot dates each price by its source: the note gives the shown prices' range
    days = sorted({c.offer.observed_at.date() for c in planned.plan.candidates})
    fixed_now = datetime.combine(days[0] + timedelta(days=548), datetime.min.time(), UTC)
    print_plan(spec.name or job, planned, now=fixed_now)
    out = capsys.readouterr().out
    whole = [f"{c.expected_cost:,.2f}" for c in planned.plan.candidates]
    whole += [f"{c.offer.price_per_hour:,.2f}" for c in planned.plan.candidates]
    _check(out, width, whole, messages=("Pick: ", *(f"  {ex.gpu}: " for ex in
                                                   planned.plan.excluded)))
    words = " ".join(out.split())
    if len(days) == 1:
        assert f"prices as of {days[0]}, 548 days old: run `gpuopt prices refresh`" in words
    else:
        newest = 548 - (days[-1] - days[0]).days
        assert (f"prices as of {days[0]} to {days[-1]}, each dated by its source, 548 to "
                f"{newest} days old: run `gpuopt prices refresh`") in words
    assert "preempt. = expected preemptions" in words


def _views() -> list[dict[str, object]]:
    base = {"name": "qlora-llama2-7b-support-bot", "owner": "alice.longname@example.com",
            "team": "support-ml", "placement": "A100-80GB x8 spot azure/westeurope",
            "cost_is_simulated": False}
    return [
        {**base, "id": LONG_ID, "status": "succeeded", "attempts": 12, "cost": "1322.123456"},
        {**base, "id": "quickstart-train-6vw8zw", "status": "running", "attempts": 1,
         "cost": "0.000703", "cost_is_simulated": True, "owner": None},
    ]


@pytest.mark.parametrize("width", [80, 60], indirect=True)
def test_jobs(width: int, capsys: pytest.CaptureFixture[str]) -> None:
    from gpuopt.orchestrator.cli.console import out_console
    from gpuopt.orchestrator.cli.jobs_cmd import print_jobs

    print_jobs(out_console(), _views())
    _check(capsys.readouterr().out, width,
           [LONG_ID, "quickstart-train-6vw8zw", "1,322.12", "0.0007*", "succeeded"],
           messages=("* simulated: ",))


@pytest.mark.parametrize("width", [200], indirect=True)
def test_jobs_wider_shows_more(width: int, capsys: pytest.CaptureFixture[str]) -> None:
    from gpuopt.orchestrator.cli.console import out_console
    from gpuopt.orchestrator.cli.jobs_cmd import print_jobs

    print_jobs(out_console(), _views())
    out = capsys.readouterr().out
    assert "support-ml" in out and "alice.longname@example.com" in out


@pytest.mark.parametrize("width", [80, 60], indirect=True)
def test_status(width: int, capsys: pytest.CaptureFixture[str]) -> None:
    from gpuopt.orchestrator.cli.jobs_cmd import print_status

    attempt = {"attempt": 3, "gpu": "A100-80GB", "gpu_count": 8, "market": "reserved-1y",
               "cloud": "azure", "zone": None, "region": "westeurope",
               "instance_type": "Standard_ND96amsr_A100_v4", "price_per_hour": "32.7726",
               "duration_seconds": 123456.789, "cost": "1123.889911", "end_reason": "failed",
               "status": "ended", "exit_code": 137, "wasted_seconds": 4321.5}
    view = {"id": LONG_ID, "name": "n", "status": "failed", "owner": "a@b.c", "team": None,
            "executor": "skypilot", "submitted_at": "2026-12-01T08:41:46.686132+00:00",
            "deadline_at": None, "budget": None, "progress": None, "cost": "1123.889911",
            "on_demand_cost": "2000", "cost_is_simulated": False, "last_error": None,
            "attempt_list": [attempt],
            "events": [{"at": "2026-12-01T08:41:49.123456+00:00", "kind": "launch",
                        "message": "attempt 3"}]}
    print_status(view)
    out = capsys.readouterr().out
    # "(exit 137)" may wrap at its space (never mid-word): its number is checked whole
    _check(out, width, [LONG_ID, "32.7726", "123,456.8", "1,123.89", "137)", "(exit"],
           messages=("owner ", "cost: ", "  2026-"))
    words = " ".join(out.split())
    assert "2026-12-01 08:41:46 UTC" in words and ".686132" not in out and ".123456" not in out


@pytest.mark.parametrize("width", [80, 60], indirect=True)
def test_prices_every_snapshot_offer(width: int, capsys: pytest.CaptureFixture[str]) -> None:
    from gpuopt.orchestrator.cli.console import out_console
    from gpuopt.orchestrator.cli.prices_cmd import _offer_table
    from gpuopt.providers.snapshot import load_snapshot

    offers = sorted(load_snapshot().offers, key=lambda o: o.price_per_gpu_hour)
    _offer_table(offers, datetime(2026, 12, 1, tzinfo=UTC), out_console(), False)
    out = capsys.readouterr().out
    _check(out, width, [f"{o.price_per_gpu_hour:.4f}" for o in offers[:50]])
    if width >= 80:  # the instance type fits at 80 (the long Azure names too) ...
        # ... unless a place is one long unbreakable word ("gcp/northamerica-northeast2",
        # Vast.ai's "Hafnarfjarðarkaupstaður,") or the type is longer than Azure's
        # (Nebius' "gpu-h100-sxm_8gpu-128vcpu-1600gb"): then the instance type gives way
        # (and a GPU label as long as "8xRTXPRO6000" leaves it no room either)
        short = [o for o in offers if len(o.instance_type) <= 25
                 and len(f"{o.cloud}/{o.zone or o.region}") <= 22
                 and len(f"{o.gpu_count}x{o.gpu}") <= 11]
        _offer_table(short, datetime(2026, 12, 1, tzinfo=UTC), out_console(), False)
        assert "Standard_ND96amsr_A100_v4" in capsys.readouterr().out


@pytest.mark.parametrize("width", [80, 200], indirect=True)
def test_prices_runpod_global_rows_read_on_one_line(width: int,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """`gpuopt prices --cloud runpod`: each row's place on its line, never folded
    ("runpod (48 data" over "centres)"): its short form at 80 columns, whole when wider."""
    from gpuopt.orchestrator.cli.console import out_console
    from gpuopt.orchestrator.cli.prices_cmd import _offer_table
    from gpuopt.providers.snapshot import load_snapshot

    snap = load_snapshot()
    offers = sorted((o for o in snap.offers if o.cloud == "runpod"),
                    key=lambda o: o.price_per_gpu_hour)
    _offer_table(offers, datetime(2026, 12, 1, tzinfo=UTC), out_console(), False, snap.places)
    out = capsys.readouterr().out
    _check(out, width, [f"{o.price_per_gpu_hour:.4f}" for o in offers]
           + [o.instance_type for o in offers])
    rows = out.splitlines()[2:]
    assert len(rows) == len(offers)  # one line per offer: nothing folded
    label = "runpod/48 DCs" if width == 80 else "runpod (48 data centres)"
    assert sum(label in row for row in rows) >= len(offers) // 2, out


@pytest.mark.parametrize("width", [80], indirect=True)
def test_prices_history_snapshot_points(width: int, capsys: pytest.CaptureFixture[str]) -> None:
    from gpuopt.orchestrator.cli.console import out_console
    from gpuopt.orchestrator.cli.prices_cmd import _history_table
    from gpuopt.orchestrator.store.price_history import HistoryPoint
    from gpuopt.providers.snapshot import load_snapshot

    points = [HistoryPoint(o, o.observed_at, o.observed_at) for o in load_snapshot().offers]
    _history_table(points, True, out_console(), False)
    _check(capsys.readouterr().out, width, [f"{p.offer.price_per_gpu_hour:.4f}"
                                            for p in points[:40]])


@pytest.mark.parametrize("width", [80, 60], indirect=True)
@pytest.mark.parametrize(("job", "gpu"), [("qlora-7b.yaml", "A100-40GB"),
                                        ("full-13b-zero3.yaml", "A100-80GB"),
                                        ("inference-70b.yaml", "H100")])
def test_estimate(width: int, job: str, gpu: str, capsys: pytest.CaptureFixture[str]) -> None:
    from gpuopt.orchestrator.cli.estimate_cmd import estimate

    estimate(EXAMPLES / job, gpu=None, as_json=False)
    title = load_job_spec_name(job)
    _check(capsys.readouterr().out, width, ["total", gpu], messages=(f"{title} (",))


def load_job_spec_name(job: str) -> str:
    from gpuopt.jobs.loader import load_job_spec

    return load_job_spec(EXAMPLES / job).name or job


@pytest.mark.parametrize("width", [80], indirect=True)
def test_weekly_report_text(width: int) -> None:
    from zoneinfo import ZoneInfo

    from gpuopt.orchestrator.report.aggregate import build_report
    from gpuopt.orchestrator.report.render_text import render_text
    from gpuopt.orchestrator.report.weeks import IsoWeek
    from tests.orchestrator.report.ledger import AS_OF, TEAM_BUDGETS, ledger

    attempts, jobs = ledger()
    long = [a.__class__(**{**{f: getattr(a, f) for f in a.__slots__},  # type: ignore[attr-defined]
                           "owner": f"{a.owner}.longname@example.com"}) for a in attempts]
    for recs in (attempts, long):
        r = build_report(recs, jobs, IsoWeek(2026, 48), ZoneInfo("UTC"), as_of=AS_OF,
                         team_budgets=TEAM_BUDGETS)
        _check(render_text(r), width, ["$780.67", "$1,000.00", "llama-ft"])


def test_snapshot_age_uses_the_given_clock() -> None:
    from gpuopt.orchestrator.cli.snapshot_age import age_days, snapshot_note

    as_of = date(2025, 6, 1)
    now = datetime(2026, 12, 1, 3, tzinfo=UTC)
    assert age_days(as_of, now) == 548
    assert snapshot_note(as_of, now) == ("prices as of 2025-06-01, 548 days old: run "
                                         "`gpuopt prices refresh`")
    assert snapshot_note(as_of, datetime(2025, 6, 1, 23, tzinfo=UTC)).endswith(
        "today: run `gpuopt prices refresh`")


def test_tables_helper_never_cuts_even_when_too_narrow() -> None:
    import io

    from rich.console import Console

    from gpuopt.orchestrator.cli.tables import ID, NUM, Col, print_table

    console = Console(file=io.StringIO(), width=30)
    print_table(console, [Col("id", ID), Col("note", min_width=4), Col("USD", NUM)],
                [[LONG_ID, "a long note " * 3, "1,322.45"]])
    out = console.file.getvalue()  # type: ignore[attr-defined]
    assert LONG_ID in out and "1,322.45" in out and "…" not in out


def test_every_cli_table_goes_through_the_helper() -> None:
    """No command builds a rich Table itself (the helper is what keeps numbers whole)."""
    cli = PACKAGE_ROOT / "orchestrator" / "cli"
    offenders = [p.name for p in cli.glob("*.py")
                 if p.name != "tables.py" and "Table(" in p.read_text(encoding="utf-8")]
    assert offenders == []
