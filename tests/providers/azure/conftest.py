from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from tests.net import write_self_signed
from tests.providers.azure.server import Reply, Seen

PRICES_PATH = "/api/retail/prices"


@pytest.fixture(scope="session")
def tls(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return write_self_signed(tmp_path_factory.mktemp("tls"))


@pytest.fixture(autouse=True)
def _trust_local_tls(tls: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    # requests (under azure-core) reads the CA bundle and proxy settings from the env.
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(tls[0]))
    for var in ("NO_PROXY", "no_proxy"):
        monkeypatch.setenv(var, "127.0.0.1,localhost")
    monkeypatch.delenv("AZURE_SUBSCRIPTION_ID", raising=False)


def retail_prices_api(
    items: Sequence[dict[str, Any]], page_size: int = 4
) -> Callable[[Seen, str], Reply]:
    """Answer like prices.azure.com: apply the $filter's armSkuName / armRegionName terms,
    page by $skip with an absolute NextPageLink, and the documented envelope."""

    def handle(req: Seen, base: str) -> Reply:
        assert req.path == PRICES_PATH
        odata = req.query["$filter"][0]
        assert odata.startswith("serviceName eq 'Virtual Machines' and ")
        skus = set(re.findall(r"armSkuName eq '([^']+)'", odata))
        regions = set(re.findall(r"armRegionName eq '([^']+)'", odata))
        rows = [
            r
            for r in items
            if r["armSkuName"] in skus and (not regions or r["armRegionName"] in regions)
        ]
        skip = int(req.query.get("$skip", ["0"])[0])
        page = rows[skip : skip + page_size]
        more = skip + page_size < len(rows)
        next_link = (
            f"{base}{PRICES_PATH}?api-version={req.query['api-version'][0]}"
            f"&currencyCode={req.query['currencyCode'][0]}"
            f"&$filter={quote(odata, safe='')}&$skip={skip + page_size}"
            if more
            else None
        )
        return Reply(
            body={
                "BillingCurrency": "USD",
                "CustomerEntityId": "Default",
                "CustomerEntityType": "Retail",
                "Items": page,
                "NextPageLink": next_link,
                "Count": len(page),
            }
        )

    return handle
