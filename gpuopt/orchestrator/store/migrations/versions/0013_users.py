"""users of the HTTP API (token hashes only), the audit trail of submits and cancels,
and jobs.submitted_by (the API user who submitted a job)

Revision ID: 0013_users
Revises: 0012_attempt_nodes
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from gpuopt.orchestrator.store.types import UTCDateTime

revision = "0013_users"
down_revision = "0012_attempt_nodes"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "api_users",
        sa.Column("name", sa.String(64), primary_key=True),
        sa.Column("team", sa.String(128), nullable=True),
        sa.Column("is_admin", sa.Boolean(), nullable=False),
        sa.Column("token_sha256", sa.String(64), nullable=False, unique=True),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("revoked_at", UTCDateTime(), nullable=True),
    )
    op.create_table(
        "audit_log",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("at", UTCDateTime(), nullable=False),
        sa.Column("actor", sa.String(80), nullable=False),
        sa.Column("action", sa.String(16), nullable=False),
        sa.Column("job_id", sa.String(40), nullable=False),
        sa.Column("detail", sa.Text(), nullable=True),
    )
    op.create_index("ix_audit_log_job", "audit_log", ["job_id"])
    op.add_column("jobs", sa.Column("submitted_by", sa.String(64), nullable=True))
    op.create_index("ix_jobs_submitted_by", "jobs", ["submitted_by"])


def downgrade() -> None:
    op.drop_index("ix_jobs_submitted_by", table_name="jobs")
    op.drop_column("jobs", "submitted_by")
    op.drop_index("ix_audit_log_job", table_name="audit_log")
    op.drop_table("audit_log")
    op.drop_table("api_users")
