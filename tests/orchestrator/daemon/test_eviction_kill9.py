"""A real kill -9 of a process in the middle of the eviction-rate poll (SQLite): the poll
(tests/orchestrator/daemon/eviction_launcher.py) pauses where its readings and its
``poll_status`` row are written but not committed, this process SIGKILLs it there, and the
store holds neither, then the next poll, in a fresh process, records the whole poll."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from gpuopt.core.places import Place
from gpuopt.orchestrator.store import Store, open_store
from gpuopt.orchestrator.store.availability import load_observations
from gpuopt.orchestrator.store.daemon_state import list_polls
from gpuopt.policies.spot.observed import ObservationKind, Observed, SpotPlace
from gpuopt.policies.spot.signals import EVICTION_BUCKET_VALUE
from tests.orchestrator.daemon.eviction_launcher import PLACES, SIZE
from tests.orchestrator.reconcile.probe_launcher import PAUSE_ENV, kill_9_when_paused

REPO_ROOT = Path(__file__).resolve().parents[3]
NOW = datetime(2026, 1, 5, 0, 0, tzinfo=UTC)
SPOTS = [SpotPlace(Place("azure", loc, None), SIZE) for loc in PLACES]
POINT = "eviction-recorded"


def _priced(store: Store) -> None:
    """A current spot price for SIZE in each of PLACES: what the poll asks about."""
    from gpuopt.orchestrator.store.price_history import record_offers
    from gpuopt.providers.hardware import GPUS
    from gpuopt.providers.offer import Market, Offer

    at = NOW - timedelta(minutes=5)
    offers = [Offer(cloud="azure", region=loc, zone=None, instance_type=SIZE, gpu="V100",
                    gpu_count=1, gpu_memory_gib=GPUS["V100"].memory_gib, vcpus=6, ram_gib=112,
                    market=Market.SPOT, price_per_hour=Decimal("0.9180"), observed_at=at,
                    source="api:azure") for loc in PLACES]
    with store.transaction() as session:
        record_offers(session, offers, now=at)


def _poll(db_url: str, tmp: Path, at: datetime,
          pause_at: str | None = None) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if k not in (PAUSE_ENV, "GPUOPT_CRASH_AT")}
    if pause_at:
        env[PAUSE_ENV] = pause_at
    return subprocess.Popen(
        [sys.executable, "-m", "tests.orchestrator.daemon.eviction_launcher", db_url,
         str(tmp), at.isoformat()],
        cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _readings(store: Store) -> dict[str, list[float]]:
    with store.session() as session:
        got = load_observations(session, SPOTS, NOW - timedelta(days=1), with_state=False)
    return {p.place.region: [o.value for o in obs if o.kind == ObservationKind.EVICTION_RATE]
            for p, obs in got.items()}


def _polls(store: Store) -> list[tuple[Any, ...]]:
    return [(p.cloud, p.last_status, p.last_try_at, p.last_ok_at) for p in list_polls(store)]


@pytest.mark.timeout(120)
def test_kill_9_in_the_poll_leaves_all_or_nothing_and_the_next_poll_succeeds(
        tmp_path: Path) -> None:
    db_url = f"sqlite:///{tmp_path / 'gpuopt.db'}"
    store = open_store(db_url)
    _priced(store)
    first = _poll(db_url, tmp_path, NOW, pause_at=POINT)
    try:
        kill_9_when_paused(first, tmp_path / f"paused-{POINT}", POINT)
        # the readings were written (the pause is after them), and none was committed;
        # nor the poll's row: no half-written poll
        assert _readings(store) == {loc: [] for loc in PLACES}
        assert _polls(store) == []

        later = NOW + timedelta(minutes=10)
        second = _poll(db_url, tmp_path, later)
        out, err = second.communicate(timeout=60)
        assert second.returncode == 0, err
        assert out.split() == ["ok", str(len(PLACES))]
    finally:
        for p in (first, *([second] if "second" in locals() else [])):
            if p.poll() is None:
                p.kill()
    assert _readings(store) == {loc: [EVICTION_BUCKET_VALUE[b]] for loc, b in PLACES.items()}
    with store.session() as session:
        got = load_observations(session, SPOTS, NOW - timedelta(days=1), with_state=False)
    assert got[SPOTS[0]] == [Observed(later, ObservationKind.EVICTION_RATE, 10)]
    assert _polls(store) == [("azure-eviction", "ok", later, later)]
    with store.engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA integrity_check").scalar() == "ok"
    store.close()
