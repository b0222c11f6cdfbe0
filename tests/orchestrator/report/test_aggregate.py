from __future__ import annotations

from datetime import date
from decimal import Decimal
from zoneinfo import ZoneInfo

import pytest

from gpuopt.orchestrator.report.aggregate import build_report
from gpuopt.orchestrator.report.model import SpendLine, WeeklyReport
from gpuopt.orchestrator.report.weeks import IsoWeek
from tests.orchestrator.report.ledger import AS_OF, TEAM_BUDGETS, ledger, t

D = Decimal
UTC_ZONE = ZoneInfo("UTC")
W48 = IsoWeek(2026, 48)


def report(tz: ZoneInfo = UTC_ZONE, **kw: object) -> WeeklyReport:
    attempts, jobs = ledger()
    kw.setdefault("as_of", AS_OF)
    return build_report(attempts, jobs, W48, tz, **kw)  # type: ignore[arg-type]


def by_key(lines: tuple[SpendLine, ...]) -> dict[str, tuple[Decimal, Decimal]]:
    return {ln.key: (ln.cost, ln.on_demand) for ln in lines}


def test_totals_savings_and_gpu_hours_match_the_hand_computation() -> None:
    r = report()
    s = r.summary
    # 48 + 660 + 10 + 56 + 6.666666
    assert s.total == D("780.666666")
    # 128 + 660 + 28 + 156.80 + 6.666666
    assert s.on_demand == D("979.466666")
    assert s.savings == D("198.800000")
    assert s.savings_pct == D("20.3")  # 198.80 / 979.466666 = 20.297 %
    # 4 h x 8 + 22 h x 8 + 4 h x 1 + 28 h x 4 + 2 h x 1
    assert s.gpu_hours == D("326")


def test_spend_by_every_dimension() -> None:
    r = report()
    assert by_key(r.by_cloud) == {
        "gcp": (D("660"), D("660")),
        "aws": (D("104"), D("284.80")),
        "azure": (D("16.666666"), D("34.666666")),
    }
    assert [ln.key for ln in r.by_cloud] == ["gcp", "aws", "azure"]  # most expensive first
    assert by_key(r.by_team) == {
        "nlp": (D("718"), D("816")),
        "vision": (D("62.666666"), D("163.466666")),
    }
    assert {k: c for k, (c, _) in by_key(r.by_owner).items()} == {
        "alice": D("708"), "bob": D("10"), "carol": D("56"), "dave": D("6.666666"),
    }
    assert {k: c for k, (c, _) in by_key(r.by_market).items()} == {
        "on-demand": D("666.666666"), "spot": D("114"),
    }
    assert {k: c for k, (c, _) in by_key(r.by_gpu).items()} == {
        "A100-40GB": D("708"), "A10G": D("56"), "H100": D("10"), "A100-80GB": D("6.666666"),
    }
    spot = next(ln for ln in r.by_market if ln.key == "spot")
    assert spot.savings == D("198.80") and spot.savings_pct == D("63.6")  # 198.8 / 312.8


def test_preemptions_in_the_week_and_their_waste() -> None:
    r = report()
    assert r.summary.preemptions == 1
    (p,) = r.preemptions
    assert (p.job_id, p.attempt, p.cloud) == ("j1", 1, "aws")
    assert p.wasted_gpu_hours == D("4")  # 1800 s x 8 GPUs
    assert p.wasted_cost == D("6")  # 0.5 h at $12/h
    assert r.summary.wasted_gpu_hours == D("4")


def test_jobs_by_state_with_cost_to_date_and_budget_burn() -> None:
    r = report()
    jobs = {j.job_id: j for j in r.jobs}
    assert set(jobs) == {"j1", "j2", "j3", "j5"}  # j4 ran the week before only
    assert [j.job_id for j in r.jobs_in("finished")] == ["j1", "j5"]
    assert [j.job_id for j in r.jobs_in("failed")] == ["j2"]
    assert [j.job_id for j in r.jobs_in("running")] == ["j3"]
    assert jobs["j1"].week_cost == D("708")
    assert jobs["j1"].cost_to_date == D("732")  # + the $24 held in W47
    assert jobs["j1"].budget_burn_pct == D("73.2")
    assert jobs["j1"].preemptions == 1
    assert jobs["j3"].cost_to_date == D("56") and jobs["j3"].budget_burn_pct == D("56.0")
    assert [j.job_id for j in r.top_jobs] == ["j1", "j3", "j2", "j5"]


def test_top_jobs_are_at_most_five() -> None:
    from tests.orchestrator.report.ledger import attempt

    extra = [
        attempt(job_id=f"x{i}", job_name=f"x{i}", owner="erin", team="nlp", cloud="aws",
                region="us-east-1", instance_type="g5.xlarge", gpu="A10G", gpu_count=1,
                market="on-demand", price_per_hour=D(i), started_at=t(24, 0),
                ended_at=t(24, 1), end_reason="succeeded")
        for i in range(1, 5)
    ]
    attempts, jobs = ledger()
    r = build_report(attempts + extra, jobs, W48, UTC_ZONE, as_of=AS_OF)
    assert [j.job_id for j in r.top_jobs] == ["j1", "j3", "j2", "j5", "x4"]


def test_team_budgets_are_weekly() -> None:
    r = report(team_budgets=TEAM_BUDGETS)
    burn = {b.team: (b.spent, b.burn_pct, b.remaining) for b in r.team_budgets}
    assert burn == {
        "nlp": (D("718"), D("89.8"), D("82")),
        "vision": (D("62.666666"), D("125.3"), D("-12.666666")),
    }


def test_daily_spend_splits_attempts_at_midnight_and_adds_up_exactly() -> None:
    r = report()
    assert [d.day for d in r.daily] == [date(2026, 11, 23 + i) for i in range(7)]
    assert [d.total for d in r.daily] == [
        D("633"), D("75"), D("10"), D("3.333333"), D("3.333333"), D("8"), D("48"),
    ]
    monday = dict(r.daily[0].by_cloud)
    assert monday == {"gcp": D("585"), "aws": D("48"), "azure": D("0")}
    assert sum((d.total for d in r.daily), D(0)) == r.summary.total
    assert sum((d.on_demand for d in r.daily), D(0)) == r.summary.on_demand


def test_daily_pieces_of_an_odd_price_add_up_to_the_micro_dollar() -> None:
    from tests.orchestrator.report.ledger import attempt

    # 70 h at $1.234567/h over four days: every piece is rounded, the sum must not drift.
    a = attempt(job_id="o", job_name="odd", owner="x", team="y", cloud="gcp",
                region="r", instance_type="i", gpu="L4", gpu_count=1, market="spot",
                price_per_hour=D("1.234567"), started_at=t(23, 1, 7),
                ended_at=t(26, 0, 7), end_reason="succeeded")
    r = build_report([a], [], W48, UTC_ZONE, as_of=AS_OF)
    assert r.summary.total == a.cost_between(*W48.bounds(UTC_ZONE))
    assert sum((d.total for d in r.daily), D(0)) == r.summary.total


def test_los_angeles_week_differs_from_the_utc_week() -> None:
    r = report(ZoneInfo("America/Los_Angeles"))
    # W48 in LA = 23 Nov 08:00 UTC .. 30 Nov 08:00 UTC: j1's spot attempt (and its
    # preemption) fall in W47; j1's GCP attempt loses 3.5 h (18.5 h = $555); j3 runs 36 h = $72.
    assert r.summary.start == t(23, 8) and r.summary.end == t(30, 8)
    assert r.summary.total == D("643.666666")  # 555 + 10 + 72 + 6.666666
    assert r.summary.preemptions == 0
    # LA Monday = 23 Nov 08:00Z .. 24 Nov 08:00Z holds the whole 18.5 h of the GCP attempt.
    assert r.daily[0].total == D("555")
    assert r.daily[-1].total == D("48")  # LA Sunday 29 Nov 08:00Z .. 30 Nov 08:00Z: j3 24 h
    assert r.previous.preemptions == 2  # j4's and j1's
    assert r.timezone == "America/Los_Angeles"


def test_a_running_attempt_counts_up_to_the_as_of_time() -> None:
    r = report(as_of=t(29, 0))  # Sunday 00:00: j3 has run 4 h
    assert {j.job_id: j.week_cost for j in r.jobs}["j3"] == D("8")
    assert r.summary.end == t(29, 0)
    assert r.daily[-1].total == 0


@pytest.mark.parametrize(
    ("kw", "total", "previous"),
    [
        ({"owner": "alice"}, D("708"), D("30")),  # W47: j1 $24 + j4 $6
        ({"team": "vision"}, D("62.666666"), D("0")),
        ({"team": "nlp", "owner": "bob"}, D("10"), D("0")),
        ({"owner": "nobody"}, D("0"), D("0")),
    ],
)
def test_filters_by_owner_and_team(kw: dict[str, str], total: Decimal, previous: Decimal) -> None:
    r = report(UTC_ZONE, team_budgets=TEAM_BUDGETS, **kw)
    assert r.summary.total == total
    assert r.previous.total == previous
    assert all(j.owner == kw.get("owner", j.owner) for j in r.jobs)
    assert all(j.team == kw.get("team", j.team) for j in r.jobs)
    assert sum((d.total for d in r.daily), D(0)) == total
    if "owner" in kw:
        assert r.team_budgets == ()  # a team's budget is not one person's
    elif "team" in kw:
        assert [b.team for b in r.team_budgets] == [kw["team"]]


def test_change_from_the_previous_week() -> None:
    r = report()
    # W47: j1 attempt 1 for 2 h ($24, od $64) + j4 $6 (od $18); one preemption (j4, 600 s x 1)
    p = r.previous
    assert p.week == IsoWeek(2026, 47)
    assert (p.total, p.on_demand, p.preemptions) == (D("30"), D("82"), 1)
    assert p.wasted_gpu_hours == D("0.166667")
    assert r.total_change == D("750.666666")
    assert r.total_change_pct == D("2502.2")  # 750.666666 / 30
    assert r.scope == "everyone"


def test_previous_attempts_can_be_given_separately() -> None:
    attempts, jobs = ledger()
    r = build_report(attempts, jobs, W48, UTC_ZONE, previous_attempts=[], as_of=AS_OF)
    assert r.previous.total == 0 and r.total_change_pct is None
    assert r.summary.total == D("780.666666")
