"""lifecycle: typed attempt failures, per-job reconcile step failures

attempts.failure_kind holds why a failed attempt failed (jobs.states.FailureKind), which
until now was only told by the prefix of its free-text ``detail`` ("launch failed: ...",
"cannot launch: ..."); existing rows are converted once, here, and nothing reads that
text again. Status columns keep their values, which are the enums' values; rows holding
anything else are refused by the ORM from now on, so this migration checks there are none.
jobs.step_failures / step_error count reconcile steps of a job that raised, in a row.

Revision ID: 0005_lifecycle (before the renumbering: 0004)
Revises: 0004_bigint_progress
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005_lifecycle"
down_revision = "0004_bigint_progress"
branch_labels = None
depends_on = None

_KNOWN = {
    ("jobs", "status"): ("queued", "launching", "running", "preempted", "succeeded", "failed",
                         "cancelled"),
    ("attempts", "status"): ("launching", "running", "ended"),
    ("attempts", "end_reason"): ("succeeded", "failed", "preempted", "cancelled"),
}
# (condition on an attempt that ended failed, kind), first match wins: the old message
# prefixes, read this one time to convert the rows written before the kinds existed.
_BACKFILL = (
    ("detail LIKE 'launch failed: never started%'", "not_started"),
    ("detail LIKE 'launch failed%'", "launch"),
    ("detail LIKE 'cannot launch%'", "refused"),
    ("detail LIKE 'setup %'", "setup"),
    ("1 = 1", "program"),
)


def upgrade() -> None:
    conn = op.get_bind()
    for (table, column), values in _KNOWN.items():
        allowed = ", ".join(f"'{v}'" for v in values)
        bad = conn.execute(sa.text(
            f"SELECT COUNT(*) FROM {table} WHERE {column} IS NOT NULL "
            f"AND {column} NOT IN ({allowed})")).scalar()
        if bad:
            raise RuntimeError(f"{bad} rows of {table}.{column} hold an unknown value; "
                               f"expected one of {', '.join(values)}")
    op.add_column("attempts", sa.Column("failure_kind", sa.String(16), nullable=True))
    for condition, kind in _BACKFILL:
        conn.execute(sa.text(
            f"UPDATE attempts SET failure_kind = '{kind}' WHERE end_reason = 'failed' "
            f"AND failure_kind IS NULL AND ({condition})"))
    op.add_column("jobs", sa.Column("step_failures", sa.Integer(), nullable=False,
                                    server_default="0"))
    op.add_column("jobs", sa.Column("step_error", sa.String(64), nullable=True))


def downgrade() -> None:
    # Plain ALTER TABLE ... DROP COLUMN (SQLite >= 3.35): batch mode would re-create
    # ``jobs``, and dropping it with foreign keys on deletes every attempt (ON DELETE CASCADE).
    op.drop_column("jobs", "step_error")
    op.drop_column("jobs", "step_failures")
    op.drop_column("attempts", "failure_kind")
