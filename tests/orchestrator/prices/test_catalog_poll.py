"""SkyPilot's catalog files into the price history, beside the SDK polls (SQLite and
PostgreSQL): newer wins, both are kept; the daemon's poll job does the same."""

from __future__ import annotations

import os
import shutil
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import pytest

from gpuopt.orchestrator.prices.catalog_poll import poll_catalog
from gpuopt.orchestrator.store import Store, open_store
from gpuopt.orchestrator.store.price_history import latest_offers, price_history, record_offers
from gpuopt.providers.offer import Market
from gpuopt.providers.offer_filter import OfferFilter


@pytest.fixture
def store(db_url: str):  # type: ignore[no-untyped-def]
    s = open_store(db_url)
    yield s
    s.close()


RECORDED = Path(__file__).parents[2] / "providers" / "skypilot_catalog" / "catalog_v8"
MTIME = datetime(2026, 12, 1, 8, 0, tzinfo=UTC)


def _catalog(tmp_path: Path, mtime: datetime = MTIME) -> Path:
    root = tmp_path / "catalogs" / "v8"
    shutil.copytree(RECORDED, root)
    for f in root.glob("*/vms.csv"):
        os.utime(f, (mtime.timestamp(), mtime.timestamp()))
    return root


P5 = OfferFilter.build(cloud="aws", gpu="H100", region="us-east-1", market="on-demand")


def _p5_4x(store: Store) -> list[object]:
    with store.session() as s:
        return [o for o in latest_offers(s, P5) if o.instance_type == "p5.4xlarge"]


def test_every_cloud_file_is_stored_labelled_with_file_and_time(
        store: Store, tmp_path: Path) -> None:
    results, notes = poll_catalog(store, _catalog(tmp_path), MTIME + timedelta(hours=1))
    assert notes == [] and len(results) >= 8
    assert all(r.status == "ok" and r.new > 0 for r in results.values()), results
    with store.session() as s:
        offers = latest_offers(s)
    assert {o.cloud for o in offers} >= {"aws", "gcp", "lambda", "runpod", "vast", "nebius",
                                         "oci", "cudo"}
    assert {o.source for o in offers} == {"catalog vms.csv 2026-12-01 08:00"}
    assert {o.observed_at for o in offers} == {MTIME}
    # a second read of the same files changes nothing
    again, _ = poll_catalog(store, _catalog(tmp_path / "b"), MTIME + timedelta(hours=2))
    assert all(r.new == 0 and r.changed == 0 for r in again.values())


def test_newer_source_wins_and_both_stay_in_history(store: Store, tmp_path: Path) -> None:
    poll_catalog(store, _catalog(tmp_path), MTIME + timedelta(hours=1), ("aws",))
    [from_file] = _p5_4x(store)
    assert from_file.price_per_hour == Decimal("6.88")
    # an SDK poll, later than the file, prices the same place differently: it wins
    sdk_at = MTIME + timedelta(hours=3)
    live = replace(from_file, price_per_hour=Decimal("6.5"), observed_at=sdk_at,
                   source="api:aws")
    with store.transaction() as s:
        assert record_offers(s, [live], now=sdk_at).changed == 1
    # the same file read again (older than the SDK price): kept, not current
    older_file = _catalog(tmp_path / "again", MTIME - timedelta(days=1))
    results, _ = poll_catalog(store, older_file, sdk_at + timedelta(minutes=10), ("aws",))
    assert results["aws"].status == "ok" and results["aws"].rejected == 0
    [current] = _p5_4x(store)
    assert (current.price_per_hour, current.source) == (Decimal("6.5"), "api:aws")
    with store.session() as s:
        points = [p for p in price_history(s, P5) if p.offer.instance_type == "p5.4xlarge"]
    assert [(p.first_seen, p.offer.price_per_hour) for p in points] == [
        (MTIME - timedelta(days=1), Decimal("6.88")), (MTIME, Decimal("6.88")),
        (sdk_at, Decimal("6.5"))]
    # a newer file wins over the SDK price in turn
    newer = _catalog(tmp_path / "newer", sdk_at + timedelta(hours=1))
    poll_catalog(store, newer, sdk_at + timedelta(hours=2), ("aws",))
    [current] = _p5_4x(store)
    assert current.price_per_hour == Decimal("6.88") and current.source.startswith("catalog")


def test_a_refused_file_stores_nothing_of_it_and_the_others_go_in(
        store: Store, tmp_path: Path) -> None:
    root = _catalog(tmp_path)
    bad = root / "oci" / "vms.csv"
    bad.write_text(bad.read_text(encoding="utf-8").replace("InstanceType,", "Shape,", 1),
                   encoding="utf-8")
    results, _ = poll_catalog(store, root, MTIME + timedelta(hours=1))
    assert results["oci"].status == "error"
    assert "oci/vms.csv: line 1: missing column 'InstanceType'" in str(results["oci"].error)
    assert results["nebius"].status == "ok"
    with store.session() as s:
        assert not latest_offers(s, OfferFilter.build(cloud="oci"))
        assert latest_offers(s, OfferFilter.build(cloud="nebius", market="spot"))


def test_the_daemon_poll_job_reads_the_catalog(store: Store, tmp_path: Path,
                                               db_url: str) -> None:
    from gpuopt.orchestrator.config import load_config
    from gpuopt.orchestrator.daemon.health import DaemonHealth
    from gpuopt.orchestrator.daemon.schedule import make_scheduler, register_jobs
    from gpuopt.orchestrator.daemon.tasks import DaemonTasks

    root = _catalog(tmp_path)
    settings = load_config(env={"GPUOPT_DATABASE_URL": db_url,
                                "GPUOPT_PRICES_SOURCES": '["sdk", "skypilot-catalog"]',
                                "GPUOPT_PRICES_CATALOG_DIR": str(root)})
    assert settings.prices.from_catalog and settings.prices.from_sdk
    health = DaemonHealth(node_id="test")
    tasks = DaemonTasks(store, settings, health, is_leader=lambda: True,
                        clock=lambda: MTIME + timedelta(hours=1))
    scheduler = make_scheduler(4)
    ids = register_jobs(scheduler, tasks, settings, ("aws",), MTIME)
    scheduler.start(paused=True)  # runs nothing by itself
    try:
        assert ids[:2] == ["poll-aws", "poll-skypilot-catalog"]
        job = scheduler.get_job("poll-skypilot-catalog")
        job.func(*job.args)  # what the scheduler runs on its poll schedule
    finally:
        scheduler.shutdown(wait=False)
    with store.session() as s:
        clouds = {o.cloud for o in latest_offers(s)}
    assert {"aws", "nebius", "oci"} <= clouds
    only_catalog = load_config(env={"GPUOPT_PRICES_SOURCES": '["skypilot-catalog"]'})
    scheduler = make_scheduler(4)
    ids = register_jobs(scheduler, tasks, only_catalog, ("aws",), MTIME)
    assert "poll-aws" not in ids and "poll-skypilot-catalog" in ids


def test_spot_zones_are_kept_apart(store: Store, tmp_path: Path) -> None:
    poll_catalog(store, _catalog(tmp_path), MTIME + timedelta(hours=1), ("aws",))
    with store.session() as s:
        spot = latest_offers(s, OfferFilter.build(cloud="aws", market="spot",
                                                  region="us-east-1"))
    assert {(o.zone, o.price_per_hour) for o in spot} == {
        ("use1-az2", Decimal("19.2531")), ("use1-az3", Decimal("21.1543"))}
    assert all(o.market is Market.SPOT for o in spot)


@pytest.mark.parametrize("sources", ['["sdk", "sdk"]', '["nope"]', "[]"])
def test_bad_sources_are_refused(sources: str) -> None:
    from gpuopt.orchestrator.config import load_config
    from gpuopt.orchestrator.config.load import ConfigError

    with pytest.raises(ConfigError, match="GPUOPT_PRICES_SOURCES"):
        load_config(env={"GPUOPT_PRICES_SOURCES": sources})


def test_the_daemon_job_reports_a_missing_directory_without_a_traceback(
        store: Store, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    from gpuopt.orchestrator.config import load_config
    from gpuopt.orchestrator.daemon.health import DaemonHealth
    from gpuopt.orchestrator.daemon.tasks import DaemonTasks

    settings = load_config(env={"GPUOPT_PRICES_SOURCES": '["skypilot-catalog"]',
                                "GPUOPT_PRICES_CATALOG_DIR": str(tmp_path / "nowhere")})
    health = DaemonHealth(node_id="test")
    DaemonTasks(store, settings, health, is_leader=lambda: True).poll_catalog()
    outcome = health.outcomes["poll-skypilot-catalog"]
    assert not outcome.ok and "nowhere: not a directory" in str(outcome.error)
    assert "Traceback" not in caplog.text
