"""attempts.progress_step / progress_total as BIGINT (a token count passes 2^31);
pending_price (new price series held for a second poll)

Revision ID: 0004_bigint_progress (before the renumbering: 0006)
Revises: 0003_daemon
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from gpuopt.orchestrator.store.types import UTCSeconds

revision = "0004_bigint_progress"
down_revision = "0003_daemon"
branch_labels = None
depends_on = None

_COLUMNS = ("progress_step", "progress_total")


def upgrade() -> None:
    with op.batch_alter_table("attempts") as batch:
        for column in _COLUMNS:
            batch.alter_column(column, existing_type=sa.Integer(), type_=sa.BigInteger(),
                               existing_nullable=True)
    op.create_table(
        "pending_price",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("cloud", sa.String(16), nullable=False),
        sa.Column("region", sa.String(64), nullable=False),
        sa.Column("zone", sa.String(64), nullable=False),
        sa.Column("instance_type", sa.String(64), nullable=False),
        sa.Column("market", sa.String(16), nullable=False),
        sa.Column("gpu", sa.String(32), nullable=False),
        sa.Column("price_micros", sa.BigInteger(), nullable=False),
        sa.Column("observed_at", UTCSeconds(), nullable=False),
        sa.Column("reason", sa.String(400), nullable=False),
        sa.UniqueConstraint("cloud", "region", "zone", "instance_type", "market",
                            name="uq_pending_price_key"),
    )


def downgrade() -> None:
    op.drop_table("pending_price")
    with op.batch_alter_table("attempts") as batch:
        for column in _COLUMNS:
            batch.alter_column(column, existing_type=sa.BigInteger(), type_=sa.Integer(),
                               existing_nullable=True)
