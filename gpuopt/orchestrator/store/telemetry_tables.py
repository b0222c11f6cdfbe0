"""Telemetry tables: ``attempt_telemetry`` (what the GPU sampler measured during one
attempt, one row per attempt, replaced as newer summaries arrive) and
``calibration_records`` (one finished attempt's measured peak memory and throughput with
the configuration it ran, which ``estimate`` and ``plan`` use; imported ones too).

Lists (peak memory per GPU, the downsampled series) are JSON text: they are shown and
exported whole, never queried by element.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, Column, ForeignKey, Index, Text, UniqueConstraint
from sqlmodel import Field, SQLModel

from gpuopt.orchestrator.store.types import UTCDateTime


class AttemptTelemetryRow(SQLModel, table=True):
    __tablename__ = "attempt_telemetry"
    __table_args__ = (
        UniqueConstraint("attempt_id", name="uq_attempt_telemetry_attempt"),
        Index("ix_attempt_telemetry_job", "job_id"),
    )

    id: int | None = Field(default=None, primary_key=True)
    attempt_id: int = Field(
        sa_column=Column(ForeignKey("attempts.id", ondelete="CASCADE"), nullable=False)
    )
    job_id: str = Field(max_length=40)
    samples: int
    seconds: float
    gpus: int
    peak_memory_mib_json: str = Field(sa_type=Text)  # [per GPU]
    memory_total_mib_json: str = Field(sa_type=Text)  # [per GPU]
    max_peak_memory_mib: int
    mean_utilization_pct: float | None = None
    median_utilization_pct: float | None = None
    energy_wh: float | None = None
    tokens: int | None = Field(default=None, sa_type=BigInteger)
    tokens_per_second: float | None = None
    tokens_processed: int | None = Field(default=None, sa_type=BigInteger)
    series_json: str = Field(sa_type=Text)  # [[s, util %, peak MiB, W], ...] (bounded)
    updated_at: datetime = Field(sa_type=UTCDateTime)


class CalibrationRow(SQLModel, table=True):
    __tablename__ = "calibration_records"
    __table_args__ = (
        UniqueConstraint("attempt_id", name="uq_calibration_attempt"),
        Index("ix_calibration_key", "fingerprint", "method", "precision", "framework"),
    )

    id: int | None = Field(default=None, primary_key=True)
    # the attempt measured here (NULL for imported records); no foreign key: a record
    # outlives the job it came from
    attempt_id: int | None = None
    fingerprint: str = Field(max_length=64)
    model: str = Field(max_length=128)
    workload_type: str = Field(max_length=16)
    method: str = Field(max_length=16)
    precision: str = Field(max_length=16)
    batch_size: int
    sequence_length: int
    framework: str = Field(max_length=32)
    gpu: str = Field(max_length=32)
    gpu_count: int
    peak_memory_mib: int | None = None  # the highest GPU's peak
    tokens_per_second: float | None = None
    measured_at: datetime = Field(sa_type=UTCDateTime)
    origin: str = Field(default="measured", max_length=16)  # measured | imported
