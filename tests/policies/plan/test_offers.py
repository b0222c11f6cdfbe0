from __future__ import annotations

from decimal import Decimal

from gpuopt.policies.index import OfferIndex
from gpuopt.policies.plan.model import OwnedReserved
from gpuopt.policies.plan.offers import (
    allowed_markets,
    offer_filter,
    owned_offers,
    sold_counts,
)
from gpuopt.providers.offer import Market
from tests.policies.plan.helpers import ctx, job, offer


def test_markets_follow_the_spot_setting_unless_the_context_forces_them() -> None:
    assert allowed_markets(job("resources:\n  spot: never\n"), ctx()) == (Market.ON_DEMAND,)
    assert allowed_markets(job("resources:\n  spot: always\n"), ctx()) == (Market.SPOT,)
    assert allowed_markets(job(), ctx()) == (Market.ON_DEMAND, Market.SPOT)
    assert allowed_markets(job(), ctx(markets=(Market.SPOT,))) == (Market.SPOT,)


def test_the_filter_keeps_the_allowed_clouds_and_regions_and_says_when_it_keeps_all() -> None:
    allowed, everywhere = offer_filter(job("resources:\n  clouds: [gcp]\n"), ctx())
    assert not everywhere
    assert allowed(offer("L4", 1, "1", cloud="gcp", region="us-central1"))
    assert not allowed(offer("L4", 1, "1"))
    _, all_of_them = offer_filter(job(), ctx())
    assert all_of_them
    only_east, _ = offer_filter(job(), ctx(regions_by_cloud={"aws": frozenset({"us-east-1"})}))
    assert only_east(offer("L4", 1, "1")) and not only_east(offer("L4", 1, "1",
                                                                  region="us-west-2"))


def test_owned_reserved_capacity_is_an_offer_at_no_price() -> None:
    index = OfferIndex.build([offer("L4", 1, "0.8")])
    owned = owned_offers(index, ctx(owned_reserved=(
        OwnedReserved("aws", "us-east-1", "l4-x1", 2),
        OwnedReserved("aws", "us-east-1", "l4-x1", 0),  # none free
        OwnedReserved("aws", "eu-west-1", "l4-x1", 1))))  # no such offer
    assert len(owned) == 1
    assert owned[0].price_per_hour == Decimal(0) and owned[0].market is Market.RESERVED_1Y


def test_sold_counts_are_the_counts_an_allowed_place_sells_up_to_the_limit() -> None:
    index = OfferIndex.build([offer("A100-80GB", 1, "4"), offer("A100-80GB", 8, "30"),
                              offer("A100-80GB", 2, "8", cloud="gcp", region="us-central1")])
    aws_only, _ = offer_filter(job("resources:\n  clouds: [aws]\n"), ctx())
    markets = (Market.ON_DEMAND,)
    assert sold_counts(index, "A100-80GB", 8, markets, aws_only, []) == [1, 8]
    assert sold_counts(index, "A100-80GB", 4, markets, aws_only, []) == [1]
    assert sold_counts(index, "A100-80GB", 8, markets, aws_only, [], everywhere=True) == \
        [1, 2, 8]
    assert sold_counts(index, "A100-80GB", 8, (Market.SPOT,), aws_only, []) == []
