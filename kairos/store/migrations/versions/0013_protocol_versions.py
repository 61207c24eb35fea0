"""protocol versions: every text a protocol has had, the version each run follows, the
chain rule each run is hashed by, and statistics per version

- ``protocol_versions``: each protocol's current text becomes its version 1 (the markdown
  ``kairos_dump`` returns, its sha256, its steps with their ids); ``protocols.version``
  names the current one.
- ``runs.protocol_version`` (existing runs: 1) and ``runs.chain_rule`` (existing runs:
  ``kairos-json-1``, the rule their proofs were hashed with; nothing is re-hashed).
- ``version_metrics``: each protocol's statistics per space, copied as version 1's.

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-26
"""

import json

import sqlalchemy as sa
from alembic import op

from kairos.domain.versions import content_hash, step_entries, version_text

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None

TS = sa.String(32)
VERSIONS = sa.table(
    "protocol_versions", sa.column("protocol_id", sa.String), sa.column("version", sa.Integer),
    sa.column("space", sa.String), sa.column("title", sa.Text),
    sa.column("markdown", sa.Text), sa.column("content_hash", sa.String),
    sa.column("steps", sa.JSON), sa.column("created_at", sa.String))


def upgrade() -> None:
    # Plain ALTER TABLE: a batch copy of ``protocols`` would cascade to its steps on SQLite.
    op.add_column("protocols", sa.Column("version", sa.Integer(), nullable=False,
                                         server_default="1"))
    op.add_column("runs", sa.Column("protocol_version", sa.Integer(), nullable=False,
                                    server_default="1"))
    op.add_column("runs", sa.Column("chain_rule", sa.String(16), nullable=False,
                                    server_default="kairos-json-1"))
    op.create_table(
        "protocol_versions",
        sa.Column("protocol_id", sa.String(36), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("space", sa.String(64), nullable=False),
        sa.Column("title", sa.Text(), nullable=False),
        sa.Column("markdown", sa.Text(), nullable=False),
        sa.Column("content_hash", sa.String(64), nullable=False),
        sa.Column("steps", sa.JSON(), nullable=False),
        sa.Column("created_at", TS, nullable=False),
        sa.PrimaryKeyConstraint("protocol_id", "version"),
    )
    op.create_table(
        "version_metrics",
        sa.Column("protocol_id", sa.String(36), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("space", sa.String(64), nullable=False),
        *(sa.Column(c, sa.Integer(), nullable=False) for c in ("runs", "successes", "failures")),
        sa.Column("quality_bonus", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("protocol_id", "version", "space"),
    )
    conn = op.get_bind()
    for p in conn.execute(sa.text("SELECT id, space, title, intro, triggers, updated_at "
                                  "FROM protocols")).mappings().all():
        steps = conn.execute(sa.text(
            "SELECT id, label, content, challenge FROM steps WHERE protocol_id = :p "
            "ORDER BY position"), {"p": p["id"]}).mappings().all()
        entries = step_entries([{**s, "challenge": _json(s["challenge"])} for s in steps])
        text = version_text({**p, "triggers": _json(p["triggers"])}, entries)
        conn.execute(sa.insert(VERSIONS).values(
            protocol_id=p["id"], version=1, space=p["space"], title=p["title"],
            markdown=text, content_hash=content_hash(text),
            steps=entries, created_at=p["updated_at"]))
    conn.execute(sa.text(
        "INSERT INTO version_metrics (protocol_id, version, space, runs, successes, "
        "failures, quality_bonus) SELECT protocol_id, 1, space, runs, successes, failures, "
        "quality_bonus FROM protocol_metrics"))


def _json(value: object) -> object:
    """A JSON column as read through ``sa.text`` (SQLite hands back its text)."""
    return json.loads(value) if isinstance(value, str) else value


def downgrade() -> None:
    op.drop_table("version_metrics")
    op.drop_table("protocol_versions")
    op.execute("ALTER TABLE runs DROP COLUMN chain_rule")  # SQLite 3.35 and later
    op.execute("ALTER TABLE runs DROP COLUMN protocol_version")
    op.execute("ALTER TABLE protocols DROP COLUMN version")
