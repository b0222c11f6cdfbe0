"""The daemon's store pieces: compaction (pure plan + applied), sent weeks, node/poll rows."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

from hypothesis import given, settings
from hypothesis import strategies as st

from gpuopt.orchestrator.report.sender import Backoff
from gpuopt.orchestrator.report.weeks import IsoWeek
from gpuopt.orchestrator.store.compaction import Change, compact_price_history, plan_thinning
from tests.orchestrator.store.conftest import make_offer

T0 = datetime(2025, 1, 1, tzinfo=UTC)
H = timedelta(hours=1)
M = timedelta(minutes=1)


def test_plan_keeps_the_price_in_force_longest_per_bucket() -> None:
    rows = [
        Change(T0, T0 + 5 * M, 100),  # in force 10 min (until the next change)
        Change(T0 + 10 * M, T0 + 50 * M, 200),  # 40 min
        Change(T0 + 50 * M, T0 + 55 * M, 100),  # 10 min -> 100 held 20 min in total
        Change(T0 + H, T0 + H + 30 * M, 300),  # alone in the next bucket
    ]
    plan = plan_thinning(rows, H)
    assert plan.keep == [Change(T0, T0 + 55 * M, 200), Change(T0 + H, T0 + H + 30 * M, 300)]
    assert sorted(plan.delete) == [T0 + 10 * M, T0 + 50 * M]


def test_plan_merges_adjacent_buckets_with_one_price() -> None:
    rows = [Change(T0, T0 + 30 * M, 100), Change(T0 + 2 * H, T0 + 3 * H, 100)]
    plan = plan_thinning(rows, H)
    assert plan.keep == [Change(T0, T0 + 3 * H, 100)]
    assert plan.delete == [T0 + 2 * H]


def test_plan_leaves_sparse_history_alone() -> None:
    rows = [Change(T0, T0 + 30 * M, 100), Change(T0 + 2 * H, T0 + 3 * H, 150)]
    plan = plan_thinning(rows, H)
    assert plan.keep == rows and plan.delete == [] and not plan.changes_anything


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 7200), st.integers(0, 600), st.sampled_from([1, 2, 3])),
                min_size=1, max_size=40))
def test_plan_invariants(steps: list[tuple[int, int, int]]) -> None:
    rows, t = [], T0
    for gap, seen, price in steps:
        rows.append(Change(t, t + timedelta(seconds=min(seen, gap - 1 if gap > 1 else 0)), price))
        t += timedelta(seconds=gap)
    res = timedelta(minutes=30)
    plan = plan_thinning(rows, res)
    kept = [k.first_seen for k in plan.keep]
    # Kept rows are original rows (by key), the rest is deleted, nothing invented.
    assert sorted(kept + plan.delete) == [r.first_seen for r in rows]
    # At most one row per bucket, and never two neighbours with the same price.
    buckets = [int((k - T0) // res) for k in kept]
    assert len(buckets) == len(set(buckets))
    pairs = zip(plan.keep, plan.keep[1:], strict=False)
    assert all(a.price_micros != b.price_micros for a, b in pairs)
    # The covered span is unchanged, and every kept price was a real price.
    assert plan.keep[0].first_seen == rows[0].first_seen
    assert max(k.last_seen for k in plan.keep) == max(r.last_seen for r in rows)
    assert {k.price_micros for k in plan.keep} <= {r.price_micros for r in rows}


def test_compaction_thins_old_history_and_keeps_recent_and_current(store) -> None:  # type: ignore[no-untyped-def]
    from gpuopt.orchestrator.store.price_history import price_history, record_offers
    from gpuopt.providers.offer_filter import OfferFilter

    prices = ["1.00", "1.10", "1.00", "1.20", "1.30"]
    old = [T0 + i * 10 * M for i in range(len(prices))]  # all within one hour
    recent = T0 + 200 * H
    with store.transaction() as s:
        for at, p in zip(old, prices, strict=True):
            record_offers(s, [make_offer(p, at)])
        # within the screen's band of the series (a 2x jump would be held for a second poll)
        for i, p in enumerate(["1.40", "1.45", "1.40"]):
            record_offers(s, [make_offer(p, recent + i * M)])
    now = recent + 2 * H
    result = compact_price_history(store, now=now, after=24 * H, resolution=H)
    assert result.deleted == len(prices) - 1
    with store.session() as s:
        hist = price_history(s, OfferFilter())
    # One old row (the price in force longest in that hour: 1.00 held 20 min), then the
    # recent rows untouched, the current one last.
    assert [(h.first_seen, h.offer.price_per_hour) for h in hist] == [
        (old[0], Decimal("1.00")),
        (recent, Decimal("1.40")), (recent + M, Decimal("1.45")), (recent + 2 * M, Decimal("1.40")),
    ]
    assert hist[0].last_seen == old[-1]
    again = compact_price_history(store, now=now, after=24 * H, resolution=H)
    assert again.deleted == 0 and again.updated == 0


def test_compaction_never_touches_a_withdrawn_series_current_row(store) -> None:  # type: ignore[no-untyped-def]
    from gpuopt.orchestrator.store.price_history import latest_offers, record_offers

    with store.transaction() as s:
        record_offers(s, [make_offer("1.00", T0)])
        record_offers(s, [make_offer("1.50", T0 + 5 * M)])
    compact_price_history(store, now=T0 + 1000 * H, after=H, resolution=H)
    with store.session() as s:
        current = latest_offers(s, include_stale=True)
    assert [o.price_per_hour for o in current] == [Decimal("1.50")]


def test_store_sent_weeks_survive_reopen_and_never_unsend(db_url: str) -> None:
    from gpuopt.orchestrator.store import open_store
    from gpuopt.orchestrator.store.report_sends import StoreSentWeeks, pending_retries

    week = IsoWeek(2026, 48)
    first = open_store(db_url)
    sent = StoreSentWeeks(first, Backoff(first=timedelta(minutes=5)))
    assert not sent.was_sent(week, "everyone") and sent.failure_state(week, "everyone") is None
    sent.record_failure(week, "everyone", T0, "connection refused")
    sent.record_failure(week, "everyone", T0 + H, "connection refused again")
    state = sent.failure_state(week, "everyone")
    assert state is not None and state.count == 2 and state.last_at == T0 + H
    assert pending_retries(first) == [("2026-W48", "everyone", T0 + H + timedelta(minutes=10))]
    first.close()

    second = open_store(db_url)  # a restarted daemon
    again = StoreSentWeeks(second)
    assert again.failure_state(week, "everyone") is not None
    again.mark_sent(week, "everyone", T0 + 2 * H)
    again.mark_sent(week, "everyone", T0 + 3 * H)  # a second daemon / retried tick
    assert again.was_sent(week, "everyone") and again.failure_state(week, "everyone") is None
    assert not again.was_sent(week, "team:nlp") and not again.was_sent(week.next(), "everyone")
    assert pending_retries(second) == []
    with second.engine.connect() as conn:
        import sqlalchemy as sa

        rows = conn.execute(sa.text("SELECT week, scope, sent_at FROM report_sends")).all()
    assert len(rows) == 1
    second.close()


def test_node_heartbeats_and_poll_status(store) -> None:  # type: ignore[no-untyped-def]
    from gpuopt.orchestrator.store.daemon_state import (
        NodeInfo,
        heartbeat,
        list_nodes,
        list_polls,
        prune_nodes,
        record_poll,
    )

    node = NodeInfo("h:1:x", "h", 1, T0, "standby", None, T0, "127.0.0.1:9464")
    heartbeat(store, node, role="standby", leader_since=None, at=T0)
    heartbeat(store, node, role="leader", leader_since=T0 + M, at=T0 + M)
    [row] = list_nodes(store)
    assert (row.role, row.leader_since, row.heartbeat_at) == ("leader", T0 + M, T0 + M)
    assert prune_nodes(store, T0) == 0 and prune_nodes(store, T0 + H) == 1

    record_poll(store, "aws", status="ok", error=None, at=T0)
    record_poll(store, "aws", status="error", error="boom", at=T0 + H)
    record_poll(store, "gcp", status="skipped", error="no credentials", at=T0)
    polls = {p.cloud: p for p in list_polls(store)}
    assert polls["aws"].last_ok_at == T0 and polls["aws"].last_status == "error"
    assert polls["aws"].last_try_at == T0 + H and polls["gcp"].last_ok_at is None
