"""A multi-node attempt in the store (SQLite and PostgreSQL): its price is of all its
nodes, its GPU-hours count every node's GPUs, and the hazard gpuopt observes is per node
(one preemption over N x the hours held)."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

from gpuopt.core.places import Place
from tests.orchestrator.reconcile.test_claim_and_ledger import T0, _attempt, _job


def test_nodes_in_the_ledger_and_the_observed_hazard(db_url: str) -> None:
    from gpuopt.orchestrator.store import open_store
    from gpuopt.orchestrator.store.ledger_repo import load_report_ledger, observed_preemptions

    h = timedelta(hours=1)
    store = open_store(db_url)
    with store.transaction() as s:
        s.add(_job("multi"))
        s.flush()
        two = _attempt("multi", 1, T0, T0 + 4 * h, price=60_000_000)  # 2 x $30/h
        two.num_nodes, two.gpu_count = 2, 8
        one = _attempt("multi", 2, T0 + 4 * h, T0 + 6 * h, reason="succeeded")
        s.add_all([two, one])
    with store.session() as s:
        attempts, _ = load_report_ledger(s, T0, T0 + 24 * h)
        observed = observed_preemptions(s, T0 + 24 * h)
    first = next(a for a in attempts if a.attempt == 1)
    assert first.gpu_count == 16  # both nodes' GPUs
    assert first.cost_between(T0, T0 + 24 * h) == Decimal("240")  # $60/h x 4 h
    # one preemption in 2 nodes x 4 h + 1 node x 2 h of spot held
    assert observed[Place("aws", "us-east-1")] == (1, 2 * 4 + 2)
    store.close()
