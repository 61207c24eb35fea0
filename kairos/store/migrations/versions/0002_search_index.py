"""search index

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-22
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "index_meta",
        sa.Column("key", sa.String(length=64), nullable=False),
        sa.Column("value", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("key"),
    )
    op.create_table(
        "search_docs",
        sa.Column("rid", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("key", sa.String(length=80), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("entity_id", sa.String(length=36), nullable=False),
        sa.Column("space", sa.String(length=64), nullable=False),
        sa.Column("title", sa.Text(), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("category", sa.String(length=64), nullable=True),
        sa.Column("section", sa.String(length=16), nullable=True),
        sa.Column("author", sa.Text(), nullable=True),
        sa.Column("updated_at", sa.String(length=32), nullable=False),
        sa.PrimaryKeyConstraint("rid"),
        sa.UniqueConstraint("key"),
    )
    with op.batch_alter_table("search_docs", schema=None) as batch_op:
        batch_op.create_index("ix_search_docs_space_kind", ["space", "kind"], unique=False)

    op.create_table(
        "search_vectors",
        sa.Column("rid", sa.Integer(), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("model_id", sa.String(length=128), nullable=False),
        sa.Column("vector", sa.LargeBinary(), nullable=False),
        sa.ForeignKeyConstraint(["rid"], ["search_docs.rid"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("rid", "seq"),
    )
    if op.get_bind().dialect.name == "sqlite":
        # Full text: FTS5 with BM25, rowid = search_docs.rid.
        op.execute(
            "CREATE VIRTUAL TABLE search_fts USING fts5("
            "title, body, tokenize = 'porter unicode61 remove_diacritics 2')"
        )


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        op.execute("DROP TABLE IF EXISTS search_fts")
    op.drop_table("search_vectors")
    with op.batch_alter_table("search_docs", schema=None) as batch_op:
        batch_op.drop_index("ix_search_docs_space_kind")

    op.drop_table("search_docs")
    op.drop_table("index_meta")
