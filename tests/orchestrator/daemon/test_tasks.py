"""The daemon's tasks in-process: leadership gate, poll bookkeeping per cloud, failure
isolation, compaction through the task."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from gpuopt.orchestrator.config import load_config
from gpuopt.orchestrator.daemon.health import DaemonHealth
from gpuopt.orchestrator.daemon.tasks import DaemonTasks
from gpuopt.providers.base import CredentialsMissing, FetchResult
from tests.orchestrator.store.conftest import make_offer

NOW = datetime(2026, 11, 30, 9, tzinfo=UTC)


class FakeProvider:
    def __init__(self, cloud: str, outcome: str) -> None:
        self.cloud = cloud
        self.outcome = outcome

    def check_credentials(self) -> None:
        if self.outcome == "no-credentials":
            raise CredentialsMissing(f"{self.cloud}: no credentials")

    def fetch(self, now: datetime, regions: Sequence[str] | None = None) -> FetchResult:
        if self.outcome == "boom":
            raise RuntimeError("503 from the pricing API")
        return FetchResult(self.cloud, (make_offer("1.20", now, cloud=self.cloud),))


@pytest.fixture
def outcomes(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    table = {"aws": "ok", "gcp": "no-credentials", "azure": "boom"}

    def load(clouds: Sequence[str]) -> dict[str, object]:
        return {c: FakeProvider(c, table[c]) for c in clouds}

    monkeypatch.setattr("gpuopt.orchestrator.prices.poll.load_providers", load)
    return table


def make_tasks(store, leader: list[bool]) -> tuple[DaemonTasks, DaemonHealth]:  # type: ignore[no-untyped-def]
    runtime = DaemonHealth("test")
    settings = load_config(env={})
    return DaemonTasks(store, settings, runtime, lambda: leader[0], lambda: NOW), runtime


def test_polls_record_status_per_cloud_and_isolate_failures(store, outcomes) -> None:  # type: ignore[no-untyped-def]
    from gpuopt.orchestrator.store.daemon_state import list_polls
    from gpuopt.orchestrator.store.price_history import latest_offers

    tasks, runtime = make_tasks(store, [True])
    for cloud in ("aws", "gcp", "azure"):
        tasks.poll(cloud)
    polls = {p.cloud: p for p in list_polls(store)}
    assert polls["aws"].last_status == "ok" and polls["aws"].last_ok_at == NOW
    assert polls["gcp"].last_status == "skipped" and polls["gcp"].last_ok_at is None
    assert polls["azure"].last_status == "error" and "503" in (polls["azure"].last_error or "")
    with store.session() as s:
        assert [o.cloud for o in latest_offers(s)] == ["aws"]
    _role, _since, _outcomes, runs, failures = runtime.snapshot()
    # A cloud's error is recorded and counted as a failed task (/metrics); no
    # credentials is a skip, not a failure.
    assert runs == {"poll-aws": 1, "poll-gcp": 1, "poll-azure": 1}
    assert failures == {"poll-azure": 1}


def test_nothing_runs_unless_leader(store, outcomes) -> None:  # type: ignore[no-untyped-def]
    from gpuopt.orchestrator.store.daemon_state import list_polls

    leader = [False]
    tasks, runtime = make_tasks(store, leader)
    tasks.poll("aws")
    tasks.compact()
    tasks.report_tick()
    assert list_polls(store) == [] and runtime.snapshot()[3] == {}
    leader[0] = True
    tasks.poll("aws")
    assert [p.cloud for p in list_polls(store)] == ["aws"]


def test_a_failing_step_is_counted_and_never_escapes(store, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    def broken(*_a: object, **_k: object) -> None:
        raise RuntimeError("disk full")

    monkeypatch.setattr("gpuopt.orchestrator.store.compaction.compact_price_history", broken)
    tasks, runtime = make_tasks(store, [True])
    tasks.compact()  # does not raise
    _r, _s, outcomes, runs, failures = runtime.snapshot()
    assert runs["compaction"] == 1 and failures["compaction"] == 1
    assert "disk full" in (outcomes["compaction"].error or "")
    assert runtime.wait_idle(0.1)


def test_compaction_task_uses_the_configured_age_and_resolution(store) -> None:  # type: ignore[no-untyped-def]
    from gpuopt.orchestrator.store.price_history import price_history, record_offers
    from gpuopt.providers.offer_filter import OfferFilter

    old = NOW - timedelta(days=200)
    with store.transaction() as s:
        for i, p in enumerate(["1.00", "1.10", "1.00", "1.10", "1.05"]):
            record_offers(s, [make_offer(p, old + timedelta(minutes=5 * i))])
        record_offers(s, [make_offer("1.50", NOW - timedelta(days=1))])
    tasks, _rt = make_tasks(store, [True])  # defaults: after 90d, resolution 1h
    tasks.compact()
    with store.session() as s:
        hist = price_history(s, OfferFilter())
    assert len(hist) == 2 and hist[-1].offer.price_per_hour == Decimal("1.5")


def test_two_daemons_polling_in_turn_record_an_offer_gone_once(store, db_url,  # type: ignore[no-untyped-def]
                                                               monkeypatch) -> None:
    """Leadership moves from one daemon to the other (one restarted, or taking over): what
    the price poll records of spot is read from the store, so each change is recorded once."""

    from gpuopt.core.places import Place
    from gpuopt.orchestrator.store import open_store
    from gpuopt.orchestrator.store.availability import load_observations
    from gpuopt.policies.spot.observed import ObservationKind, SpotPlace
    from gpuopt.providers.offer import Market

    zones = {"now": ["us-east-1a", "us-east-1b"]}

    class Listing:
        cloud = "aws"

        def check_credentials(self) -> None:
            pass

        def fetch(self, now: datetime, regions: Sequence[str] | None = None) -> FetchResult:
            offers = tuple(make_offer("0.40", now, zone=z, market=Market.SPOT)
                           for z in zones["now"])
            return FetchResult("aws", offers,
                               spot_scope=frozenset({("us-east-1", "g5.xlarge")}))

    monkeypatch.setattr("gpuopt.orchestrator.prices.poll.load_providers",
                        lambda clouds: {c: Listing() for c in clouds})
    other = open_store(db_url)
    clock = [NOW]
    settings = load_config(env={})
    leader = ["first"]
    first = DaemonTasks(store, settings, DaemonHealth("a"), lambda: leader[0] == "first",
                        lambda: clock[0])
    second = DaemonTasks(other, settings, DaemonHealth("b"), lambda: leader[0] == "second",
                         lambda: clock[0])
    try:
        for minute, who, listed in [(0, "first", ["us-east-1a", "us-east-1b"]),
                                    (10, "first", ["us-east-1a"]),
                                    (20, "second", ["us-east-1a"]),
                                    (30, "first", ["us-east-1a"]),
                                    (40, "second", ["us-east-1a", "us-east-1b"])]:
            clock[0], leader[0], zones["now"] = NOW + timedelta(minutes=minute), who, listed
            first.poll("aws")
            second.poll("aws")  # only the leader polls
        b = SpotPlace(Place("aws", "us-east-1", "us-east-1b"), "g5.xlarge")
        with store.session() as s:
            seen = load_observations(s, [b], NOW, with_state=False)[b]
        assert [(o.kind, o.at) for o in seen] == [
            (ObservationKind.OFFER_GONE, NOW + timedelta(minutes=10)),
            (ObservationKind.OFFER_PRESENT, NOW + timedelta(minutes=40))]
    finally:
        other.close()
