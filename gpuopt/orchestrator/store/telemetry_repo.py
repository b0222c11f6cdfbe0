"""Reading and writing attempt telemetry and calibration records."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import delete, select
from sqlmodel import Session, col

from gpuopt.jobs.estimate.calibration import CalibrationRecord
from gpuopt.jobs.telemetry.summary import TelemetrySummary, summary_from_json
from gpuopt.orchestrator.store.telemetry_tables import AttemptTelemetryRow, CalibrationRow


def save_telemetry(session: Session, attempt_id: int, job_id: str, t: TelemetrySummary,
                   now: datetime) -> bool:
    """Insert or replace the attempt's summary; False when the stored one is the same."""
    row = session.execute(select(AttemptTelemetryRow).where(
        col(AttemptTelemetryRow.attempt_id) == attempt_id)).scalars().first()
    values: dict[str, Any] = dict(
        samples=t.samples, seconds=t.seconds, gpus=t.gpus,
        peak_memory_mib_json=json.dumps(list(t.peak_memory_mib)),
        memory_total_mib_json=json.dumps(list(t.memory_total_mib)),
        max_peak_memory_mib=max(t.peak_memory_mib),
        mean_utilization_pct=t.mean_utilization_pct,
        median_utilization_pct=t.median_utilization_pct,
        energy_wh=t.energy_wh, tokens=t.tokens, tokens_per_second=t.tokens_per_second,
        tokens_processed=t.tokens_processed,
        series_json=json.dumps([list(p) for p in t.series]),
    )
    if row is None:
        session.add(AttemptTelemetryRow(attempt_id=attempt_id, job_id=job_id, updated_at=now,
                                        **values))
        return True
    if row.samples == t.samples and row.seconds == t.seconds:
        return False
    for key, value in values.items():
        setattr(row, key, value)
    row.updated_at = now
    session.add(row)
    return True


def summary_of_row(row: AttemptTelemetryRow) -> TelemetrySummary | None:
    return summary_from_json({
        "samples": row.samples, "seconds": row.seconds,
        "peak_memory_mib": json.loads(row.peak_memory_mib_json),
        "memory_total_mib": json.loads(row.memory_total_mib_json),
        "mean_utilization_pct": row.mean_utilization_pct,
        "median_utilization_pct": row.median_utilization_pct,
        "energy_wh": row.energy_wh, "tokens": row.tokens,
        "tokens_per_second": row.tokens_per_second,
        "tokens_processed": row.tokens_processed,
        "series": json.loads(row.series_json),
    })


def telemetry_of(session: Session, attempt_ids: Iterable[int]) -> dict[int, TelemetrySummary]:
    """attempt id -> its stored summary (attempts without one are absent)."""
    ids = list(attempt_ids)
    if not ids:
        return {}
    out: dict[int, TelemetrySummary] = {}
    for row in session.execute(select(AttemptTelemetryRow).where(
            col(AttemptTelemetryRow.attempt_id).in_(ids))).scalars():
        summary = summary_of_row(row)
        if summary is not None:
            out[row.attempt_id] = summary
    return out


def _record(row: CalibrationRow) -> CalibrationRecord:
    return CalibrationRecord(
        fingerprint=row.fingerprint, model=row.model, workload_type=row.workload_type,
        method=row.method, precision=row.precision, batch_size=row.batch_size,
        sequence_length=row.sequence_length, framework=row.framework, gpu=row.gpu,
        gpu_count=row.gpu_count, peak_memory_mib=row.peak_memory_mib,
        tokens_per_second=row.tokens_per_second)


def add_calibration(session: Session, record: CalibrationRecord, measured_at: datetime,
                    attempt_id: int | None = None, origin: str = "measured") -> bool:
    """Store one record; an attempt gives at most one (False when it already did)."""
    if attempt_id is not None and session.execute(select(col(CalibrationRow.id)).where(
            col(CalibrationRow.attempt_id) == attempt_id)).first() is not None:
        return False
    session.add(CalibrationRow(attempt_id=attempt_id, measured_at=measured_at, origin=origin,
                               **record.to_json()))  # type: ignore[arg-type]
    return True


def calibration_records(session: Session, fingerprint: str | None = None,
                        ) -> list[tuple[CalibrationRecord, datetime, str]]:
    """(record, measured at, origin), oldest first; only one model's with ``fingerprint``."""
    query = select(CalibrationRow).order_by(col(CalibrationRow.id))
    if fingerprint is not None:
        query = query.where(col(CalibrationRow.fingerprint) == fingerprint)
    return [(_record(r), r.measured_at, r.origin) for r in session.execute(query).scalars()]


def add_calibrations(session: Session, records: Sequence[tuple[CalibrationRecord, datetime]],
                     origin: str) -> int:
    for record, at in records:
        add_calibration(session, record, at, origin=origin)
    return len(records)


def clear_calibration(session: Session) -> int:
    result = session.execute(delete(CalibrationRow))
    return int(getattr(result, "rowcount", 0) or 0)


def telemetry_by_attempt(session: Session, job_ids: Iterable[str],
                         ) -> dict[tuple[str, int], TelemetrySummary]:
    """(job id, attempt number) -> stored summary, for these jobs' attempts."""
    from gpuopt.orchestrator.store.jobs_tables import AttemptRow

    ids = sorted(set(job_ids))
    if not ids:
        return {}
    out: dict[tuple[str, int], TelemetrySummary] = {}
    rows = session.execute(
        select(AttemptTelemetryRow, col(AttemptRow.number))
        .join(AttemptRow, col(AttemptRow.id) == col(AttemptTelemetryRow.attempt_id))
        .where(col(AttemptTelemetryRow.job_id).in_(ids)))
    for row, number in rows:
        summary = summary_of_row(row)
        if summary is not None:
            out[(row.job_id, number)] = summary
    return out
