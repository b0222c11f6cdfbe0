"""Replace the remaining estimate/illustrative AWS rows of the embedded snapshot with
figures read from SkyPilot's public AWS catalog (issue 18).

Run from the repository root after ``docs/snapshot_catalog_spot_rows.py``:
``python docs/snapshot_catalog_aws_rows.py``. Idempotent.

Every figure below was read on 2026-12-01 with the search tool's read_file from
skypilot-org/skypilot-catalog ``catalogs/v8/aws/vms.csv`` at commit 00148f2a (the same
file ``snapshot_catalog_spot_rows.py`` reads; it carries no fetch date):

- eu-west-1 on-demand: the ``Price`` column, which is one value per region (every AZ-id
  row of a type in a region repeats it). These replace the "us-east-1 x 1.11" estimates.
- spot: the ``SpotPrice`` column, keyed by availability-zone *id* (use1-az4). AWS maps
  zone ids to zone names per account, so each row is regional (zone None): the median over
  the region's AZ-id rows, the ids and values in the label. Left out: Local Zones
  (usw2-lax1-az1/az2, use1-atl2-az1), empty cells (p3 in use1-az3/az4 has none), and cells
  equal to the on-demand Price (no spot quote; none among the rows kept here). The
  illustrative per-zone rows (us-east-1a..c, us-west-2a..c, eu-west-1a/b) are dropped.

The catalog lists no g6 or g6e in eu-west-1 (snapshot_catalog_spot_rows.py already drops
the eu-west-1 g6 rows; the snapshot has no eu-west-1 g6e row). The eu-west-1 reserved rows
were "approximate" (derived from the old eu-west-1 estimate; the catalog has no reserved
column): ``snapshot_drop_unsourced.py``, run last, drops them with every other reserved row.
"""

from __future__ import annotations

import json
import statistics
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

from gpuopt.providers.offer import Market, Offer
from gpuopt.providers.snapshot import load_snapshot, snapshot_document

PATH = Path(__file__).resolve().parents[1] / "gpuopt" / "providers" / "snapshot_data.json"
READ = "2026-12-01"
FILE = "SkyPilot catalog skypilot-org/skypilot-catalog catalogs/v8/aws/vms.csv (commit 00148f2a)"

# eu-west-1 on-demand Price (the euw1-az* rows of each type agree).
EU_WEST_1_PRICE = {
    "g4dn.xlarge": "0.587",
    "g4dn.12xlarge": "4.362",
    "g4dn.metal": "8.724",
    "g5.xlarge": "1.123",
    "g5.12xlarge": "6.33167",
    "g5.48xlarge": "18.18233",
    "p3.2xlarge": "3.305",
    "p3.8xlarge": "13.22",
    "p3.16xlarge": "26.44",
    "p4d.24xlarge": "23.71569",
}


def _z(prefix: str, **cells: str) -> dict[str, str]:
    """AZ-id -> SpotPrice, e.g. _z("use1", az1="0.2") -> {"use1-az1": "0.2"}."""
    return {f"{prefix}-{az}": price for az, price in cells.items()}


# (region, instance type) -> the SpotPrice of each AZ id kept.
SPOT: dict[tuple[str, str], dict[str, str]] = {
    ("us-east-1", "g4dn.xlarge"): _z("use1", az1="0.2158", az2="0.2", az4="0.2039",
                                     az5="0.202", az6="0.2043"),
    ("us-west-2", "g4dn.xlarge"): _z("usw2", az1="0.2464", az2="0.2479", az3="0.2386"),
    ("eu-west-1", "g4dn.xlarge"): _z("euw1", az1="0.3147", az2="0.3171", az3="0.3317"),
    ("us-east-1", "g4dn.12xlarge"): _z("use1", az1="1.4134", az2="1.3211", az4="1.326",
                                       az5="1.2875", az6="1.3061"),
    ("us-west-2", "g4dn.12xlarge"): _z("usw2", az1="1.6658", az2="1.7173", az3="1.7536"),
    ("eu-west-1", "g4dn.12xlarge"): _z("euw1", az1="1.9096", az2="2.0048", az3="1.8367"),
    ("us-east-1", "g4dn.metal"): _z("use1", az1="3.7292", az2="3.0125", az4="2.9633",
                                    az5="2.9583", az6="2.9236"),
    ("us-west-2", "g4dn.metal"): _z("usw2", az1="3.1041", az2="2.9735", az3="3.2342"),
    ("eu-west-1", "g4dn.metal"): _z("euw1", az1="4.7539", az2="3.809", az3="4.0204"),
    ("us-east-1", "g5.12xlarge"): _z("use1", az1="2.7804", az2="2.0796", az4="2.0813",
                                     az5="2.1824", az6="2.2387"),
    ("us-west-2", "g5.12xlarge"): _z("usw2", az1="3.3699", az2="2.757", az3="3.0607"),
    ("eu-west-1", "g5.12xlarge"): _z("euw1", az1="2.8212", az2="3.2163", az3="2.816"),
    ("us-east-1", "g5.48xlarge"): _z("use1", az1="4.5408", az2="7.0077", az4="6.8918",
                                     az5="5.8671", az6="5.6899"),
    ("us-west-2", "g5.48xlarge"): _z("usw2", az1="7.8564", az2="8.0904", az3="7.7435"),
    ("eu-west-1", "g5.48xlarge"): _z("euw1", az1="8.0425", az2="8.1388", az3="8.0117"),
    ("us-east-1", "g6.12xlarge"): _z("use1", az1="2.0968", az2="1.9631", az4="2.0353",
                                     az6="1.7552"),
    ("us-west-2", "g6.12xlarge"): _z("usw2", az1="2.3163", az2="2.5757", az3="2.4053",
                                     az4="2.3736"),
    ("us-east-1", "g6.48xlarge"): _z("use1", az1="3.7289", az2="6.2789", az4="5.947",
                                     az6="5.0768"),
    ("us-east-1", "g6e.xlarge"): _z("use1", az1="1.1975", az2="0.9154", az4="0.9599",
                                    az6="1.0492"),
    ("us-west-2", "g6e.xlarge"): _z("usw2", az1="0.9228", az2="0.7201", az3="0.6538",
                                    az4="1.5145"),
    ("us-east-1", "g6e.48xlarge"): _z("use1", az1="8.0189", az2="20.64", az4="10.2818",
                                      az6="10.4635"),
    ("us-west-2", "g6e.48xlarge"): _z("usw2", az1="12.7921", az2="10.1607", az3="11.6207",
                                      az4="19.9005"),
    ("us-east-1", "p3.2xlarge"): _z("use1", az1="0.3707", az2="0.4281", az5="0.4041",
                                    az6="0.3841"),
    ("us-west-2", "p3.2xlarge"): _z("usw2", az1="0.6598", az2="0.5415", az3="0.5349"),
    ("eu-west-1", "p3.2xlarge"): _z("euw1", az2="0.8277", az3="0.8452"),
    ("us-east-1", "p3.8xlarge"): _z("use1", az1="1.4427", az2="1.5132", az5="1.4129",
                                    az6="1.4762"),
    ("us-west-2", "p3.8xlarge"): _z("usw2", az1="2.9372", az2="3.0794", az3="2.7475"),
    ("eu-west-1", "p3.8xlarge"): _z("euw1", az2="3.7377", az3="3.5175"),
    ("us-east-1", "p3.16xlarge"): _z("use1", az1="3.3915", az2="2.8502", az5="2.6694",
                                     az6="2.7188"),
    ("us-west-2", "p3.16xlarge"): _z("usw2", az1="6.4584", az2="4.9885", az3="4.4957"),
    ("eu-west-1", "p3.16xlarge"): _z("euw1", az2="3.9745", az3="4.3199"),
    ("eu-west-1", "p4d.24xlarge"): _z("euw1", az2="9.7598"),
}


def _spot_source(zones: dict[str, str]) -> str:
    ids = ", ".join(f"{z} {p}" for z, p in sorted(zones.items()))
    what = "the one AZ-id row" if len(zones) == 1 else "median over the AZ-id rows"
    return (f"{FILE}, SpotPrice column, read {READ}: {what} ({ids}); regional, as AWS maps "
            "zone ids to zone names per account")


def main() -> None:
    text = PATH.read_text(encoding="utf-8")
    snap = load_snapshot(text)
    observed = datetime(snap.as_of.year, snap.as_of.month, snap.as_of.day, tzinfo=UTC)
    offers = {o.key: o for o in snap.offers}
    sources = dict(snap.sources)
    facts = {o.instance_type: (o.gpu, o.gpu_count, o.gpu_memory_gib, o.vcpus, o.ram_gib)
             for o in snap.offers if o.cloud == "aws"}

    def put(region: str, itype: str, market: Market, price: Decimal, source: str) -> None:
        gpu, n, mem, vcpus, ram = facts[itype]
        o = Offer("aws", region, None, itype, gpu, n, mem, vcpus, ram, market, price,
                  observed, "snapshot")
        offers[o.key] = o
        sources[o.key] = source

    for itype, price in EU_WEST_1_PRICE.items():
        put("eu-west-1", itype, Market.ON_DEMAND, Decimal(price),
            f"{FILE}, on-demand Price column, eu-west-1, read {READ}")
    for (region, itype), zones in SPOT.items():
        for key, o in list(offers.items()):  # the illustrative zonal rows
            if (o.cloud, o.region, o.instance_type, o.market) == ("aws", region, itype,
                                                                   Market.SPOT):
                del offers[key]
                del sources[key]
        median = statistics.median(Decimal(p) for p in zones.values())
        put(region, itype, Market.SPOT, median, _spot_source(zones))
    note = json.loads(text)["note"]
    PATH.write_text(snapshot_document(list(offers.values()), snap.as_of, sources, note),
                    encoding="utf-8")
    print(f"{len(offers)} offers written to {PATH}")


if __name__ == "__main__":
    main()
