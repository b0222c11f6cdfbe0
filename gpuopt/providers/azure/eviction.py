"""Azure's spot eviction rates (a capacity signal for the spot policy, signals.py).

Azure publishes, per VM size and region, the rate at which its spot VMs were evicted as
a bucket of percent per hour ("0-5", "5-10", "10-15", "15-20", "20+"), in Azure Resource
Graph's ``SpotResources`` table (resources of type
``microsoft.compute/skuspotevictionrate/location``, ``sku.name`` the size,
``properties.evictionRate`` the bucket). Resource Graph answers a KQL query posted to
``/providers/Microsoft.ResourceGraph/resources`` (api-version 2021-03-01) with
``totalRecords``, ``count``, ``data`` (rows, ``resultFormat: objectArray``),
``resultTruncated`` and, while more rows follow, ``$skipToken``, which the next request
passes back in its ``options``.

The query and the parsing are pure (tested on recorded-shape answers); the POST goes
through azure-core's ``PipelineClient`` with a bearer token for ARM, imported lazily.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from gpuopt.core.lazy_import import LazyModule
from gpuopt.providers.azure.provider import SUBSCRIPTION_ENV, first_line
from gpuopt.providers.base import ProviderError

if TYPE_CHECKING:
    from azure.core.credentials import TokenCredential

azure_core = LazyModule("azure.core", extra="azure")
azure_policies = LazyModule("azure.core.pipeline.policies", extra="azure")
azure_rest = LazyModule("azure.core.rest", extra="azure")
azure_identity = LazyModule("azure.identity", extra="azure")
azure_exceptions = LazyModule("azure.core.exceptions", extra="azure")

ARM = "https://management.azure.com"
RESOURCE_GRAPH_PATH = "/providers/Microsoft.ResourceGraph/resources?api-version=2021-03-01"
ARM_SCOPE = "https://management.azure.com/.default"
MAX_PAGES = 100
BUCKETS = ("0-5", "5-10", "10-15", "15-20", "20+")
# Resource Graph returns at most 1000 records a request (its `$top` / `first` allows at
# most 1000: learn.microsoft.com/azure/governance/resource-graph/concepts/work-with-data,
# "Data set result size"); a bigger page is not its answer.
MAX_PAGE_ROWS = 1000
# An answer's body: MAX_PAGE_ROWS rows of a few short names (~100 bytes each), with a
# 40x margin; a larger body is refused before it is parsed.
MAX_BODY_CHARS = 4_000_000

Post = Callable[[Mapping[str, Any]], Mapping[str, Any]]


def _quoted(values: Iterable[str]) -> str:
    out = []
    for v in values:
        if not v.replace("_", "").replace("-", "").isalnum():
            raise ValueError(f"not a plain Azure name: {v!r}")
        out.append(f"'{v}'")
    return ", ".join(out)


def eviction_query(locations: Sequence[str], sizes: Sequence[str]) -> str:
    """The KQL query of the eviction-rate bucket of ``sizes`` in ``locations``."""
    return (
        "SpotResources"
        " | where type =~ 'microsoft.compute/skuspotevictionrate/location'"
        f" | where location in~ ({_quoted(locations)})"
        f" | where sku.name in~ ({_quoted(sizes)})"
        " | project skuName = tostring(sku.name), location,"
        " evictionRate = tostring(properties.evictionRate)"
        " | order by location asc, skuName asc"
    )


def request_body(query: str, subscriptions: Sequence[str],
                 skip_token: str | None = None) -> dict[str, Any]:
    options: dict[str, Any] = {"resultFormat": "objectArray"}
    if skip_token is not None:
        options["$skipToken"] = skip_token
    return {"subscriptions": list(subscriptions), "query": query, "options": options}


def _page_rows(payload: object) -> tuple[list[tuple[str, str, str]], str | None]:
    """One answer -> its (location, size, bucket) rows and the next page's ``$skipToken``.
    Rows with an unknown bucket (a negative or > 100 rate, NaN, a number, a word) or
    without both names are skipped (never guessed); an answer that is not a Resource Graph
    page is a ProviderError."""
    if not isinstance(payload, Mapping):
        raise ProviderError("azure: Resource Graph answer is not an object")
    rows = payload.get("data")
    if not isinstance(rows, list):
        raise ProviderError("azure: Resource Graph answer has no 'data' rows")
    if len(rows) > MAX_PAGE_ROWS:
        raise ProviderError(f"azure: Resource Graph answered {len(rows)} rows in one page "
                            f"(its pages hold at most {MAX_PAGE_ROWS})")
    out = []
    for row in rows:
        if not isinstance(row, Mapping):
            continue
        loc, size, rate = row.get("location"), row.get("skuName"), row.get("evictionRate")
        if isinstance(loc, str) and isinstance(size, str) and isinstance(rate, str) \
                and rate in BUCKETS:
            out.append((loc.lower(), size, rate))
    token = payload.get("$skipToken")
    return out, token if isinstance(token, str) and token else None


@dataclass(slots=True)
class _Rates:
    """The buckets folded over an answer's pages: a place answered twice with different
    buckets (either case of its names) is dropped, not guessed; ``asked`` (lower-case
    locations and sizes) keeps only the places asked about."""

    asked: tuple[frozenset[str], frozenset[str]] | None = None
    out: dict[tuple[str, str], str] = field(default_factory=dict)
    keys: dict[tuple[str, str], tuple[str, str]] = field(default_factory=dict)
    conflicting: set[tuple[str, str]] = field(default_factory=set)

    def add(self, rows: Iterable[tuple[str, str, str]]) -> None:
        for loc, size, rate in rows:
            folded = (loc, size.lower())
            if self.asked is not None and not (loc in self.asked[0]
                                               and folded[1] in self.asked[1]):
                continue
            if folded in self.conflicting:
                continue
            key = self.keys.setdefault(folded, (loc, size))
            if self.out.setdefault(key, rate) != rate:
                del self.out[key]
                self.conflicting.add(folded)


def parse_page(payload: Mapping[str, Any]) -> tuple[dict[tuple[str, str], str], str | None]:
    """One answer -> ({(location, size): bucket}, the next page's ``$skipToken``)."""
    rows, token = _page_rows(payload)
    rates = _Rates()
    rates.add(rows)
    return rates.out, token


def fetch_eviction_rates(post: Post, subscriptions: Sequence[str], locations: Sequence[str],
                         sizes: Sequence[str]) -> dict[tuple[str, str], str]:
    """Every page of the query, following ``$skipToken``; only the places asked about."""
    query = eviction_query(locations, sizes)
    rates = _Rates((frozenset(v.lower() for v in locations), frozenset(v.lower() for v in sizes)))
    token: str | None = None
    seen: set[str] = set()
    for _ in range(MAX_PAGES):
        got, token = _page_rows(post(request_body(query, subscriptions, token)))
        rates.add(got)
        if token is None:
            return rates.out
        if token in seen:
            break
        seen.add(token)
    raise ProviderError("azure: Resource Graph paging does not end")


def resource_graph_post(credential: TokenCredential, *, base_url: str = ARM,
                        retry_total: int = 3) -> Post:
    """A ``post`` for :func:`fetch_eviction_rates` over azure-core (bearer token, retries)."""
    client = azure_core.PipelineClient(base_url, policies=[
        azure_policies.BearerTokenCredentialPolicy(credential, ARM_SCOPE),
        azure_policies.HeadersPolicy({"Accept": "application/json"}),
        azure_policies.UserAgentPolicy(sdk_moniker="gpuopt"),
        azure_policies.RetryPolicy(retry_total=retry_total),
    ])

    def post(body: Mapping[str, Any]) -> Mapping[str, Any]:
        request = azure_rest.HttpRequest("POST", base_url + RESOURCE_GRAPH_PATH, json=body)
        response = client.send_request(request)
        if response.status_code != 200:
            raise ProviderError(f"azure: Resource Graph answered HTTP {response.status_code}: "
                                f"{response.text()[:200]}")
        try:
            text = response.text()
            if len(text) > MAX_BODY_CHARS:
                raise ProviderError(f"azure: Resource Graph answer of {len(text)} characters "
                                    f"is larger than {MAX_BODY_CHARS}")
            answer = json.loads(text)
        except ValueError as err:  # JSONDecodeError, or a body that is not UTF-8 text
            raise ProviderError(f"azure: Resource Graph answer is not JSON: {err}") from err
        if not isinstance(answer, dict):
            raise ProviderError("azure: Resource Graph answer is not an object")
        return answer

    return post


@dataclass(frozen=True, slots=True)
class RatesAnswer:
    """One ask's outcome: ``ok`` with the buckets by (region, size), ``skipped`` (no
    subscription, no usable sign-in) or ``error``, with why."""

    status: str
    rates: Mapping[tuple[str, str], str] = field(default_factory=dict)
    error: str | None = None


def ask_eviction_rates(locations: Sequence[str], sizes: Sequence[str], *,
                       post: Post | None = None,
                       subscription: str | None = None) -> RatesAnswer:
    """The buckets of ``sizes`` in ``locations`` for the subscription (argument, else
    ``AZURE_SUBSCRIPTION_ID``), signed in with DefaultAzureCredential (environment,
    workload identity, managed identity, ``az login``); ``post`` (tests): the Resource
    Graph call. The token never reaches an error message: azure-core does not put it
    in its exceptions' text."""
    sub = subscription or os.environ.get(SUBSCRIPTION_ENV) or None
    if sub is None:
        return RatesAnswer("skipped", error=f"{SUBSCRIPTION_ENV} is not set")
    try:
        if post is not None:
            return RatesAnswer("ok", fetch_eviction_rates(post, [sub], locations, sizes))
        with azure_identity.DefaultAzureCredential() as credential:
            return RatesAnswer("ok", fetch_eviction_rates(resource_graph_post(credential),
                                                          [sub], locations, sizes))
    except ProviderError as err:
        return RatesAnswer("error", error=first_line(err))
    except Exception as err:
        if isinstance(err, azure_exceptions.ClientAuthenticationError):
            return RatesAnswer("skipped", error=f"no usable Azure credential: {first_line(err)}")
        if isinstance(err, azure_exceptions.AzureError):
            return RatesAnswer("error", error=f"{type(err).__name__}: {first_line(err)}")
        raise
