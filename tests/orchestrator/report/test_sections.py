"""report/sections/: a section (its data, text, HTML and JSON) is one module, and
build_report and the three renderers use whatever sections.SECTIONS lists, in its order."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from gpuopt.orchestrator.report import aggregate, render_html, render_json, render_text
from gpuopt.orchestrator.report.aggregate import build_report
from gpuopt.orchestrator.report.charts import DAILY, VERSUS
from gpuopt.orchestrator.report.model import WeeklyReport
from gpuopt.orchestrator.report.sections import SECTIONS, base
from gpuopt.orchestrator.report.weeks import IsoWeek
from tests.orchestrator.report.ledger import AS_OF, ledger

SRC = {DAILY: "d.png", VERSUS: "v.png"}


def _report() -> WeeklyReport:
    attempts, jobs = ledger()
    return build_report(attempts, jobs, IsoWeek(2026, 48), ZoneInfo("UTC"), as_of=AS_OF)


def _attempts_in_scope(week: base.LedgerWeek) -> int:
    """A figure the aggregated report does not hold: worked out from the ledger."""
    return len(week.attempts)


def _counted(report: WeeklyReport) -> int:
    return int(report.collected["count"])


def _text(n: int) -> list[str]:
    return ["", f"Attempts counted <{n}>"]


def _html(n: int, images: Mapping[str, str]) -> list[str]:
    return [f"<p>counted &lt;{n}&gt;</p>"]


def _json(n: int) -> dict[str, Any]:
    return {"attempts_counted": n}


COUNT = base.Section("count", _counted, _text, _html, _json, _attempts_in_scope)


def _with(monkeypatch: pytest.MonkeyPatch, *extra: base.Section[Any]) -> None:
    for module in (aggregate, render_text, render_html, render_json):
        monkeypatch.setattr(module, "SECTIONS", (*SECTIONS[:-1], *extra, SECTIONS[-1]))


def test_a_new_section_is_its_module_and_its_place_in_the_list(
        monkeypatch: pytest.MonkeyPatch) -> None:
    plain = render_text.render_text(_report())
    _with(monkeypatch, COUNT)
    r = _report()
    n = len(ledger()[0])  # every attempt of the hand-built ledger is in scope
    assert n > 0 and r.collected["count"] == n
    text = render_text.render_text(r)
    assert f"Attempts counted <{n}>" in text and f"Attempts counted <{n}>" not in plain
    # before the footer, the last section
    assert text.index(f"Attempts counted <{n}>") < text.index("Every figure is from the ledger")
    page = render_html.render_html(r, SRC)
    assert page.index(f"counted &lt;{n}&gt;") < page.index("Every figure comes from")
    data = json.loads(render_json.render_json(r))
    assert data["attempts_counted"] == n
    assert list(render_json.report_to_json(r))[-1] == "attempts_counted"  # after format 1's keys


def test_two_sections_may_not_write_the_same_json_key(monkeypatch: pytest.MonkeyPatch) -> None:
    clash = base.Section("clash", lambda r: len(r.jobs), _text, _html, lambda n: {"jobs": n})
    _with(monkeypatch, clash)
    r = _report()
    with pytest.raises(ValueError, match=r"section clash repeats the JSON keys \['jobs'\]"):
        render_json.report_to_json(r)


def test_every_key_of_the_json_comes_from_one_section() -> None:
    r = _report()
    keys = [k for s in SECTIONS for k in s.json(s.build(r))]
    assert len(keys) == len(set(keys))
    assert {"schema", *keys} == set(render_json.report_to_json(r))
    assert len({s.name for s in SECTIONS}) == len(SECTIONS)
