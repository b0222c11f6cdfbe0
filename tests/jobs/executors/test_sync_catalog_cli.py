"""`gpuopt skypilot sync-catalog [--restore]` through typer, into a throwaway SKY_RUNTIME_DIR."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from gpuopt.core.errors import UserError
from gpuopt.orchestrator.cli import skypilot_cmd
from gpuopt.providers.offer import Market, Offer
from tests.jobs.executors.sky_catalog_fixture import write_skypilot_cache


def test_sync_and_restore(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SKY_RUNTIME_DIR", str(tmp_path))
    offer = Offer(cloud="aws", region="us-west-2", zone="us-west-2a", instance_type="g6.xlarge",
                  gpu="L4", gpu_count=1, gpu_memory_gib=22.35, vcpus=4, ram_gib=16,
                  market=Market.SPOT, price_per_hour=Decimal("0.3512"),
                  observed_at=datetime(2025, 1, 1, tzinfo=UTC), source="api:aws")
    app = typer.Typer()
    app.command("noop")(lambda: None)
    reserved = Offer(**{**{f: getattr(offer, f) for f in ("cloud", "region", "zone",
                        "instance_type", "gpu", "gpu_count", "gpu_memory_gib", "vcpus",
                        "ram_gib", "observed_at", "source")},
                        "market": Market.RESERVED_1Y, "price_per_hour": Decimal("0.2")})
    skypilot_cmd.register(app, offers=lambda: [offer, reserved])
    runner = CliRunner()
    csv_path = tmp_path / ".sky" / "catalogs" / "v8" / "aws" / "vms.csv"

    # No catalog cached by SkyPilot: refused, nothing written.
    result = runner.invoke(app, ["skypilot", "sync-catalog"])  # main() maps UserError
    assert isinstance(result.exception, UserError) and result.exception.exit_code == 2
    assert "SkyPilot has no aws catalog cached" in result.output
    assert not csv_path.parent.exists()

    write_skypilot_cache(tmp_path)
    before = csv_path.read_text()
    result = runner.invoke(app, ["skypilot", "sync-catalog"])
    assert result.exit_code == 0, result.output
    assert "aws: 1 rows written, 1 offers skipped" in result.output
    assert "1 skipped: reserved price (SkyPilot's catalog holds on-demand and spot" in (
        result.output)
    text = csv_path.read_text()
    assert "g6.xlarge,L4,1,4,16" in text and "m6i.2xlarge" in text
    result = runner.invoke(app, ["skypilot", "sync-catalog", "--restore"])
    assert result.exit_code == 0, result.output
    assert csv_path.read_text() == before
