"""telemetry: attempt_telemetry (GPU sampler summaries per attempt) and
calibration_records (measured peak memory and throughput by configuration)

Revision ID: 0008_telemetry
Revises: 0007_availability
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from gpuopt.orchestrator.store.types import UTCDateTime

revision = "0008_telemetry"
down_revision = "0007_availability"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "attempt_telemetry",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("attempt_id", sa.Integer(),
                  sa.ForeignKey("attempts.id", ondelete="CASCADE"), nullable=False),
        sa.Column("job_id", sa.String(40), nullable=False),
        sa.Column("samples", sa.Integer(), nullable=False),
        sa.Column("seconds", sa.Float(), nullable=False),
        sa.Column("gpus", sa.Integer(), nullable=False),
        sa.Column("peak_memory_mib_json", sa.Text(), nullable=False),
        sa.Column("memory_total_mib_json", sa.Text(), nullable=False),
        sa.Column("max_peak_memory_mib", sa.Integer(), nullable=False),
        sa.Column("mean_utilization_pct", sa.Float(), nullable=True),
        sa.Column("median_utilization_pct", sa.Float(), nullable=True),
        sa.Column("energy_wh", sa.Float(), nullable=True),
        sa.Column("tokens", sa.BigInteger(), nullable=True),
        sa.Column("tokens_per_second", sa.Float(), nullable=True),
        sa.Column("tokens_processed", sa.BigInteger(), nullable=True),
        sa.Column("series_json", sa.Text(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
        sa.UniqueConstraint("attempt_id", name="uq_attempt_telemetry_attempt"),
    )
    op.create_index("ix_attempt_telemetry_job", "attempt_telemetry", ["job_id"])
    op.create_table(
        "calibration_records",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("attempt_id", sa.Integer(), nullable=True),
        sa.Column("fingerprint", sa.String(64), nullable=False),
        sa.Column("model", sa.String(128), nullable=False),
        sa.Column("workload_type", sa.String(16), nullable=False),
        sa.Column("method", sa.String(16), nullable=False),
        sa.Column("precision", sa.String(16), nullable=False),
        sa.Column("batch_size", sa.Integer(), nullable=False),
        sa.Column("sequence_length", sa.Integer(), nullable=False),
        sa.Column("framework", sa.String(32), nullable=False),
        sa.Column("gpu", sa.String(32), nullable=False),
        sa.Column("gpu_count", sa.Integer(), nullable=False),
        sa.Column("peak_memory_mib", sa.Integer(), nullable=True),
        sa.Column("tokens_per_second", sa.Float(), nullable=True),
        sa.Column("measured_at", UTCDateTime(), nullable=False),
        sa.Column("origin", sa.String(16), nullable=False),
        sa.UniqueConstraint("attempt_id", name="uq_calibration_attempt"),
    )
    op.create_index("ix_calibration_key", "calibration_records",
                    ["fingerprint", "method", "precision", "framework"])


def downgrade() -> None:
    op.drop_index("ix_calibration_key", table_name="calibration_records")
    op.drop_table("calibration_records")
    op.drop_index("ix_attempt_telemetry_job", table_name="attempt_telemetry")
    op.drop_table("attempt_telemetry")
