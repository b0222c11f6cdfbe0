"""attempts.probe_of: a probe (make before break, issue 25) is an attempt provisioned
while the job's attempt number ``probe_of`` still runs the program; it starts the job
only once that attempt has stopped. Existing attempts are no probes.

Revision ID: 0014_attempt_probes
Revises: 0013_users
Create Date: 2026-12-04
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0014_attempt_probes"
down_revision = "0013_users"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("attempts") as batch:
        batch.add_column(sa.Column("probe_of", sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("attempts") as batch:
        batch.drop_column("probe_of")
