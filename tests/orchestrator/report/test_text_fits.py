"""The text report fits 80 columns with long job names, owners and places (issue 29.3):
text cells wrap onto continuation lines at spaces and hyphens; numbers stay whole."""

from __future__ import annotations

from zoneinfo import ZoneInfo


def _long(a):  # type: ignore[no-untyped-def]
    d = {f: getattr(a, f) for f in a.__slots__}
    d["owner"] = f"{a.owner}.longname@example-company.com"
    d["job_name"] = f"{a.job_name}-with-a-much-longer-name-x"
    d["region"] = "northamerica-northeast1"
    d["instance_type"] = "Standard_ND96amsr_A100_v4"
    return a.__class__(**d)


def test_text_report_with_long_names_fits_80() -> None:
    from gpuopt.orchestrator.report.aggregate import build_report
    from gpuopt.orchestrator.report.render_text import render_text
    from gpuopt.orchestrator.report.weeks import IsoWeek
    from tests.orchestrator.report.ledger import AS_OF, TEAM_BUDGETS, ledger

    attempts, jobs = ledger()
    report = build_report([_long(a) for a in attempts], jobs, IsoWeek(2026, 48),
                          ZoneInfo("UTC"), as_of=AS_OF, team_budgets=TEAM_BUDGETS)
    text = render_text(report)
    too_wide = [ln for ln in text.splitlines() if len(ln) > 80]
    assert too_wide == []
    assert "$6.00" in text and "$780.67" in text  # numbers whole
    words = text.split()
    assert "northamerica-northeast1" in words or "northamerica-" in words


def test_sample_report_in_docs_fits_80() -> None:
    from tests.conftest import REPO_ROOT

    text = (REPO_ROOT / "docs" / "report-sample" / "report.txt").read_text()
    assert max(len(ln) for ln in text.splitlines()) <= 80
