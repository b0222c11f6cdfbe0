"""Offers priced once for many data centres (RunPod, region "global"): the job's regions
select them through their places, and the plan says where they run."""

from __future__ import annotations

from gpuopt.policies.index import OfferIndex
from gpuopt.policies.placement import plan_job
from gpuopt.policies.plan.offers import offer_filter
from gpuopt.policies.plan.places import (
    anywhere_label,
    matching_places,
    pin_to_regions,
    where_label,
)
from tests.policies.plan.helpers import ctx, job, offer

# RunPod's catalog names a country as the region and a data centre as the zone
# (docs/snapshot_catalogs/v8/runpod/vms.csv: "US,US-GA-1", "CZ,EU-CZ-1").
CENTRES = (("CZ", "EU-CZ-1"), ("SE", "EU-SE-1"), ("SE", "EU-SE-2"), ("US", "US-GA-1"))


def _runpod(price: str = "1.39"):  # type: ignore[no-untyped-def]
    return offer("A100-80GB-PCIe", 1, price, cloud="runpod", region="global")


def _places():  # type: ignore[no-untyped-def]
    return {("runpod", _runpod().instance_type): CENTRES}


def test_a_global_offer_is_in_the_regions_its_places_are_in_by_country_or_data_centre() -> None:
    o = _runpod()
    assert matching_places(o, ["SE"], _places()) == (("SE", "EU-SE-1"), ("SE", "EU-SE-2"))
    assert matching_places(o, ["US-GA-1"], _places()) == (("US", "US-GA-1"),)
    assert matching_places(o, ["us-east-1"], _places()) == ()
    assert matching_places(o, ["SE"], {}) == ()  # no places known: none matches
    regional = offer("A100-80GB-PCIe", 1, "1", region="SE")  # not "global": no places
    assert matching_places(regional, ["SE"], _places()) == ()


def test_the_filter_admits_a_global_offer_only_where_the_job_names_one_of_its_places() -> None:
    spec = job("resources:\n  regions: [US-GA-1]\n")
    with_places, _ = offer_filter(spec, ctx(), _places())
    assert with_places(_runpod())
    without, _ = offer_filter(spec, ctx())  # as before places were known
    assert not without(_runpod())
    elsewhere, _ = offer_filter(job("resources:\n  regions: [JP]\n"), ctx(), _places())
    assert not elsewhere(_runpod())
    anywhere, everywhere = offer_filter(job(), ctx(), _places())
    assert anywhere(_runpod()) and everywhere


def test_pinning_takes_the_jobs_first_region_with_a_place_country_whole_or_one_centre() -> None:
    o = _runpod()
    by_centre = pin_to_regions(o, ["JP", "US-GA-1", "EU-CZ-1"], _places())
    assert (by_centre.region, by_centre.zone) == ("US", "US-GA-1")
    by_country = pin_to_regions(o, ["SE"], _places())
    assert (by_country.region, by_country.zone) == ("SE", None)  # SkyPilot picks in SE
    assert pin_to_regions(o, None, _places()) is o
    assert pin_to_regions(o, ["JP"], _places()) is o
    assert by_centre.price_per_hour == o.price_per_hour


def test_the_label_counts_the_data_centres_of_a_global_offer() -> None:
    assert where_label(_runpod(), _places()) == "runpod (4 data centres)"
    assert where_label(_runpod(), _places(), short=True) == "runpod/4 DCs"
    assert where_label(_runpod(), {}) is None
    assert where_label(offer("L4", 1, "1"), _places()) is None
    assert anywhere_label(_runpod(), _places()) == "any of 4 RunPod data centres"
    assert anywhere_label(_runpod(), {}) == ""
    assert anywhere_label(offer("L4", 1, "1"), _places()) == ""
    one = {("runpod", _runpod().instance_type): CENTRES[:1]}
    assert anywhere_label(_runpod(), one) == "any of 1 RunPod data centre"


def test_a_plan_restricted_to_a_data_centre_places_the_runpod_offer_there() -> None:
    aws = offer("A100-80GB-PCIe", 1, "3.00", region="us-east-1")
    index = OfferIndex.build([_runpod(), aws], _places())
    assert index.places == _places()
    gpus = "resources:\n  gpus: [A100-80GB-PCIe]\n  spot: never\n"
    best = plan_job(job(gpus + "  regions: [US-GA-1, us-east-1]\n"), index, ctx()).best
    assert best is not None
    assert (best.offer.cloud, best.offer.region, best.offer.zone) == ("runpod", "US", "US-GA-1")
    # its on-demand price is still found (the next-attempt policy looks it up by region)
    assert index.on_demand_offer("runpod", "US", best.offer.instance_type) == _runpod()
    # the pick's sentence names where it runs: the place pinned, or the data centres
    assert best.reason.startswith("A100-80GB-PCIe x1 on-demand in runpod US-GA-1:"), best.reason
    free = plan_job(job(gpus), index, ctx()).best
    assert free is not None and (free.offer.region, free.offer.zone) == ("global", None)
    assert free.reason.startswith("A100-80GB-PCIe x1 on-demand in any of 4 RunPod data centres:"), (
        free.reason
    )
    assert "global" not in free.reason
    aws_only = plan_job(job(gpus + "  regions: [us-east-1]\n"), index, ctx()).best
    assert aws_only is not None and aws_only.offer.cloud == "aws"
    unknown = OfferIndex.build([_runpod(), aws])  # no places: the job's regions miss it
    best = plan_job(job(gpus + "  regions: [US-GA-1, us-east-1]\n"), unknown, ctx()).best
    assert best is not None and best.offer.cloud == "aws"


def test_the_index_keeps_places_only_for_its_global_offers() -> None:
    index = OfferIndex.build([offer("L4", 1, "1")], {**_places(), ("aws", "l4-x1"): CENTRES})
    assert dict(index.places) == {}
