"""Store fixtures: every store test runs on SQLite and on PostgreSQL.

PostgreSQL: a throwaway database gpuopt_test_<random> on 127.0.0.1:5432 (trust auth,
user postgres), created once per test session and dropped at the end; each test gets
empty tables. When the server is unreachable the PostgreSQL cases are skipped here
(CI runs them: it has the server).
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import pytest

from providers.offer import Market, Offer

PG_ADMIN = os.environ.get("GPUOPT_TEST_PG", "postgresql+psycopg://postgres@127.0.0.1:5432/test")


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


@pytest.fixture(scope="session")
def pg_url() -> Iterator[str]:
    import sqlalchemy as sa

    admin = sa.create_engine(PG_ADMIN, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(sa.text("SELECT 1"))
    except Exception as err:  # pragma: no cover - depends on the machine
        admin.dispose()
        pytest.skip(
            f"PostgreSQL not reachable at {PG_ADMIN} ({type(err).__name__}); "
            "CI runs these tests against its PostgreSQL service"
        )
    name = f"gpuopt_test_{secrets.token_hex(4)}"
    with admin.connect() as conn:
        conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
    try:
        yield PG_ADMIN.rsplit("/", 1)[0] + "/" + name
    finally:
        with admin.connect() as conn:
            conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """An empty database (no tables) of each kind."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'gpuopt.db'}"
        return
    import sqlalchemy as sa

    url: str = request.getfixturevalue("pg_url")
    engine = sa.create_engine(url)
    with engine.begin() as conn:  # start every test from an empty schema
        conn.execute(sa.text("DROP SCHEMA public CASCADE"))
        conn.execute(sa.text("CREATE SCHEMA public"))
    engine.dispose()
    yield url


@pytest.fixture
def store(db_url: str):  # type: ignore[no-untyped-def]
    from orchestrator.store import open_store

    s = open_store(db_url)
    yield s
    s.close()
