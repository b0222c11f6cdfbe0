"""`gpuopt skypilot sync-catalog [--restore]` through typer, into a throwaway SKY_RUNTIME_DIR."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from gpuopt.orchestrator.cli import skypilot_cmd
from gpuopt.providers.offer import Market, Offer


def test_sync_and_restore(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SKY_RUNTIME_DIR", str(tmp_path))
    offer = Offer(cloud="aws", region="us-west-2", zone="us-west-2a", instance_type="g6.xlarge",
                  gpu="L4", gpu_count=1, gpu_memory_gib=22.35, vcpus=4, ram_gib=16,
                  market=Market.SPOT, price_per_hour=Decimal("0.3512"),
                  observed_at=datetime(2025, 1, 1, tzinfo=UTC), source="api:aws")
    app = typer.Typer()
    app.command("noop")(lambda: None)
    skypilot_cmd.register(app, offers=lambda: [offer])
    runner = CliRunner()
    result = runner.invoke(app, ["skypilot", "sync-catalog"])
    assert result.exit_code == 0, result.output
    csv_path = tmp_path / ".sky" / "catalogs" / "v8" / "aws" / "vms.csv"
    assert "g6.xlarge,L4,1,4,16" in csv_path.read_text()
    result = runner.invoke(app, ["skypilot", "sync-catalog", "--restore"])
    assert result.exit_code == 0, result.output
    assert not csv_path.exists()
