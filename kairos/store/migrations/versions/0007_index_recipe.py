"""the search index records which document recipe its vectors were embedded from

Stores indexed before this revision hold the first recipe (several vectors per protocol);
they are marked so, and the next server re-embeds them in the background.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-24
"""

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    conn = op.get_bind()
    if conn.execute(sa.text("SELECT rid FROM search_docs LIMIT 1")).first() is not None:
        conn.execute(sa.text("INSERT INTO index_meta (key, value) VALUES ('recipe', '1')"))


def downgrade() -> None:
    op.get_bind().execute(sa.text("DELETE FROM index_meta WHERE key = 'recipe'"))
