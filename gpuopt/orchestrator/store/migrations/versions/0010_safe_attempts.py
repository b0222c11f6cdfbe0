"""safe attempts: job secrets sealed in the store, the host of a local attempt, failed stops

- ``secret_keys`` / ``job_secrets`` (orchestrator/store/secret_tables.py): a job's secret
  values sealed to the public keys of the nodes that may run it; deleted with the job's
  end, in the same transaction.
- ``attempts.host`` / ``boot_id``: which host (and boot) runs a local attempt.
- ``attempts.stop_failures`` / ``next_stop_at`` / ``stop_error_kind`` / ``stop_error``:
  the retry state of an attempt whose stop failed (phase ``stop_failed``).

Revision ID: 0010_safe_attempts
Revises: 0009_resolved_spec
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from gpuopt.orchestrator.store.types import UTCDateTime

revision = "0010_safe_attempts"
down_revision = "0009_resolved_spec"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "secret_keys",
        sa.Column("key_id", sa.String(32), primary_key=True),
        sa.Column("public_key", sa.String(64), nullable=False),
        sa.Column("host", sa.String(128), nullable=False),
        sa.Column("published_at", UTCDateTime(), nullable=False),
    )
    op.create_table(
        "job_secrets",
        sa.Column("job_id", sa.String(40), sa.ForeignKey("jobs.id", ondelete="CASCADE"),
                  primary_key=True),
        sa.Column("key_id", sa.String(32), primary_key=True),
        sa.Column("sealed", sa.Text(), nullable=False),
    )
    op.add_column("attempts", sa.Column("host", sa.String(128), nullable=True))
    op.add_column("attempts", sa.Column("boot_id", sa.String(64), nullable=True))
    op.add_column("attempts", sa.Column("stop_failures", sa.Integer(), nullable=False,
                                        server_default="0"))
    op.add_column("attempts", sa.Column("next_stop_at", UTCDateTime(), nullable=True))
    op.add_column("attempts", sa.Column("stop_error_kind", sa.String(64), nullable=True))
    op.add_column("attempts", sa.Column("stop_error", sa.Text(), nullable=True))


def downgrade() -> None:
    # Plain DROP COLUMN (SQLite >= 3.35), as 0005_lifecycle does: batch mode would re-create the table.
    for column in ("stop_error", "stop_error_kind", "next_stop_at", "stop_failures",
                   "boot_id", "host"):
        op.drop_column("attempts", column)
    op.drop_table("job_secrets")
    op.drop_table("secret_keys")
