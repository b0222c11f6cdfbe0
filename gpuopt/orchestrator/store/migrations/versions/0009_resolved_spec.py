"""resolved spec: jobs.spec_json holds the validated spec as JSON (jobs.resolved)

Written at submit from the one read of the job file, with the model's architecture
resolved, so the daemon places and closes attempts without the submitter's files. Rows
stored before this revision keep NULL and are parsed from spec_yaml as before.

Revision ID: 0009_resolved_spec (before the renumbering: 0007_resolved_spec)
Revises: 0008_telemetry
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009_resolved_spec"
down_revision = "0008_telemetry"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("jobs", sa.Column("spec_json", sa.Text(), nullable=True))


def downgrade() -> None:
    # Plain DROP COLUMN (SQLite >= 3.35), as 0005_lifecycle does: batch mode would re-create ``jobs``.
    op.drop_column("jobs", "spec_json")
