"""postgres search: pgvector embeddings and a weighted full-text column

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-22
"""

from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return  # SQLite keeps FTS5 (0002) and searches vectors in process
    op.execute("CREATE EXTENSION IF NOT EXISTS vector")
    op.execute("ALTER TABLE search_vectors ADD COLUMN embedding vector")
    op.execute("ALTER TABLE search_vectors ADD COLUMN dim integer")
    op.execute(
        "ALTER TABLE search_docs ADD COLUMN tsv tsvector GENERATED ALWAYS AS ("
        "setweight(to_tsvector('english', coalesce(title, '')), 'A') || "
        "setweight(to_tsvector('english', coalesce(body, '')), 'B')) STORED"
    )
    op.execute("CREATE INDEX ix_search_docs_tsv ON search_docs USING gin (tsv)")


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute("DROP INDEX IF EXISTS ix_search_docs_tsv")
    op.execute("ALTER TABLE search_docs DROP COLUMN IF EXISTS tsv")
    op.execute("ALTER TABLE search_vectors DROP COLUMN IF EXISTS dim")
    op.execute("ALTER TABLE search_vectors DROP COLUMN IF EXISTS embedding")
