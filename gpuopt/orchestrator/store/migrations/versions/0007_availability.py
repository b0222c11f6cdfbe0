"""availability history: availability_place + availability_observation

Where spot was observed (cloud, region, zone, instance type, market) and what was
observed there: launches that succeeded or failed for capacity, preemptions, releases,
spot offers listed or gone, placement scores (policies.spot.observed).

Revision ID: 0007_availability (before the renumbering: 0009_availability)
Revises: 0006_offer_host_scores
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from gpuopt.orchestrator.store.types import UTCSeconds

revision = "0007_availability"
down_revision = "0006_offer_host_scores"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "availability_place",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("cloud", sa.String(16), nullable=False),
        sa.Column("region", sa.String(64), nullable=False),
        sa.Column("zone", sa.String(64), nullable=False),
        sa.Column("instance_type", sa.String(64), nullable=False),
        sa.Column("market", sa.String(16), nullable=False),
        sa.UniqueConstraint("cloud", "region", "zone", "instance_type", "market",
                            name="uq_availability_place_key"),
    )
    op.create_table(
        "availability_observation",
        sa.Column("place_id", sa.Integer(),
                  sa.ForeignKey("availability_place.id", ondelete="CASCADE"),
                  primary_key=True),
        sa.Column("at", UTCSeconds(), primary_key=True),
        sa.Column("kind", sa.String(24), primary_key=True),
        sa.Column("value", sa.Integer(), nullable=True),
        sqlite_with_rowid=False,
    )


def downgrade() -> None:
    op.drop_table("availability_observation")
    op.drop_table("availability_place")
