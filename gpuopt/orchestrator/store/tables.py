"""Price-history tables: one row per offer series, one row per price change.

``offer_series`` is the identity of an offer (``Offer.key``: cloud, region, zone ('' when
not zonal), instance type, market) with its static attributes and its *current* price, so
"latest offers" reads this small table only. ``price_change`` holds the history as
changes: a row when a series' price changes (key: series, ``first_seen``), whose
``last_seen`` is bumped by every later poll that sees the same price (the current row is
the one whose first_seen = the series' ``price_since``). Prices are integer micro-dollars;
times are whole UTC seconds (epoch integers on SQLite).
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, Column, ForeignKey, Index, UniqueConstraint
from sqlmodel import Field, SQLModel

from gpuopt.orchestrator.store.types import UTCSeconds


class OfferSeries(SQLModel, table=True):
    __tablename__ = "offer_series"
    __table_args__ = (
        UniqueConstraint("cloud", "region", "zone", "instance_type", "market",
                         name="uq_offer_series_key"),
        Index("ix_offer_series_gpu_market", "gpu", "market"),
    )

    id: int | None = Field(default=None, primary_key=True)
    cloud: str = Field(max_length=16)
    region: str = Field(max_length=64)
    zone: str = Field(default="", max_length=64)  # '' when the market is regional
    instance_type: str = Field(max_length=64)
    market: str = Field(max_length=16)
    gpu: str = Field(max_length=32)
    gpu_count: int
    gpu_memory_gib: float
    vcpus: float
    ram_gib: float
    source: str = Field(max_length=32)
    interruption_bucket: int | None = None
    placement_score: int | None = None
    # Marketplace hosts (Vast.ai): Offer.reliability (0..1) and Offer.verified.
    host_reliability: float | None = None
    host_verified: bool | None = None
    price_micros: int = Field(sa_type=BigInteger)  # current USD/hour x 1e6
    price_since: datetime = Field(sa_type=UTCSeconds)  # first_seen of the current price
    first_seen: datetime = Field(sa_type=UTCSeconds)
    last_seen: datetime = Field(sa_type=UTCSeconds)


class PriceChange(SQLModel, table=True):
    """Primary key (series_id, first_seen): clustered (WITHOUT ROWID) on SQLite, so the
    history needs no extra index and a row costs ~20 bytes there."""

    __tablename__ = "price_change"
    __table_args__ = ({"sqlite_with_rowid": False},)

    series_id: int = Field(
        sa_column=Column(
            ForeignKey("offer_series.id", ondelete="CASCADE"), primary_key=True, nullable=False
        )
    )
    first_seen: datetime = Field(sa_type=UTCSeconds, primary_key=True)
    price_micros: int = Field(sa_type=BigInteger)
    last_seen: datetime = Field(sa_type=UTCSeconds)


class PendingPrice(SQLModel, table=True):
    """A price held for confirmation (providers/price_moves.py): a new series or a change
    outside its GPU's snapshot range or its series' recent band. It enters the history
    when a later poll reports it again (within CONFIRM_RATIO) at least ``wait_seconds``
    after ``first_observed_at``; ``gpuopt prices held`` lists these rows."""

    __tablename__ = "pending_price"
    __table_args__ = (
        UniqueConstraint("cloud", "region", "zone", "instance_type", "market",
                         name="uq_pending_price_key"),
    )

    id: int | None = Field(default=None, primary_key=True)
    cloud: str = Field(max_length=16)
    region: str = Field(max_length=64)
    zone: str = Field(default="", max_length=64)
    instance_type: str = Field(max_length=64)
    market: str = Field(max_length=16)
    gpu: str = Field(max_length=32)
    price_micros: int = Field(sa_type=BigInteger)
    observed_at: datetime = Field(sa_type=UTCSeconds)  # the latest poll that reported it
    reason: str = Field(max_length=400)
    # Revision 0011_price_holds: when this price was first reported (NULL on older rows:
    # observed_at), by how many polls, how long polls must keep reporting it, and the
    # series' price when it was held (NULL: a new series).
    first_observed_at: datetime | None = Field(default=None, sa_type=UTCSeconds)
    polls: int = Field(default=1, sa_column_kwargs={"server_default": "1"})
    wait_seconds: int = Field(default=0, sa_column_kwargs={"server_default": "0"})
    previous_micros: int | None = Field(default=None, sa_type=BigInteger)


def import_all_tables() -> None:
    """Import every table module so SQLModel.metadata is complete (for autogenerate)."""
    # Later table modules: add their import here.
    from gpuopt.orchestrator.store import (
        availability_tables,  # noqa: F401
        daemon_tables,  # noqa: F401
        jobs_tables,  # noqa: F401
        secret_tables,  # noqa: F401
        telemetry_tables,  # noqa: F401
        user_tables,  # noqa: F401
    )
