"""daemon: report_sends, daemon_nodes, poll_status

Revision ID: 0003_daemon (before the renumbering: 0003)
Revises: 0002_jobs
Create Date: 2025-06-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from gpuopt.orchestrator.store.types import UTCDateTime

revision = "0003_daemon"
down_revision = "0002_jobs"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "report_sends",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("week", sa.String(10), nullable=False),
        sa.Column("scope", sa.String(160), nullable=False),
        sa.Column("sent_at", UTCDateTime(), nullable=True),
        sa.Column("failures", sa.Integer(), nullable=False),
        sa.Column("last_failure_at", UTCDateTime(), nullable=True),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("next_try_at", UTCDateTime(), nullable=True),
        sa.UniqueConstraint("week", "scope", name="uq_report_sends_week_scope"),
    )
    op.create_table(
        "daemon_nodes",
        sa.Column("node_id", sa.String(200), primary_key=True),
        sa.Column("hostname", sa.String(128), nullable=False),
        sa.Column("pid", sa.Integer(), nullable=False),
        sa.Column("started_at", UTCDateTime(), nullable=False),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("leader_since", UTCDateTime(), nullable=True),
        sa.Column("heartbeat_at", UTCDateTime(), nullable=False),
        sa.Column("metrics_address", sa.String(128), nullable=True),
    )
    op.create_table(
        "poll_status",
        sa.Column("cloud", sa.String(16), primary_key=True),
        sa.Column("last_try_at", UTCDateTime(), nullable=False),
        sa.Column("last_status", sa.String(16), nullable=False),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("last_ok_at", UTCDateTime(), nullable=True),
    )


def downgrade() -> None:
    op.drop_table("poll_status")
    op.drop_table("daemon_nodes")
    op.drop_table("report_sends")
