"""offer_series: marketplace host reliability and verification (Vast.ai)

offer_series.host_reliability (0..1, Vast.ai's reliability2) and host_verified keep the
two fields a job's resources.min_host_reliability / verified_hosts_only filter on, so
offers read back from the store are filtered as freshly polled ones are. NULL for every
cloud whose hosts are its own.

Revision ID: 0006_offer_host_scores (before the renumbering: 0007)
Revises: 0005_lifecycle
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006_offer_host_scores"
down_revision = "0005_lifecycle"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("offer_series") as batch:
        batch.add_column(sa.Column("host_reliability", sa.Float(), nullable=True))
        batch.add_column(sa.Column("host_verified", sa.Boolean(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("offer_series") as batch:
        batch.drop_column("host_verified")
        batch.drop_column("host_reliability")
