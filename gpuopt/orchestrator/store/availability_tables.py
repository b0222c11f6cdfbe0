"""The availability history's tables: one row per place, one row per observation.

``availability_place`` is where spot is observed (cloud, region, zone ('' when not
zonal), instance type, market); ``availability_observation`` holds what was observed
there (policies.spot.observed.ObservationKind) at a whole UTC second, with a value for
the kinds that carry one (AWS's placement score). Primary key (place, at, kind):
clustered (WITHOUT ROWID) on SQLite, like the price history, so a row costs ~20 bytes;
the same kind twice in one second in one place is one observation.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Column, ForeignKey, UniqueConstraint
from sqlmodel import Field, SQLModel

from gpuopt.orchestrator.store.types import StrEnumType, UTCSeconds
from gpuopt.policies.spot.observed import ObservationKind


class AvailabilityPlaceRow(SQLModel, table=True):
    __tablename__ = "availability_place"
    __table_args__ = (
        UniqueConstraint("cloud", "region", "zone", "instance_type", "market",
                         name="uq_availability_place_key"),
    )

    id: int | None = Field(default=None, primary_key=True)
    cloud: str = Field(max_length=16)
    region: str = Field(max_length=64)
    zone: str = Field(default="", max_length=64)
    instance_type: str = Field(max_length=64)
    market: str = Field(max_length=16)


class AvailabilityObservationRow(SQLModel, table=True):
    __tablename__ = "availability_observation"
    __table_args__ = ({"sqlite_with_rowid": False},)

    place_id: int = Field(
        sa_column=Column(ForeignKey("availability_place.id", ondelete="CASCADE"),
                         primary_key=True, nullable=False)
    )
    at: datetime = Field(sa_type=UTCSeconds, primary_key=True)
    kind: ObservationKind = Field(sa_column=Column(StrEnumType(ObservationKind, 24),
                                                   primary_key=True, nullable=False))
    value: int | None = None
