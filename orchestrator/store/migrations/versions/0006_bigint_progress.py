"""attempts.progress_step / progress_total as BIGINT (a token count passes 2^31)

Revision ID: 0006
Revises: 0003
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0003"
branch_labels = None
depends_on = None

_COLUMNS = ("progress_step", "progress_total")


def upgrade() -> None:
    with op.batch_alter_table("attempts") as batch:
        for column in _COLUMNS:
            batch.alter_column(column, existing_type=sa.Integer(), type_=sa.BigInteger(),
                               existing_nullable=True)


def downgrade() -> None:
    with op.batch_alter_table("attempts") as batch:
        for column in _COLUMNS:
            batch.alter_column(column, existing_type=sa.BigInteger(), type_=sa.Integer(),
                               existing_nullable=True)
