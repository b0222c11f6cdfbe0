"""price history: offer_series + price_change

Revision ID: 0001_price_history (before the renumbering: 0001)
Revises:
Create Date: 2025-06-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from gpuopt.orchestrator.store.types import UTCSeconds

revision = "0001_price_history"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "offer_series",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("cloud", sa.String(16), nullable=False),
        sa.Column("region", sa.String(64), nullable=False),
        sa.Column("zone", sa.String(64), nullable=False),
        sa.Column("instance_type", sa.String(64), nullable=False),
        sa.Column("market", sa.String(16), nullable=False),
        sa.Column("gpu", sa.String(32), nullable=False),
        sa.Column("gpu_count", sa.Integer(), nullable=False),
        sa.Column("gpu_memory_gib", sa.Float(), nullable=False),
        sa.Column("vcpus", sa.Float(), nullable=False),
        sa.Column("ram_gib", sa.Float(), nullable=False),
        sa.Column("source", sa.String(32), nullable=False),
        sa.Column("interruption_bucket", sa.Integer(), nullable=True),
        sa.Column("placement_score", sa.Integer(), nullable=True),
        sa.Column("price_micros", sa.BigInteger(), nullable=False),
        sa.Column("price_since", UTCSeconds(), nullable=False),
        sa.Column("first_seen", UTCSeconds(), nullable=False),
        sa.Column("last_seen", UTCSeconds(), nullable=False),
        sa.UniqueConstraint(
            "cloud", "region", "zone", "instance_type", "market", name="uq_offer_series_key"
        ),
    )
    op.create_index("ix_offer_series_gpu_market", "offer_series", ["gpu", "market"])
    op.create_table(
        "price_change",
        sa.Column(
            "series_id",
            sa.Integer(),
            sa.ForeignKey("offer_series.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("first_seen", UTCSeconds(), primary_key=True),
        sa.Column("price_micros", sa.BigInteger(), nullable=False),
        sa.Column("last_seen", UTCSeconds(), nullable=False),
        sqlite_with_rowid=False,
    )


def downgrade() -> None:
    op.drop_table("price_change")
    op.drop_index("ix_offer_series_gpu_market", table_name="offer_series")
    op.drop_table("offer_series")
