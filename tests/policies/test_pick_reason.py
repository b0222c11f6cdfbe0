"""The Pick sentence never reads '1.0x slower ... $0.03 vs $0.03': close ratios get two
decimals and equal cents get 1/100 cent, so the reason shows the difference it rests on."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

from gpuopt.policies.placement import _costs_vs, _ratio

REPO = Path(__file__).resolve().parents[2]


def test_ratios_near_one_keep_two_decimals() -> None:
    assert _ratio(1.04) == "1.04x" and _ratio(1.0949) == "1.09x"
    assert _ratio(1.1) == "1.1x" and _ratio(2.34) == "2.3x"


def test_costs_to_the_cent_unless_the_cents_tie() -> None:
    assert _costs_vs(Decimal("1.5"), Decimal("2")) == "$1.50 vs $2.00"
    assert _costs_vs(Decimal("1234.5"), Decimal("1234.6")) == "$1,234.50 vs $1,234.60"
    assert _costs_vs(Decimal("0.03181"), Decimal("0.03427")) == "$0.0318 vs $0.0343"


def test_the_quickstart_pick_shows_what_separates_the_two() -> None:
    from gpuopt.jobs.loader import load_job_spec
    from gpuopt.orchestrator.config import load_config
    from gpuopt.orchestrator.reconcile.placement_inputs import plan_spec

    now = datetime(2026, 12, 1, tzinfo=UTC)
    spec = load_job_spec(REPO / "deploy" / "examples" / "quickstart.yaml", now=now)
    best = plan_spec(spec, load_config(env={}), None, now, top=5).plan.best
    assert best is not None
    assert not re.search(r"\b1\.0x\b", best.reason), best.reason
    a, b = re.findall(r"\$[\d,.]+", best.reason)[-2:]
    assert a != b, best.reason
