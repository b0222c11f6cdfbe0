"""Offers priced once for many data centres (RunPod: region "global", one priced row per
type, providers/snapshot.py ``places``): where such an offer can run.

A "global" offer stands for every (region, zone) place its source lists it in. A job that
names regions (``resources.regions``) may take it where one of those places matches, by
region (RunPod's country code, "US") or by zone (its data centre, "US-GA-1": SkyPilot's
RunPod cloud calls the country the region and the data centre the zone,
sky/clouds/runpod.py ``regions_with_offering``). The placement is then narrowed to the
matching place, which the SkyPilot executor pins; a job naming no region keeps the
"global" offer and SkyPilot picks and fails over among the data centres itself.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import replace

from gpuopt.providers.clouds import find_cloud
from gpuopt.providers.offer import GLOBAL_REGION, Offer
from gpuopt.providers.snapshot import Places

PlaceList = tuple[tuple[str, str], ...]


def places_of(o: Offer, places: Places) -> PlaceList:
    """The places a "global" offer stands for (empty: a regional offer, or none known)."""
    if o.region != GLOBAL_REGION:
        return ()
    return places.get((o.cloud, o.instance_type), ())


def matching_places(o: Offer, regions: Collection[str], places: Places) -> PlaceList:
    """The places of a "global" offer that ``regions`` names, by region or by zone."""
    return tuple(p for p in places_of(o, places) if p[0] in regions or p[1] in regions)


def offer_in_regions(o: Offer, regions: Collection[str], places: Places) -> bool:
    """The offer runs somewhere in ``regions``: its own region, or one of its places."""
    return o.region in regions or bool(matching_places(o, regions, places))


def pin_to_regions(o: Offer, regions: Sequence[str] | None, places: Places) -> Offer:
    """A "global" offer narrowed to where the job may run: the first matching region
    in the job's order: a country named whole (SkyPilot fails over among its data
    centres there) or one data centre. Unchanged when the job names no region or
    the offer is no "global" offer with a matching place."""
    if not regions or o.region in regions:
        return o
    listed = places_of(o, places)
    for name in regions:  # the job's order: its first region with a place of the offer
        for region, zone in listed:
            if name in (region, zone):
                return replace(o, region=region, zone=None if name == region else zone)
    return o


def where_label(o: Offer, places: Places, *, short: bool = False) -> str | None:
    """'runpod (48 data centres)' ('runpod/48 DCs' short) for a "global" offer with
    known places; None for any other offer (its own region or zone says where)."""
    n = len(places_of(o, places))
    if not n:
        return None
    if short:
        return f"{o.cloud}/{n} DC{'s' if n != 1 else ''}"
    return f"{o.cloud} ({n} data centre{'s' if n != 1 else ''})"


def anywhere_label(o: Offer, places: Places) -> str:
    """'any of 48 RunPod data centres' for a "global" offer the job did not pin (SkyPilot
    picks among them); '' for any other offer (its region or zone says where)."""
    n = len(places_of(o, places))
    if not n:
        return ""
    entry = find_cloud(o.cloud)
    name = entry.display_name if entry is not None else o.cloud
    return f"any of {n} {name} data centre{'s' if n != 1 else ''}"
