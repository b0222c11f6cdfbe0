"""`gpuopt gpus`' pure part: per GPU, the counts each cloud sells and the cheapest prices."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

from gpuopt.orchestrator.cli.gpus_cmd import gpu_rows, sold_text
from gpuopt.providers.hardware import GPUS
from gpuopt.providers.offer import Market, Offer

T = datetime(2026, 12, 1, tzinfo=UTC)


def _o(cloud: str, gpu: str, n: int, market: Market, price: str) -> Offer:
    return Offer(cloud, "r", None, f"{cloud}-{n}", gpu, n, GPUS[gpu].memory_gib, 8, 32, market,
                 Decimal(price), T, f"api:{cloud}")


def test_rows_follow_the_table_and_take_the_cheapest_gpu_hour() -> None:
    offers = [_o("vast", "RTX4090", 8, Market.ON_DEMAND, "2.77"),
              _o("runpod", "RTX4090", 1, Market.ON_DEMAND, "0.74"),
              _o("runpod", "RTX4090", 1, Market.SPOT, "0.50"),
              _o("aws", "H200", 8, Market.ON_DEMAND, "63.296")]
    rows = {r.spec.name: r for r in gpu_rows(GPUS.values(), offers, ("aws", "runpod", "vast"))}
    assert list(rows) == list(GPUS)
    rtx = rows["RTX4090"]
    assert rtx.on_demand == Decimal("2.77") / 8 and rtx.spot == Decimal("0.50")
    assert list(rtx.counts) == ["runpod", "vast"]  # registry order
    assert sold_text(rtx.counts) == "runpod 1; vast 8"
    assert rows["H200"].on_demand == Decimal("7.912") and rows["H200"].spot is None
    assert rows["L40"].counts == {} and sold_text({}) == "-"
    assert rows["H200"].to_json()["sold"] == {"aws": [8]}
