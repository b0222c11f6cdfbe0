"""Store fixtures: every store test runs on SQLite and on PostgreSQL (``db_url`` in
tests/conftest.py)."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import pytest

from gpuopt.providers.offer import Market, Offer


def make_offer(
    price: str = "1.006",
    at: datetime = datetime(2025, 1, 1, tzinfo=UTC),
    *,
    cloud: str = "aws",
    region: str = "us-east-1",
    zone: str | None = None,
    instance_type: str = "g5.xlarge",
    gpu: str = "A10G",
    gpu_count: int = 1,
    memory: float = 22.35,
    market: Market = Market.ON_DEMAND,
) -> Offer:
    return Offer(
        cloud=cloud,
        region=region,
        zone=zone,
        instance_type=instance_type,
        gpu=gpu,
        gpu_count=gpu_count,
        gpu_memory_gib=memory,
        vcpus=4,
        ram_gib=16,
        market=market,
        price_per_hour=Decimal(price),
        observed_at=at,
        source=f"api:{cloud}",
    )


@pytest.fixture
def store(db_url: str):  # type: ignore[no-untyped-def]
    from gpuopt.orchestrator.store import open_store

    s = open_store(db_url)
    yield s
    s.close()
