"""attempt_telemetry and calibration_records on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import sqlalchemy as sa

from gpuopt.jobs.estimate.calibration import CalibrationRecord
from gpuopt.jobs.telemetry.summary import TelemetrySummary

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
SUMMARY = TelemetrySummary(
    samples=3, seconds=30.0, peak_memory_mib=(70_000, 71_000), memory_total_mib=(81_559,) * 2,
    mean_utilization_pct=88.5, median_utilization_pct=90.0, energy_wh=12.5,
    tokens=3_000_000_000, tokens_per_second=5_000.0, tokens_processed=150_000,
    series=((0.0, 85.0, 70_000.0, 600.0), (15.0, 92.0, 71_000.0, 610.0)))
RECORD = CalibrationRecord(
    fingerprint="abc", model="llama-2-7b", workload_type="finetune", method="lora",
    precision="bf16", batch_size=4, sequence_length=2048, framework="hf", gpu="H100",
    gpu_count=2, peak_memory_mib=71_000, tokens_per_second=5_000.0)


def _job_with_attempt(store):  # type: ignore[no-untyped-def]
    from gpuopt.orchestrator.store.jobs_tables import AttemptRow, JobRow

    with store.transaction() as session:
        session.add(JobRow(id="j1", name="n", spec_yaml="", submitted_at=NOW, plan_json="{}",
                           executor="local", updated_at=NOW))
        session.flush()
        row = AttemptRow(job_id="j1", number=1, cluster_name="gpuopt-j1-1", cloud="local",
                         market="on-demand", price_per_hour_micros=0, created_at=NOW,
                         started_at=NOW)
        session.add(row)
        session.flush()
        return row.id


def test_summary_is_stored_replaced_and_read_back(db_url: str) -> None:
    from gpuopt.orchestrator.store import open_store
    from gpuopt.orchestrator.store.telemetry_repo import (
        save_telemetry,
        telemetry_by_attempt,
        telemetry_of,
    )

    store = open_store(db_url)
    try:
        attempt_id = _job_with_attempt(store)
        with store.transaction() as session:
            assert save_telemetry(session, attempt_id, "j1", SUMMARY, NOW)
        with store.transaction() as session:
            assert not save_telemetry(session, attempt_id, "j1", SUMMARY, NOW)  # unchanged
            newer = TelemetrySummary(samples=4, seconds=45.0, peak_memory_mib=(72_000, 71_000))
            assert save_telemetry(session, attempt_id, "j1", newer, NOW + timedelta(seconds=15))
        with store.session() as session:
            assert telemetry_of(session, [attempt_id]) == {attempt_id: newer}
        with store.transaction() as session:
            save_telemetry(session, attempt_id, "j1", SUMMARY, NOW)
        with store.session() as session:
            assert telemetry_of(session, [attempt_id]) == {attempt_id: SUMMARY}
            assert telemetry_by_attempt(session, ["j1"]) == {("j1", 1): SUMMARY}
            assert telemetry_of(session, []) == {}
    finally:
        store.close()


def test_calibration_records_once_per_attempt_and_clear(db_url: str) -> None:
    from gpuopt.orchestrator.store import open_store
    from gpuopt.orchestrator.store.telemetry_repo import (
        add_calibration,
        add_calibrations,
        calibration_records,
        clear_calibration,
    )

    store = open_store(db_url)
    try:
        attempt_id = _job_with_attempt(store)
        with store.transaction() as session:
            assert add_calibration(session, RECORD, NOW, attempt_id=attempt_id)
            assert not add_calibration(session, RECORD, NOW, attempt_id=attempt_id)
            add_calibrations(session, [(RECORD, NOW), (RECORD, NOW)], origin="imported")
        with store.session() as session:
            rows = calibration_records(session)
            assert [origin for _, _, origin in rows] == ["measured", "imported", "imported"]
            assert all(r == RECORD and at == NOW for r, at, _ in rows)
            assert calibration_records(session, "other") == []
        # a record outlives its job
        with store.transaction() as session:
            session.execute(sa.text("DELETE FROM jobs"))
        with store.transaction() as session:
            assert clear_calibration(session) == 3
        with store.session() as session:
            assert calibration_records(session) == []
    finally:
        store.close()
