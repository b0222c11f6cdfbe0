"""pending_price: a held price's first report, poll count, confirmation wait and the
series' price when held (issue 26.6: changes are held too, not only new series)

Revision ID: 0011_price_holds
Revises: 0010_safe_attempts
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from gpuopt.orchestrator.store.types import UTCSeconds

revision = "0011_price_holds"
down_revision = "0010_safe_attempts"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("pending_price") as batch:
        batch.add_column(sa.Column("first_observed_at", UTCSeconds(), nullable=True))
        batch.add_column(sa.Column("polls", sa.Integer(), nullable=False, server_default="1"))
        batch.add_column(sa.Column("wait_seconds", sa.Integer(), nullable=False,
                                   server_default="0"))
        batch.add_column(sa.Column("previous_micros", sa.BigInteger(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("pending_price") as batch:
        for column in ("previous_micros", "wait_seconds", "polls", "first_observed_at"):
            batch.drop_column(column)
