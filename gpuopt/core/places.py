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


_DIRECTIONS = {"north": "n", "south": "s", "east": "e", "west": "w", "central": "c",
               "northeast": "ne", "northwest": "nw", "southeast": "se", "southwest": "sw",
               "europe": "eu", "asia": "as", "australia": "au", "southamerica": "sa",
               "northamerica": "na", "me": "me", "gov": "g"}


def _short_dashed(name: str) -> str:
    """'us-east-1' -> 'use1', 'europe-west4' -> 'euw4', 'ap-southeast-2' -> 'apse2',
    'us-central1-a' -> 'usc1-a', 'us-east-1a' -> 'use1a': AWS's and GCP's own
    abbreviations of their regions (AWS zone ids read 'use1-az4')."""
    parts = name.split("-")
    out: list[str] = []
    for i, part in enumerate(parts):
        word = part.rstrip("0123456789")
        digits = part[len(word):]
        if i == 0:
            out.append(_DIRECTIONS.get(word, word) if word != "us" else word)
            out[-1] += digits
        elif word in _DIRECTIONS and len(word) > 1:
            out.append(_DIRECTIONS[word] + digits)
        elif part[:1].isdigit():  # '1a' (an AWS zone), '1'
            out.append(part)
        else:  # a GCP zone letter ('a') or an unknown word: kept, after a dash
            out.append("-" + part)
    return "".join(out)


def short_place(cloud: str, region: str, zone: str | None = None) -> str:
    """A place short enough for a narrow table: ``aws/use1a`` for us-east-1a,
    ``gcp/euw4-a`` for europe-west4-a, ``vast/VN-AS`` for Vast's 'Vietnam, VN, AS'
    (country and continent codes: two Vast places may read the same), Azure's names as
    they are (``azure/eastus``)."""
    name = zone or region
    if "," in name:  # Vast.ai: 'City or state, CC, continent'
        codes = [p.strip() for p in name.split(",") if p.strip()]
        short = "-".join(codes[-2:])
    elif "-" in name and any(ch.isdigit() for ch in name):
        short = _short_dashed(name)
    else:
        short = name
    return f"{cloud}/{short}"
