"""The daemon's Azure eviction-rate poll: what it asks, what it stores, how it fails, and
that a stored rate reaches the spot policy's history in the reconcile step's decision
(``[spot] signals``), over azure-core's real HTTP path against a local HTTPS server
answering as Resource Graph does (no Azure account here)."""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from azure.core.credentials import AccessToken
from azure.core.exceptions import ClientAuthenticationError

from gpuopt.core.places import Place
from gpuopt.orchestrator.daemon.health import DaemonHealth
from gpuopt.orchestrator.daemon.tasks import DaemonTasks
from gpuopt.orchestrator.prices.eviction_poll import poll_eviction_rates
from gpuopt.orchestrator.store import Store, open_store
from gpuopt.orchestrator.store.availability import load_observations
from gpuopt.orchestrator.store.daemon_state import list_polls
from gpuopt.policies.spot.observed import ObservationKind, Observed, SpotPlace
from gpuopt.policies.spot.signals import Reading
from gpuopt.providers.base import ProviderError
from tests.net import write_self_signed
from tests.providers.azure.server import Reply, Seen, serve

NOW = datetime(2026, 1, 5, 0, 0, tzinfo=UTC)
SUB = "00000000-0000-0000-0000-0000000000aa"
TOKEN = "eyJ0eXAi-not-a-real-token"
SIZE = "Standard_NC6s_v3"  # 1 x V100
PLACE = SpotPlace(Place("azure", "eastus", None), SIZE)
ROWS = {"totalRecords": 1, "count": 1, "resultTruncated": "false", "data": [
    {"skuName": SIZE, "location": "eastus", "evictionRate": "10-15"},
    {"skuName": SIZE, "location": "westus2", "evictionRate": "0-5"}]}


def _offers(at: datetime) -> list[Any]:
    from gpuopt.providers.hardware import GPUS
    from gpuopt.providers.offer import Market, Offer

    def offer(market: Market, price: str) -> Offer:
        return Offer(cloud="azure", region="eastus", zone=None, instance_type=SIZE,
                     gpu="V100", gpu_count=1, gpu_memory_gib=GPUS["V100"].memory_gib, vcpus=6,
                     ram_gib=112, market=market, price_per_hour=Decimal(price),
                     observed_at=at, source="api:azure")

    return [offer(Market.SPOT, "0.9180"), offer(Market.ON_DEMAND, "3.0600")]


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    from gpuopt.orchestrator.store.price_history import record_offers

    s = open_store(f"sqlite:///{tmp_path / 'g.db'}")
    with s.transaction() as session:
        record_offers(session, _offers(NOW - timedelta(minutes=5)), now=NOW - timedelta(minutes=5))
    yield s
    s.close()


def _stored(store: Store) -> list[Observed]:
    with store.session() as session:
        return load_observations(session, [PLACE], NOW - timedelta(days=1))[PLACE]


def test_the_poll_asks_for_the_priced_spot_sizes_and_records_their_buckets(
        store: Store) -> None:
    bodies: list[Mapping[str, Any]] = []

    def post(body: Mapping[str, Any]) -> Mapping[str, Any]:
        bodies.append(body)
        return ROWS

    result = poll_eviction_rates(store, NOW, post=post, subscription=SUB)["azure"]
    assert (result.status, result.places, result.recorded) == ("ok", 1, 1)
    assert "'eastus'" in bodies[0]["query"] and f"'{SIZE}'" in bodies[0]["query"]
    assert _stored(store) == [Observed(NOW, ObservationKind.EVICTION_RATE, 10)]
    assert [(p.cloud, p.last_status, p.last_ok_at) for p in list_polls(store)] == [
        ("azure-eviction", "ok", NOW)]
    again = poll_eviction_rates(store, NOW, post=post, subscription=SUB)["azure"]
    assert again.recorded == 0  # the same second: stored once


def test_without_a_subscription_nothing_is_asked(store: Store,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AZURE_SUBSCRIPTION_ID", raising=False)
    result = poll_eviction_rates(store, NOW, post=lambda _b: pytest.fail("asked"))["azure"]
    assert result.status == "skipped" and "AZURE_SUBSCRIPTION_ID" in (result.error or "")
    assert _stored(store) == []


@pytest.mark.parametrize(("raised", "status"), [
    (ProviderError("azure: Resource Graph answered HTTP 403: AuthorizationFailed"), "error"),
    (ClientAuthenticationError("DefaultAzureCredential failed to retrieve a token"),
     "skipped"),
])
def test_a_failed_poll_records_nothing_and_says_why(store: Store, raised: Exception,
                                                    status: str) -> None:
    def post(_body: Mapping[str, Any]) -> Mapping[str, Any]:
        raise raised

    result = poll_eviction_rates(store, NOW, post=post, subscription=SUB)["azure"]
    assert result.status == status and _stored(store) == []
    polls = list_polls(store)
    assert polls[0].last_status == status and polls[0].last_ok_at is None
    assert str(raised).splitlines()[0][:40] in (polls[0].last_error or "")


def test_a_hostile_answer_never_crashes_the_poll_or_stores_junk(store: Store) -> None:
    """Rows with a rate out of Azure's buckets (negative, > 100, NaN, Infinity, a word, a
    number), a missing field, a size not asked about, two buckets for one place: the poll
    is ok and stores nothing; an answer that is not a page is the poll's recorded error."""
    junk = [{"skuName": SIZE, "location": "eastus", "evictionRate": rate}
            for rate in ("-5", "150", "NaN", "Infinity", "high", 12.5, None)]
    junk += [{"skuName": SIZE, "location": "eastus"},
             {"skuName": "Standard_Foo_v9", "location": "eastus", "evictionRate": "0-5"},
             {"skuName": SIZE, "location": "westus2", "evictionRate": "0-5"},
             {"skuName": SIZE, "location": "eastus", "evictionRate": "0-5"},
             {"skuName": SIZE, "location": "EastUS", "evictionRate": "20+"}]
    answer = {"totalRecords": len(junk), "count": len(junk), "data": junk,
              "resultTruncated": "false"}
    result = poll_eviction_rates(store, NOW, post=lambda _b: answer,
                                 subscription=SUB)["azure"]
    assert (result.status, result.recorded) == ("ok", 0) and _stored(store) == []
    later = NOW + timedelta(minutes=10)
    result = poll_eviction_rates(store, later, post=lambda _b: [answer],
                                 subscription=SUB)["azure"]
    assert result.status == "error" and "not an object" in (result.error or "")
    assert [(p.last_status, p.last_try_at, p.last_ok_at) for p in list_polls(store)] == [
        ("error", later, NOW)]
    assert _stored(store) == []


# -- the daemon's job, over HTTPS, to the policy's history --------------------------------

class _Credential:
    closed = False

    def get_token(self, *scopes: str, **kwargs: Any) -> AccessToken:
        return AccessToken(TOKEN, int(time.time()) + 3600)

    def __enter__(self) -> _Credential:
        return self

    def __exit__(self, *exc: object) -> None:
        _Credential.closed = True


class _Identity:
    """azure.identity as the poll uses it: DefaultAzureCredential, nothing else."""

    DefaultAzureCredential = _Credential


@pytest.fixture
def graph(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Seen]]:
    """Resource Graph on a local HTTPS server, the SDK's default chain standing in."""
    import functools

    import gpuopt.providers.azure.eviction as ev

    cert, key = write_self_signed(tmp_path)
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(cert))
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("AZURE_SUBSCRIPTION_ID", SUB)
    monkeypatch.setattr(ev, "azure_identity", _Identity)
    with serve(lambda _req, _base: Reply(body=ROWS), cert, key) as (base, seen):
        monkeypatch.setattr(ev, "resource_graph_post",
                            functools.partial(ev.resource_graph_post, base_url=base))
        yield seen


@contextmanager
def _recorded_policy(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Any]]:
    import gpuopt.policies.spot.live as live
    from gpuopt.policies.spot.registry import get_policy

    seen: list[Any] = []
    inner = get_policy("auto")

    class Recorded:
        name = "auto"

        def decide(self, obs: Any) -> Any:
            seen.append(obs)
            return inner.decide(obs)

    monkeypatch.setattr(live, "get_policy", lambda _name: Recorded())
    yield seen


def test_the_daemons_poll_reaches_the_spot_policys_history(
        store: Store, graph: list[Seen], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    from gpuopt.orchestrator.config.model import Settings
    from gpuopt.orchestrator.reconcile.placement_inputs import (
        decide_placement,
        load_tick_inputs,
    )
    from gpuopt.orchestrator.simulate import daemon_engine as eng
    from gpuopt.orchestrator.store.jobs_repo import find_job
    from gpuopt.policies.spot.replay import Scenario

    settings = Settings.model_validate({
        "clouds": {"enabled": ["azure"]}, "spot": {"signals": True},
        "daemon": {"reconcile_interval": timedelta(seconds=300)},
        "placement": {"spot_policy": "auto", "deadline_at_p90": False}})
    tasks = DaemonTasks(store, settings, DaemonHealth("n"), lambda: True, lambda: NOW)
    with caplog.at_level("DEBUG"):
        tasks.poll_eviction()
    assert len(graph) == 1 and graph[0].headers["Authorization"] == f"Bearer {TOKEN}"
    assert _Credential.closed
    assert TOKEN not in caplog.text and SUB not in caplog.text
    assert _stored(store) == [Observed(NOW, ObservationKind.EVICTION_RATE, 10)]

    # a spot: auto job with a deadline, submitted at NOW, decided 20 minutes later
    monkeypatch.setattr(eng, "CLOUD", "azure")
    monkeypatch.setattr(eng, "GPU", "V100")
    sc = Scenario(traces=((0,) * 48,), gap_s=300.0, task_s=4 * 3600.0,
                  deadline_s=8 * 3600.0, restart_overhead_s=360.0,
                  spot_prices=(Decimal("0.9180"),), on_demand_price=Decimal("3.0600"))
    text, spec = eng.solve_job(sc, _offers(NOW), tmp_path)
    job_id = eng._submit(store, text, spec, settings, tmp_path)
    with store.session() as session:
        job = find_job(session, job_id)
    now = eng.START + timedelta(minutes=20)
    with _recorded_policy(monkeypatch) as seen:
        decide_placement(store, spec, job, [], settings, load_tick_inputs(store, settings, now),
                         0)
    history = seen[0].history
    assert len(history.locations) == 1
    # read at NOW, aged to the end of the tick holding ``now`` (ticks of 300 s from the
    # submit): 25 minutes; bucket 10-15 % per hour
    assert history.signals_of(0).eviction_rate == Reading(0.875, 25 * 60.0)
