"""attempts.num_nodes: the nodes a multi-node attempt holds together (issue 24); its
price columns are of all of them. Existing attempts held one node.

Revision ID: 0012_attempt_nodes
Revises: 0011_price_holds
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012_attempt_nodes"
down_revision = "0011_price_holds"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("attempts") as batch:
        batch.add_column(sa.Column("num_nodes", sa.Integer(), nullable=False,
                                   server_default="1"))


def downgrade() -> None:
    with op.batch_alter_table("attempts") as batch:
        batch.drop_column("num_nodes")
