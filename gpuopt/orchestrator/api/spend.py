"""The spend page's figures: the weekly report (report/service.py) of this week and
the last eight for the user's scope (a team, or everyone for an admin)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gpuopt.orchestrator.config.model import Settings
    from gpuopt.orchestrator.report.model import WeeklyReport
    from gpuopt.orchestrator.store import Store


@dataclass(frozen=True, slots=True)
class WeekFigures:
    label: str
    total: Decimal
    on_demand: Decimal
    gpu_hours: Decimal
    preemptions: int

    @property
    def saved(self) -> Decimal:
        return self.on_demand - self.total


def _figures(r: WeeklyReport) -> WeekFigures:
    s = r.summary
    return WeekFigures(str(r.week), s.total, s.on_demand, s.gpu_hours, s.preemptions)


def spend_figures(store: Store, settings: Settings, team: str | None, week: str | None,
                  now: datetime, weeks: int) -> dict[str, Any]:
    import base64

    from gpuopt.orchestrator.api.charts_svg import bars
    from gpuopt.orchestrator.api.report_view import team_report
    from gpuopt.orchestrator.report import from_config
    from gpuopt.orchestrator.report.charts import render_charts
    from gpuopt.orchestrator.report.weeks import IsoWeek

    tz = from_config.report_timezone(settings)
    current = IsoWeek.containing(now, tz)
    labels = [current]
    for _ in range(weeks - 1):
        labels.append(labels[-1].previous())
    reports = {str(w): team_report(store, settings, str(w), team, None, now) for w in labels}
    chosen = reports.get(week or "") or reports[str(current)]
    if week and week not in reports:
        chosen = team_report(store, settings, week, team, None, now)
    rows = [_figures(r) for r in reports.values()]
    charts = {name: "data:image/png;base64," + base64.b64encode(png).decode("ascii")
              for name, png in render_charts(chosen).items()}
    return {
        "selected": _figures(chosen),
        "weeks": rows,
        "weeks_chart": bars([(w.label, w.total) for w in rows]),
        "breakdowns": [("team", "team", chosen.by_team), ("cloud", "cloud", chosen.by_cloud),
                       ("GPU", "gpu", chosen.by_gpu)],
        "charts": charts,
        "simulated": chosen.simulated.total if chosen.simulated else None,
    }
