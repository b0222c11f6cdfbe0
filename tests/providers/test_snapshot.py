from __future__ import annotations

from collections import Counter
from datetime import date

from gpuopt.providers.clouds import cloud_names
from gpuopt.providers.hardware import GPUS
from gpuopt.providers.integrity import offer_problems
from gpuopt.providers.offer import Market
from gpuopt.providers.snapshot import load_snapshot, snapshot_document
from tests.providers.integrity import assert_offers_sane


def test_every_snapshot_offer_passes_integrity() -> None:
    snap = load_snapshot()
    assert all(offer_problems(o) == [] for o in snap.offers)
    assert_offers_sane(snap.offers)
    assert all(o.source == "snapshot" for o in snap.offers)


def test_snapshot_coverage() -> None:
    snap = load_snapshot()
    assert snap.as_of <= date.today()
    required = {
        "aws": {"T4", "A10G", "L4", "A100-40GB", "A100-80GB", "H100"},
        "gcp": {"T4", "L4", "A100-40GB", "A100-80GB", "H100"},  # GCP sells no A10G
        # Azure sells no L4; its A10, A100 80GB PCIe and H100 NVL are their own rows.
        "azure": {"T4", "A10", "A100-40GB", "A100-80GB", "A100-80GB-PCIe", "H100", "H100-NVL"},
        "lambda": {"A10", "RTXA6000", "A100-40GB", "A100-80GB", "H100", "B200"},
        "runpod": {"RTX4090", "A100-80GB-PCIe"},
        "vast": {"RTX4090", "RTX3090", "H200", "B200", "H100", "RTX4060Ti-16GB"},
    }
    per_cloud = {c: {o.gpu for o in snap.offers if o.cloud == c} for c in cloud_names()}
    for cloud, gpus in per_cloud.items():
        assert gpus >= required.get(cloud, set()), cloud
    markets = Counter((o.cloud, o.market) for o in snap.offers)
    for cloud in cloud_names():
        # The GPU clouds' snapshot rows are on-demand only (docs/snapshot_catalog_rows.py
        # says why); the big three have every market.
        wanted = list(Market) if cloud in ("aws", "gcp", "azure") else [Market.ON_DEMAND]
        for market in wanted:
            assert markets[(cloud, market)] > 0, (cloud, market)
    # Issue 18: the newest data-center GPUs and the consumer cards people rent are priced.
    gpus = {o.gpu for o in snap.offers}
    assert {"H200", "B200", "RTX4090"} <= gpus
    assert any(o.instance_type == "p4de.24xlarge" and o.region == "us-west-2"
               for o in snap.offers)
    aws_spot = [o for o in snap.offers if o.cloud == "aws" and o.market is Market.SPOT]
    assert aws_spot and all(o.zone and o.zone.startswith(o.region) for o in aws_spot)
    assert {o.gpu_count for o in snap.offers} == {1, 2, 4, 8}
    assert set(o.gpu for o in snap.offers) <= set(GPUS)


def test_every_figure_names_its_source() -> None:
    snap = load_snapshot()
    assert set(snap.sources) == {o.key for o in snap.offers}
    assert all(len(text) > 20 for text in snap.sources.values())


def test_spot_is_30_to_70_percent_cheaper_band() -> None:
    snap = load_snapshot()
    od = {
        (o.cloud, o.region, o.instance_type): o.price_per_hour
        for o in snap.offers
        if o.market is Market.ON_DEMAND
    }
    ratios = [
        o.price_per_hour / od[(o.cloud, o.region, o.instance_type)]
        for o in snap.offers
        if o.market is Market.SPOT and (o.cloud, o.region, o.instance_type) in od
    ]
    assert ratios and all(0.2 < r < 0.75 for r in ratios)


def test_document_round_trips() -> None:
    snap = load_snapshot()
    text = snapshot_document(snap.offers, snap.as_of, snap.sources, note="n")
    again = load_snapshot(text)
    assert sorted(again.offers, key=lambda o: o.key) == sorted(snap.offers, key=lambda o: o.key)
    assert dict(again.sources) == dict(snap.sources)
