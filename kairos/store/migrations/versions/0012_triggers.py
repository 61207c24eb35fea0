"""triggers: a protocol's author triggers, learned triggers, the searches that lead to runs,
and the role of each search vector

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-26
"""

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None

TS = sa.String(32)


def upgrade() -> None:
    # A plain ALTER TABLE on every backend: a batch copy of ``protocols`` would drop the old
    # table, and on SQLite (foreign keys on) that deletes every step with it.
    op.add_column("protocols", sa.Column("triggers", sa.JSON(), nullable=False,
                                         server_default=sa.text("'[]'")))
    # Every stored vector so far is one of its document's own texts.
    op.add_column("search_vectors", sa.Column("role", sa.String(8), nullable=False,
                                              server_default="doc"))
    op.create_table(
        "learned_triggers",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("space", sa.String(64), nullable=False),
        sa.Column("protocol_id", sa.String(36),
                  sa.ForeignKey("protocols.id", ondelete="CASCADE"), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("text_key", sa.Text(), nullable=False),
        sa.Column("runs", sa.Integer(), nullable=False, server_default="1"),
        sa.Column("vector", sa.LargeBinary()),
        sa.Column("model_id", sa.String(128)),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("last_seen", TS, nullable=False),
        sa.UniqueConstraint("protocol_id", "text_key", name="uq_learned_triggers_text"),
    )
    op.create_index("ix_learned_triggers_protocol", "learned_triggers", ["protocol_id"])
    op.create_table(
        "search_leads",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("space", sa.String(64), nullable=False),
        sa.Column("caller", sa.String(128), nullable=False),
        sa.Column("query", sa.Text(), nullable=False),
        sa.Column("protocol_ids", sa.JSON(), nullable=False),
        sa.Column("vector", sa.LargeBinary()),
        sa.Column("model_id", sa.String(128)),
        sa.Column("created_at", TS, nullable=False),
    )
    op.create_index("ix_search_leads_caller", "search_leads", ["space", "caller", "created_at"])
    op.create_index("ix_search_leads_created", "search_leads", ["created_at"])


def downgrade() -> None:
    op.drop_index("ix_search_leads_created", table_name="search_leads")
    op.drop_index("ix_search_leads_caller", table_name="search_leads")
    op.drop_table("search_leads")
    op.drop_index("ix_learned_triggers_protocol", table_name="learned_triggers")
    op.drop_table("learned_triggers")
    op.execute("ALTER TABLE search_vectors DROP COLUMN role")  # SQLite 3.35 and later
    op.execute("ALTER TABLE protocols DROP COLUMN triggers")
