"""AwsProvider: on-demand, reserved and spot GPU offers from AWS's own APIs."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime

from gpuopt.providers.aws import fetch, parse
from gpuopt.providers.aws.catalog import DEFAULT_REGIONS, INSTANCE_TYPES, PRICING_ENDPOINT_REGION
from gpuopt.providers.aws.fetch import ClientFactory
from gpuopt.providers.aws.offers import build_offers
from gpuopt.providers.base import CredentialsMissing, FetchResult, ProviderError
from gpuopt.providers.integrity import GPU_COUNTS

log = logging.getLogger(__name__)


class AwsProvider:
    """One poll = Pricing API (on-demand + reserved), spot history per region, GPU facts,
    and optionally the Spot Instance Advisor buckets and spot placement scores.

    ``client_factory`` and ``http_get`` exist for tests (stubbed boto3 clients, a
    recorded advisor feed); by default boto3's own credential chain and retry mode apply.
    Construction does no I/O.
    """

    cloud = "aws"

    def __init__(
        self,
        regions: Sequence[str] | None = None,
        instance_types: Sequence[str] | None = None,
        *,
        client_factory: fetch.ClientFactory | None = None,
        http_get: fetch.HttpGet | None = None,
        spot_advisor: bool = True,
        placement_scores: bool = True,
        max_attempts: int = fetch.DEFAULT_MAX_ATTEMPTS,
    ) -> None:
        self.regions = tuple(regions or DEFAULT_REGIONS)
        self.instance_types = tuple(instance_types or INSTANCE_TYPES)
        self._client_factory = client_factory
        self._http_get = http_get or fetch.http_get
        self._spot_advisor = spot_advisor
        self._placement_scores = placement_scores
        self._max_attempts = max_attempts

    def check_credentials(self) -> None:
        if not fetch.has_credentials():
            raise CredentialsMissing(fetch.NO_CREDENTIALS)

    def fetch(self, now: datetime, regions: Sequence[str] | None = None) -> FetchResult:
        regions = tuple(regions or self.regions)
        clients = self._client_factory or fetch.client_factory(self._max_attempts)
        warnings: list[str] = []

        ec2_home = clients("ec2", regions[0])
        facts, notes = parse.parse_instance_types(
            fetch.describe_instance_types(ec2_home, self.instance_types)
        )
        warnings += notes
        wanted = [t for t in self.instance_types if t in facts]
        warnings += [
            f"{t}: no GPU facts from describe_instance_types, dropped"
            for t in self.instance_types
            if t not in facts and not any(w.startswith(f"{t}:") for w in notes)
        ]

        pricing = clients("pricing", PRICING_ENDPOINT_REGION)
        items = [
            item
            for region in regions
            for itype in wanted
            for item in fetch.get_products(pricing, itype, region)
        ]
        prices, notes = parse.parse_price_list(items)
        warnings += notes

        spots: list[parse.SpotQuote] = []
        # Where the spot listing is complete: the regions that answered, times every asked
        # type AWS gave usable GPU facts for (build_offers drops the others).
        listed = [t for t in wanted if facts[t].gpu_count in GPU_COUNTS]
        scope: list[tuple[str, str]] = []
        for region in regions:
            try:
                rows = fetch.describe_spot_prices(clients("ec2", region), region, wanted, now)
            except ProviderError as err:
                # One region (not enabled for the account, throttled) must not hide the rest.
                warnings.append(f"spot prices skipped: {err}")
                continue
            quotes, notes = parse.parse_spot_history(region, rows)
            spots += quotes
            warnings += notes
            # A row the parser dropped (a price that is not a number) leaves its type's
            # listing in the region incomplete: its zone is not known to be unlisted.
            unread = {t for _z, t in parse.spot_pools(rows) - {(q.zone, q.instance_type)
                                                                for q in quotes}}
            scope += [(region, t) for t in listed if t not in unread]

        offers, notes = build_offers(
            facts,
            prices,
            spots,
            now,
            buckets=self._advisor_buckets(warnings) if spots else None,
            scores=self._scores(clients, ec2_home, spots, warnings) if spots else None,
        )
        warnings += notes
        return FetchResult(cloud=self.cloud, offers=tuple(offers), warnings=tuple(warnings),
                           spot_scope=frozenset(scope))

    def _advisor_buckets(self, warnings: list[str]) -> dict[tuple[str, str], int] | None:
        if not self._spot_advisor:
            return None
        try:
            return parse.parse_spot_advisor(fetch.fetch_spot_advisor(self._http_get))
        except Exception as err:  # optional data: any failure only costs the buckets
            warnings.append(f"spot advisor feed unavailable: {type(err).__name__}: {err}")
            return None

    def _scores(
        self, clients: ClientFactory, ec2: object, spots: Sequence[parse.SpotQuote],
        warnings: list[str],
    ) -> dict[str, dict[tuple[str, str], int]] | None:
        """Placement scores by instance type, then (region, zone name): the zone ids AWS
        scores are named through this account's describe_availability_zones (a region
        whose zones cannot be read falls back on the spot rows' AvailabilityZoneId)."""
        if not self._placement_scores:
            return None
        regions = sorted({s.region for s in spots})
        rows, notes = fetch.placement_scores_by_type(
            ec2, sorted({s.instance_type for s in spots}), regions)
        warnings += notes
        if not rows:
            return {}
        names = {(s.region, s.zone_id): s.zone for s in spots if s.zone_id}
        for region in regions:
            try:
                zones = fetch.describe_availability_zones(clients("ec2", region), region)
            except ProviderError as err:
                warnings.append(f"zone names for placement scores: {err}")
                continue
            names.update(parse.parse_zone_ids(zones))
        return {t: parse.scores_by_zone(parse.parse_placement_scores(r), names)
                for t, r in rows.items()}
