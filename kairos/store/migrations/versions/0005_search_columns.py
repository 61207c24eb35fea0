"""search columns: step labels as their own full-text column, token counts, new vectors

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-23
"""

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

_PG_TSV = (
    "ALTER TABLE search_docs ADD COLUMN tsv tsvector GENERATED ALWAYS AS ("
    "setweight(to_tsvector('english', coalesce(title, '')), 'A') || "
    "setweight(to_tsvector('english', coalesce(labels, '')), 'B') || "
    "setweight(to_tsvector('english', coalesce(body, '')), 'C')) STORED"
)


def upgrade() -> None:
    with op.batch_alter_table("search_docs", schema=None) as batch_op:
        batch_op.add_column(sa.Column("labels", sa.Text(), nullable=False, server_default=""))
        batch_op.add_column(sa.Column("ntokens", sa.Integer(), nullable=False,
                                      server_default="0"))
    # Documents are now embedded as summary, full text and one vector per step: drop the old
    # vectors so the next start re-embeds every document (``kairos reindex`` does it at once).
    op.execute("DELETE FROM search_vectors")
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP INDEX IF EXISTS ix_search_docs_tsv")
        op.execute("ALTER TABLE search_docs DROP COLUMN tsv")
        op.execute(_PG_TSV)
        op.execute("CREATE INDEX ix_search_docs_tsv ON search_docs USING gin (tsv)")
        return
    op.execute("DROP TABLE search_fts")
    op.execute(
        "CREATE VIRTUAL TABLE search_fts USING fts5("
        "title, labels, body, tokenize = 'porter unicode61 remove_diacritics 2')"
    )
    op.execute("INSERT INTO search_fts(rowid, title, labels, body) "
               "SELECT rid, title, labels, body FROM search_docs")


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP INDEX IF EXISTS ix_search_docs_tsv")
        op.execute("ALTER TABLE search_docs DROP COLUMN tsv")
        op.execute(
            "ALTER TABLE search_docs ADD COLUMN tsv tsvector GENERATED ALWAYS AS ("
            "setweight(to_tsvector('english', coalesce(title, '')), 'A') || "
            "setweight(to_tsvector('english', coalesce(body, '')), 'B')) STORED")
        op.execute("CREATE INDEX ix_search_docs_tsv ON search_docs USING gin (tsv)")
    else:
        op.execute("DROP TABLE search_fts")
        op.execute("CREATE VIRTUAL TABLE search_fts USING fts5("
                   "title, body, tokenize = 'porter unicode61 remove_diacritics 2')")
        op.execute("INSERT INTO search_fts(rowid, title, body) "
                   "SELECT rid, title, body FROM search_docs")
    with op.batch_alter_table("search_docs", schema=None) as batch_op:
        batch_op.drop_column("ntokens")
        batch_op.drop_column("labels")
