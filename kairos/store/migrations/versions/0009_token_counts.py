"""documents' token counts follow FTS5's tokenizer: an underscore separates two tokens

PostgreSQL's bm25 reads a document's length from ``search_docs.ntokens``; counted as
``\\w+`` it took ``edge_hosts`` for one token where SQLite's FTS5 sees two. Every stored
count is made again with ``text_index.token_count``.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-25
"""

import sqlalchemy as sa
from alembic import op

from kairos.store.text_index import token_count

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    conn = op.get_bind()
    rows = conn.execute(sa.text("SELECT rid, title, labels, body, ntokens FROM search_docs"))
    changed = [{"rid": r.rid, "n": n} for r in rows
               if (n := token_count(r.title, r.labels, r.body)) != r.ntokens]
    if changed:
        conn.execute(sa.text("UPDATE search_docs SET ntokens = :n WHERE rid = :rid"), changed)


def downgrade() -> None:
    """The counts stay: the earlier ones differ only where a word held an underscore."""
