"""What price polls record of spot availability (orchestrator.store.offer_listing), on
SQLite and PostgreSQL: offer_gone / offer_present through a sequence of polls, nothing
from a failed region or poll, each change once across two daemons, placement scores,
and the fold reading them."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
import sqlalchemy as sa
from sqlmodel import Session

from gpuopt.core.places import Place
from gpuopt.orchestrator.prices.poll import poll_prices
from gpuopt.orchestrator.store import Store, open_store
from gpuopt.orchestrator.store.availability import load_observations
from gpuopt.orchestrator.store.offer_listing import offer_observations
from gpuopt.orchestrator.store.price_history import latest_offers
from gpuopt.policies.spot.observed import ObservationKind, Observed, SpotPlace, fold_place
from gpuopt.providers.base import FetchResult, ProviderError
from gpuopt.providers.offer import Market, Offer
from tests.orchestrator.store.conftest import make_offer

K = ObservationKind
T0 = datetime(2026, 11, 2, 8, 0, tzinfo=UTC)
POLL = timedelta(minutes=10)
EAST, WEST = "us-east-1", "us-west-2"
TYPE = "g5.xlarge"


def spot(zone: str, *, region: str = EAST, score: int | None = None) -> Offer:
    o = make_offer("0.40", T0, region=region, zone=zone, instance_type=TYPE,
                   market=Market.SPOT)
    return replace(o, placement_score=score)


def place(zone: str, region: str = EAST) -> SpotPlace:
    return SpotPlace(Place("aws", region, zone), TYPE)


ON_DEMAND = make_offer("1.006", T0, instance_type=TYPE)


class Listing:
    """An AWS-like adapter: this poll's spot offers, and the regions that answered."""

    cloud = "aws"

    def __init__(self, offers: Sequence[Offer], answered: Sequence[str] = (EAST, WEST),
                 error: Exception | None = None) -> None:
        self.offers, self.answered, self.error = tuple(offers), tuple(answered), error

    def check_credentials(self) -> None:
        pass

    def fetch(self, now: datetime, regions: Sequence[str] | None = None) -> FetchResult:
        if self.error is not None:
            raise self.error
        return FetchResult("aws", tuple(o.with_price(o.price_per_hour, now) for o in
                                        (ON_DEMAND, *self.offers)),
                           spot_scope=frozenset((r, TYPE) for r in self.answered))


def poll(store: Store, at: datetime, offers: Sequence[Offer], **kw: object) -> str:
    result = poll_prices(store, {"aws": Listing(offers, **kw)}, at)["aws"]  # type: ignore[arg-type]
    return result.status


def history(store: Store) -> list[tuple[str, str, datetime, int | None]]:
    """Every observation: (zone, kind, at, value), in time then zone order."""
    with store.session() as s:
        places = [place(z, r) for r in (EAST, WEST) for z in
                  (f"{r}a", f"{r}b", f"{r}c")]
        got = load_observations(s, places, T0 - POLL, with_state=False)
    return sorted(((p.place.zone or "", o.kind.value, o.at, o.value)
                   for p, obs in got.items() for o in obs), key=lambda r: (r[2], r[0]))


def test_offers_gone_and_back_through_a_sequence_of_polls(store: Store) -> None:
    a, b = spot("us-east-1a"), spot("us-east-1b")
    assert poll(store, T0, [a, b]) == "ok"  # first poll: nothing to compare with
    assert history(store) == []
    poll(store, T0 + POLL, [a])  # b no longer listed
    poll(store, T0 + 2 * POLL, [a])  # still not: not recorded again
    poll(store, T0 + 3 * POLL, [a, b])  # listed again
    poll(store, T0 + 4 * POLL, [a, b])  # nothing new
    poll(store, T0 + 5 * POLL, [b])  # a goes
    assert history(store) == [
        ("us-east-1b", "offer_gone", T0 + POLL, None),
        ("us-east-1b", "offer_present", T0 + 3 * POLL, None),
        ("us-east-1a", "offer_gone", T0 + 5 * POLL, None),
    ]
    # the prices themselves are stored as before (b's series has its history)
    with store.session() as s:
        assert {o.zone for o in latest_offers(s) if o.market is Market.SPOT} == {
            "us-east-1a", "us-east-1b"}


def test_a_failed_region_or_poll_never_makes_an_offer_gone(store: Store) -> None:
    a, b, w = spot("us-east-1a"), spot("us-east-1b"), spot("us-west-2a", region=WEST)
    poll(store, T0, [a, b, w])
    # us-east-1's spot prices failed: its offers are missing, but nothing is concluded
    poll(store, T0 + POLL, [w], answered=(WEST,))
    # the whole cloud failed (throttled past retries)
    assert poll(store, T0 + 2 * POLL, [], error=ProviderError("aws ec2: Throttling")) == "error"
    # us-east-1 answers again, without b: compared with the last poll that answered for
    # it (T0), so b is gone; a, unlisted only while us-east-1 failed, is not
    poll(store, T0 + 3 * POLL, [a, w])
    assert history(store) == [("us-east-1b", "offer_gone", T0 + 3 * POLL, None)]
    # a region left out of the poll (not configured this time) proves nothing either
    poll(store, T0 + 4 * POLL, [a], answered=(EAST,))
    assert history(store) == [("us-east-1b", "offer_gone", T0 + 3 * POLL, None)]


def test_two_daemons_polling_record_each_change_once(store: Store, db_url: str) -> None:
    other = open_store(db_url)  # a second daemon (or this one restarted) on the same store
    try:
        a, b = spot("us-east-1a"), spot("us-east-1b")
        poll(store, T0, [a, b])
        poll(other, T0 + POLL, [a])
        poll(store, T0 + 2 * POLL, [a])  # knows b is gone from the store, not from memory
        poll(other, T0 + 2 * POLL, [a])  # the same poll twice in one second
        poll(other, T0 + 3 * POLL, [a, b])
        poll(store, T0 + 4 * POLL, [a, b])
        # a late poll of a daemon whose clock or fetch lags: never compared backwards
        poll(store, T0 + 3 * POLL + timedelta(seconds=30), [b])
        assert history(store) == [
            ("us-east-1b", "offer_gone", T0 + POLL, None),
            ("us-east-1b", "offer_present", T0 + 3 * POLL, None),
        ]
    finally:
        other.close()


def test_placement_scores_are_recorded_per_place_and_the_fold_reads_them(
        store: Store) -> None:
    poll(store, T0, [spot("us-east-1a", score=9), spot("us-east-1b"),
                     spot("us-west-2a", region=WEST, score=3)])
    poll(store, T0 + POLL, [spot("us-east-1a", score=4)])
    assert history(store) == [
        ("us-east-1a", "placement_score", T0, 9),
        ("us-west-2a", "placement_score", T0, 3),
        ("us-east-1a", "placement_score", T0 + POLL, 4),
        ("us-east-1b", "offer_gone", T0 + POLL, None),
        ("us-west-2a", "offer_gone", T0 + POLL, None),
    ]
    # As policies.spot.observed documents: a score is no observation of availability
    # (nothing learned); an unlisted offer is False until it is listed again.
    start, tick = T0, POLL.total_seconds()
    with store.session() as s:
        got = load_observations(s, [place("us-east-1a"), place("us-east-1b")], start)
    assert fold_place(got[place("us-east-1a")], start, T0 + 3 * POLL, tick) == [None] * 4
    assert fold_place(got[place("us-east-1b")], start, T0 + 3 * POLL, tick) == [
        None, False, False, False]
    poll(store, T0 + 4 * POLL, [spot("us-east-1a"), spot("us-east-1b")])
    with store.session() as s:
        got = load_observations(s, [place("us-east-1b")], start)
    assert fold_place(got[place("us-east-1b")], start, T0 + 5 * POLL, tick) == [
        None, False, False, False, None, None]
    # a window starting after the offer went carries the unlisted state in
    with store.session() as s:
        got = load_observations(s, [place("us-east-1b")], T0 + 2 * POLL)
    assert fold_place(got[place("us-east-1b")], T0 + 2 * POLL, T0 + 5 * POLL, tick) == [
        False, False, None, None]


def test_a_recording_failure_is_logged_and_never_fails_the_poll(
        store: Store, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    from gpuopt.orchestrator.store import offer_listing

    a, b = spot("us-east-1a"), spot("us-east-1b")
    poll(store, T0, [a, b])

    def broken(session: Session, observations: object) -> int:
        # a real database error in the poll's own transaction (PostgreSQL aborts the
        # transaction on it: only the savepoint keeps the prices)
        session.connection().execute(sa.text("SELECT * FROM no_such_table"))
        return 0

    monkeypatch.setattr(offer_listing, "record_observations", broken)
    with caplog.at_level(logging.WARNING, logger="gpuopt.availability"):
        assert poll(store, T0 + POLL, [a]) == "ok"  # b gone: not recordable
    assert history(store) == []
    assert [r.message.split(":")[0] for r in caplog.records] == ["aws"]
    assert "1 offer observation(s) not recorded" in caplog.records[0].message
    with store.session() as s:  # the poll's prices were stored all the same
        assert {o.observed_at for o in latest_offers(s, include_stale=True)
                if o.zone == "us-east-1a"} == {T0 + POLL}


def test_offer_observations_is_a_pure_diff() -> None:
    a, b, c = place("us-east-1a"), place("us-east-1b"), place("us-east-1c")
    now = T0
    seen = offer_observations({a, b}, [spot("us-east-1a"), spot("us-east-1c", score=6)],
                              {b: K.OFFER_PRESENT, c: K.OFFER_GONE}, now)
    assert seen == [(b, Observed(now, K.OFFER_GONE)), (c, Observed(now, K.OFFER_PRESENT)),
                    (c, Observed(now, K.PLACEMENT_SCORE, 6))]
    # already recorded gone: not again; on-demand offers observe nothing
    assert offer_observations({b}, [ON_DEMAND], {b: K.OFFER_GONE}, now) == []
