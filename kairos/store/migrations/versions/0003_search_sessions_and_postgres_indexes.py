"""search sessions and postgres indexes

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-22
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "search_sessions",
        sa.Column("session_id", sa.String(length=128), nullable=False),
        sa.Column("last_seen", sa.Float(), nullable=False),
        sa.Column("viewed_ids", sa.JSON(), nullable=False),
        sa.Column("cited_ids", sa.JSON(), nullable=False),
        sa.Column("last_queries", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("session_id"),
    )
    with op.batch_alter_table("search_sessions", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_search_sessions_last_seen"), ["last_seen"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("search_sessions", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_search_sessions_last_seen"))
    op.drop_table("search_sessions")
