"""jobs: jobs, attempts, job_events

Revision ID: 0002_jobs (before the renumbering: 0002)
Revises: 0001_price_history
Create Date: 2025-06-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from gpuopt.orchestrator.store.types import UTCDateTime

revision = "0002_jobs"
down_revision = "0001_price_history"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "jobs",
        sa.Column("id", sa.String(40), primary_key=True),
        sa.Column("name", sa.String(128), nullable=False),
        sa.Column("owner", sa.String(128), nullable=True),
        sa.Column("team", sa.String(128), nullable=True),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("spec_yaml", sa.Text(), nullable=False),
        sa.Column("spec_path", sa.String(1024), nullable=True),
        sa.Column("submitted_at", UTCDateTime(), nullable=False),
        sa.Column("deadline_at", UTCDateTime(), nullable=True),
        sa.Column("budget_micros", sa.BigInteger(), nullable=True),
        sa.Column("plan_json", sa.Text(), nullable=False),
        sa.Column("executor", sa.String(16), nullable=False),
        sa.Column("restarts_used", sa.Integer(), nullable=False),
        sa.Column("cancel_requested", sa.Boolean(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
        sa.Column("finished_at", UTCDateTime(), nullable=True),
        sa.Column("exit_code", sa.Integer(), nullable=True),
        sa.Column("last_error", sa.Text(), nullable=True),
    )
    op.create_index("ix_jobs_status", "jobs", ["status"])
    op.create_table(
        "attempts",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column(
            "job_id", sa.String(40), sa.ForeignKey("jobs.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("number", sa.Integer(), nullable=False),
        sa.Column("cluster_name", sa.String(64), nullable=False),
        sa.Column("cloud", sa.String(16), nullable=False),
        sa.Column("region", sa.String(64), nullable=False),
        sa.Column("zone", sa.String(64), nullable=True),
        sa.Column("instance_type", sa.String(64), nullable=False),
        sa.Column("gpu", sa.String(32), nullable=False),
        sa.Column("gpu_count", sa.Integer(), nullable=False),
        sa.Column("market", sa.String(16), nullable=False),
        sa.Column("price_per_hour_micros", sa.BigInteger(), nullable=False),
        sa.Column("on_demand_price_per_hour_micros", sa.BigInteger(), nullable=True),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("started_at", UTCDateTime(), nullable=False),
        sa.Column("ended_at", UTCDateTime(), nullable=True),
        sa.Column("end_reason", sa.String(16), nullable=True),
        sa.Column("exit_code", sa.Integer(), nullable=True),
        sa.Column("cost_micros", sa.BigInteger(), nullable=True),
        sa.Column("wasted_seconds", sa.Float(), nullable=True),
        sa.Column("progress_step", sa.Integer(), nullable=True),
        sa.Column("progress_total", sa.Integer(), nullable=True),
        sa.Column("first_progress_at", UTCDateTime(), nullable=True),
        sa.Column("last_progress_at", UTCDateTime(), nullable=True),
        sa.Column("last_log_lines", sa.Text(), nullable=True),
        sa.Column("detail", sa.Text(), nullable=True),
        sa.UniqueConstraint("job_id", "number", name="uq_attempts_job_number"),
        sa.UniqueConstraint("cluster_name", name="uq_attempts_cluster_name"),
    )
    op.create_index("ix_attempts_status", "attempts", ["status"])
    op.create_index("ix_attempts_started_at", "attempts", ["started_at"])
    op.create_table(
        "job_events",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column(
            "job_id", sa.String(40), sa.ForeignKey("jobs.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("at", UTCDateTime(), nullable=False),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("message", sa.Text(), nullable=False),
    )
    op.create_index("ix_job_events_job", "job_events", ["job_id", "id"])


def downgrade() -> None:
    op.drop_index("ix_job_events_job", table_name="job_events")
    op.drop_table("job_events")
    op.drop_index("ix_attempts_started_at", table_name="attempts")
    op.drop_index("ix_attempts_status", table_name="attempts")
    op.drop_table("attempts")
    op.drop_index("ix_jobs_status", table_name="jobs")
    op.drop_table("jobs")
