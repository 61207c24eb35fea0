"""SQLite full text: each row names its space and kind in a column of its own

A search then keeps to its space and kinds inside FTS5 (``scope:`` in the MATCH) instead
of looking up every match's document row. PostgreSQL filters its documents table directly
and is unchanged.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-25
"""

import sqlalchemy as sa
from alembic import op

from kairos.store.text_index import SQLITE_FTS, scope_token

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    conn = op.get_bind()
    op.execute("DROP TABLE search_fts")
    op.execute(SQLITE_FTS)
    rows = [{"rid": r.rid, "title": r.title, "labels": r.labels, "body": r.body,
             "scope": scope_token(r.space, r.kind)} for r in conn.execute(sa.text(
                 "SELECT rid, space, kind, title, labels, body FROM search_docs"))]
    if rows:
        conn.execute(sa.text("INSERT INTO search_fts(rowid, title, labels, body, scope) "
                             "VALUES (:rid, :title, :labels, :body, :scope)"), rows)


def downgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    op.execute("DROP TABLE search_fts")
    op.execute("CREATE VIRTUAL TABLE search_fts USING fts5("
               "title, labels, body, tokenize = 'porter unicode61 remove_diacritics 2')")
    op.execute("INSERT INTO search_fts(rowid, title, labels, body) "
               "SELECT rid, title, labels, body FROM search_docs")
