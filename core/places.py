"""A place in a cloud: cloud, region and (where the market is zonal) zone."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Place:
    cloud: str
    region: str
    zone: str | None = None  # None: the region as a whole, or a regional market

    def __post_init__(self) -> None:
        if self.zone == "":  # one spelling of "no zone"
            object.__setattr__(self, "zone", None)

    @property
    def regional(self) -> Place:
        """The region this place is in (the zone dropped)."""
        return self if self.zone is None else Place(self.cloud, self.region)

    @property
    def sort_key(self) -> tuple[str, str, str]:
        return (self.cloud, self.region, self.zone or "")

    def __str__(self) -> str:
        """``cloud/region[/zone]``, as SkyPilot's ``infra`` writes it."""
        return "/".join(p for p in (self.cloud, self.region, self.zone) if p)
