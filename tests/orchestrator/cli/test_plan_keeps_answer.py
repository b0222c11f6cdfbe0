"""At 80 columns the plan keeps its answer (issue 29.3): GPUs, where, market, $/h,
est. h and expected $, for every example and for a 70B inference job whose places are
long; places are shortened (aws/use1a, vast/US-NA) rather than a column dropped."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from decimal import Decimal

import pytest

from tests.conftest import REPO_ROOT

EXAMPLES = REPO_ROOT / "deploy" / "examples"
ANSWER = ("GPUs", "where", "market", "$/h", "est. h", "expected $")


@pytest.fixture
def cols80(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")


def _planned(path):  # type: ignore[no-untyped-def]
    from gpuopt.jobs.loader import load_job_spec
    from gpuopt.orchestrator.config import load_config
    from gpuopt.orchestrator.reconcile.placement_inputs import plan_spec

    now = datetime(2026, 12, 1, tzinfo=UTC)
    spec = load_job_spec(path, now=now)
    return spec, plan_spec(spec, load_config(env={}), None, now, top=15)


def _header(out: str) -> str:
    return next(ln for ln in out.splitlines() if ln.lstrip().startswith(("#", "GPUs")))


@pytest.mark.parametrize("job", sorted(p.name for p in EXAMPLES.glob("*.yaml")))
def test_every_example_keeps_est_h(job: str, cols80: None,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    from gpuopt.orchestrator.cli.plan_cmd import print_plan

    spec, planned = _planned(EXAMPLES / job)
    print_plan(spec.name or job, planned, now=datetime(2026, 12, 1, tzinfo=UTC))
    out = capsys.readouterr().out
    header = _header(out)
    for col in ANSWER:
        assert col in header, f"{col!r} dropped at 80 columns:\n{out}"
    assert max(len(ln.rstrip()) for ln in out.splitlines()
               if not ln.startswith(("Pick: ", "  "))) <= 80


def _long_places(planned):  # type: ignore[no-untyped-def]
    """The same plan with the long places a refresh brings (Vast, AWS zones)."""
    places = [("vast", "Quebec, CA, NA", None), ("aws", "ap-southeast-2", "ap-southeast-2c"),
              ("vast", "Vietnam, VN, AS", None), ("gcp", "northamerica-northeast1", None),
              ("azure", "southcentralus", None)]
    cands = []
    for i, c in enumerate(planned.plan.candidates):
        cloud, region, zone = places[i % len(places)]
        offer = dataclasses.replace(c.offer, cloud=cloud, region=region, zone=zone,
                                    price_per_hour=Decimal("1234.56"))
        cands.append(dataclasses.replace(c, offer=offer, est_hours=12345.6,
                                         expected_cost=Decimal("1234567.89")))
    plan = dataclasses.replace(planned.plan, candidates=cands)
    return dataclasses.replace(planned, plan=plan)


def test_70b_inference_with_long_places_keeps_est_h(
        cols80: None, capsys: pytest.CaptureFixture[str]) -> None:
    from gpuopt.orchestrator.cli.plan_cmd import print_plan

    _spec, planned = _planned(EXAMPLES / "inference-70b.yaml")
    assert planned.plan.candidates
    planned = _long_places(planned)
    print_plan("batch-summaries-llama31-70b", planned, now=datetime(2026, 12, 1, tzinfo=UTC))
    out = capsys.readouterr().out
    header = _header(out)
    for col in ANSWER:
        assert col in header, f"{col!r} dropped at 80 columns:\n{out}"
    table = out[out.index(header):].splitlines()
    assert all(len(ln.rstrip()) <= 80 for ln in table[:len(planned.plan.candidates) + 2])
    assert "vast/CA-NA" in out and "aws/apse2c" in out and "12,345.6" in out
    assert "1,234,567.89" in out


def test_wide_enough_keeps_the_full_place(monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    from gpuopt.orchestrator.cli.plan_cmd import print_plan

    monkeypatch.setenv("COLUMNS", "200")
    _spec, planned = _planned(EXAMPLES / "inference-70b.yaml")
    print_plan("x", _long_places(planned), now=datetime(2026, 12, 1, tzinfo=UTC))
    assert "vast/Quebec, CA, NA" in capsys.readouterr().out


@pytest.mark.parametrize(("cloud", "region", "zone", "short"), [
    ("aws", "us-east-1", None, "aws/use1"), ("aws", "us-east-1", "us-east-1a", "aws/use1a"),
    ("aws", "us-east-1", "use1-az4", "aws/use1-az4"), ("gcp", "europe-west4", None, "gcp/euw4"),
    ("gcp", "us-central1", "us-central1-a", "gcp/usc1-a"),
    ("aws", "ap-northeast-1", None, "aws/apne1"), ("vast", "Texas, US, NA", None, "vast/US-NA"),
    ("azure", "eastus", None, "azure/eastus"),
])
def test_short_place(cloud: str, region: str, zone: str | None, short: str) -> None:
    from gpuopt.core.places import short_place

    assert short_place(cloud, region, zone) == short
