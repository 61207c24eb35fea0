"""runs and attestations say whether every step was proven

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-23
"""

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    for table in ("runs", "attestations"):
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.add_column(sa.Column("proven", sa.Boolean(), nullable=False,
                                          server_default=sa.false()))


def downgrade() -> None:
    for table in ("runs", "attestations"):
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.drop_column("proven")
