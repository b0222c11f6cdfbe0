"""The embedded price snapshot: fallback offers for a machine with no price history yet.

``snapshot_data.json`` (package data) holds a table of instance facts and one row per
price naming the public list it came from (``sources``), each source with its own date:
a price is as old as the list it was read from (format 2; format 1 had one ``as_of``
for all). A cloud priced once for all its data centres (RunPod: region "global") keeps,
per instance type, the data centres its source lists it in (``places``: each instance's
``places`` names a shared list in ``place_sets``, "REGION/ZONE" strings), so one priced row
stands for every data centre and none is lost. It is read on demand with
importlib.resources; nothing is cached at module level.
``gpuopt prices export-snapshot`` regenerates it from the store (see snapshot_document).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

from gpuopt.providers.offer import Market, Offer

SNAPSHOT_FILE = "snapshot_data.json"
FORMAT = 2
COLUMNS = ("cloud", "region", "zone", "instance_type", "market", "price_per_hour", "source")
# (cloud, instance type) -> the (region, zone) data centres its one "global" row stands for.
Places = Mapping[tuple[str, str], tuple[tuple[str, str], ...]]


@dataclass(frozen=True, slots=True)
class Snapshot:
    as_of: date  # the oldest source's date (each offer's observed_at is its own source's)
    offers: tuple[Offer, ...]
    # Offer.key -> the public list the figure came from.
    sources: Mapping[tuple[str, str, str, str, str], str]
    newest: date | None = None  # the newest source's date
    places: Places = field(default_factory=dict)

    def dated(self) -> str:
        """'2025-06-15' or '2025-06-15 to 2026-12-03' (each price dated by its source)."""
        if self.newest is None or self.newest == self.as_of:
            return self.as_of.isoformat()
        return f"{self.as_of} to {self.newest}"


def load_snapshot(text: str | None = None) -> Snapshot:
    """Parse the embedded snapshot (or ``text``, a document in the same format)."""
    if text is None:
        from importlib.resources import files

        text = files("gpuopt.providers").joinpath(SNAPSHOT_FILE).read_text(encoding="utf-8")
    doc = json.loads(text)
    if doc.get("format") not in (1, FORMAT):
        raise ValueError(f"snapshot format {doc.get('format')!r} is not {FORMAT}")
    columns = tuple(doc["columns"])
    if columns != COLUMNS:
        raise ValueError(f"snapshot columns {columns} are not {COLUMNS}")
    instances: Mapping[str, Mapping[str, Any]] = doc["instances"]
    source_text: dict[str, str] = {}
    source_date: dict[str, date] = {}
    for ref, src in doc["sources"].items():
        if isinstance(src, str):  # format 1: one date for every source
            source_text[ref], source_date[ref] = src, date.fromisoformat(doc["as_of"])
        else:
            source_text[ref], source_date[ref] = src["text"], date.fromisoformat(src["as_of"])
    offers: list[Offer] = []
    sources: dict[tuple[str, str, str, str, str], str] = {}
    for cloud, region, zone, instance_type, market, price, ref in doc["prices"]:
        facts = instances[f"{cloud}:{instance_type}"]
        day = source_date[ref]
        offer = Offer(
            cloud=cloud,
            region=region,
            zone=zone,
            instance_type=instance_type,
            gpu=facts["gpu"],
            gpu_count=int(facts["gpu_count"]),
            gpu_memory_gib=float(facts["gpu_memory_gib"]),
            vcpus=float(facts["vcpus"]),
            ram_gib=float(facts["ram_gib"]),
            market=Market(market),
            price_per_hour=Decimal(price),
            observed_at=datetime(day.year, day.month, day.day, tzinfo=UTC),
            source="snapshot",
        )
        offers.append(offer)
        sources[offer.key] = source_text[ref]
    used = sorted({source_date[ref] for *_r, ref in doc["prices"]}) or [
        date.fromisoformat(doc.get("as_of", "1970-01-01"))]
    return Snapshot(as_of=used[0], offers=tuple(offers), sources=sources, newest=used[-1],
                    places=_places(doc, instances))


def _places(doc: Mapping[str, Any], instances: Mapping[str, Mapping[str, Any]]) -> Places:
    sets: dict[str, tuple[tuple[str, str], ...]] = {}
    for ref, places in doc.get("place_sets", {}).items():
        pairs = [p.split("/", 1) for p in places]
        sets[ref] = tuple((r, z) for r, z in pairs)
    out: dict[tuple[str, str], tuple[tuple[str, str], ...]] = {}
    for key, facts in instances.items():
        if "places" in facts:
            cloud, instance_type = key.split(":", 1)
            out[(cloud, instance_type)] = sets[facts["places"]]
    return out


def snapshot_document(
    offers: Sequence[Offer],
    sources: Mapping[tuple[str, str, str, str, str], str],
    note: str,
    places: Places | None = None,
) -> str:
    """Render offers as a snapshot document (one price per line, stable order).

    ``sources`` maps Offer.key to the text naming where that figure came from; the
    source's date is the offer's ``observed_at`` day (offers of one text share it).
    ``places``: (cloud, instance type) -> the data centres its "global" row stands for
    (kept for the instance types among ``offers``; equal lists are written once).
    """
    place_ids: dict[tuple[tuple[str, str], ...], str] = {}
    source_ids: dict[tuple[str, date], str] = {}
    instances: dict[str, dict[str, Any]] = {}
    rows: list[list[Any]] = []
    for o in sorted(offers, key=lambda o: o.key):
        text = (sources[o.key], o.observed_at.astimezone(UTC).date())
        ref = source_ids.setdefault(text, f"s{len(source_ids) + 1}")
        facts = instances.setdefault(
            f"{o.cloud}:{o.instance_type}",
            {"gpu": o.gpu, "gpu_count": o.gpu_count, "gpu_memory_gib": o.gpu_memory_gib,
             "vcpus": o.vcpus, "ram_gib": o.ram_gib},
        )
        centres = (places or {}).get((o.cloud, o.instance_type))
        if centres:
            facts["places"] = place_ids.setdefault(tuple(sorted(centres)),
                                                   f"d{len(place_ids) + 1}")
        rows.append([o.cloud, o.region, o.zone, o.instance_type, o.market.value,
                     str(o.price_per_hour), ref])
    head = {
        "format": FORMAT,
        "note": note,
        "columns": list(COLUMNS),
        "sources": {ref: {"text": text, "as_of": day.isoformat()}
                    for (text, day), ref in source_ids.items()},
        "instances": dict(sorted(instances.items())),
    }
    if place_ids:
        head["place_sets"] = {ref: [f"{r}/{z}" for r, z in centres]
                              for centres, ref in place_ids.items()}
    out = json.dumps(head, indent=1)[:-2]  # drop the closing "\n}"
    body = ",\n".join("  " + json.dumps(r) for r in rows)
    return f'{out},\n "prices": [\n{body}\n ]\n}}\n'
