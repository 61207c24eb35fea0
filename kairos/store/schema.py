"""Tables, as SQLAlchemy Core metadata. Migrations under ``migrations/`` create them."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    JSON,
    Boolean,
    Column,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
    false,
)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection
from sqlalchemy.sql.dml import Insert

metadata = MetaData()
TS = String(32)  # ISO-8601 UTC timestamps sort as text on every backend


def stamp(moment: datetime) -> str:
    """``moment`` as a ``TS`` column holds it (always with microseconds, so that times
    compare as text)."""
    return moment.isoformat(timespec="microseconds")

protocols = Table(
    "protocols", metadata,
    Column("id", String(36), primary_key=True),
    Column("space", String(64), nullable=False),
    Column("title", Text, nullable=False),
    Column("title_key", Text, nullable=False),
    Column("intro", Text, nullable=False, default=""),
    Column("tags", JSON, nullable=False),
    Column("triggers", JSON, nullable=False, default=list),
    Column("builtin", Boolean, nullable=False, default=False),
    Column("source_hash", String(64)),
    Column("llm_model_id", String(128)),
    Column("version", Integer, nullable=False, default=1, server_default="1"),  # current
    Column("created_at", TS, nullable=False),
    Column("updated_at", TS, nullable=False),
    UniqueConstraint("space", "title_key", name="uq_protocols_space_title"),
)

steps = Table(
    "steps", metadata,
    Column("id", String(36), primary_key=True),
    Column("protocol_id", String(36), ForeignKey("protocols.id", ondelete="CASCADE"),
           nullable=False),
    Column("space", String(64), nullable=False),
    Column("position", Integer, nullable=False),
    Column("label", Text, nullable=False),
    Column("content", Text, nullable=False),
    Column("challenge", JSON, nullable=False),
    Column("updated_at", TS, nullable=False),
    Index("ix_steps_protocol", "protocol_id", "position"),
)

runs = Table(
    "runs", metadata,
    Column("id", String(36), primary_key=True),
    Column("space", String(64), nullable=False),
    Column("protocol_id", String(36), nullable=False),
    Column("caller", String(128), nullable=False),
    Column("status", String(16), nullable=False),
    Column("step_index", Integer, nullable=False),
    Column("challenge", JSON),
    Column("nonce", String(64)),
    Column("head", String(64), nullable=False),
    Column("retry_count", Integer, nullable=False, default=0),
    Column("attempt", Integer, nullable=False, default=1),
    Column("outcome", String(16)),
    Column("outcome_model", String(128)),
    Column("failed_step_id", String(36)),
    Column("message", Text),
    Column("quality_bonus", Float),
    Column("proven", Boolean, nullable=False, default=False, server_default=false()),
    # Every change of a run adds one: a write applies only to the version it read.
    Column("version", Integer, nullable=False, default=0, server_default="0"),
    # The protocol version the run follows to its end, and the rule its chain is hashed by.
    Column("protocol_version", Integer, nullable=False, default=1, server_default="1"),
    Column("chain_rule", String(16), nullable=False, default="kairos-json-1",
           server_default="kairos-json-1"),
    Column("created_at", TS, nullable=False),
    Column("updated_at", TS, nullable=False),
    Index("ix_runs_caller", "caller", "protocol_id", "status"),
    Index("ix_runs_caller_created", "space", "caller", "created_at"),  # learned.previous_start
    Index("ix_runs_space_updated", "space", "updated_at"),
    Index("ix_runs_status_updated", "status", "updated_at"),
)

# Every text a protocol has had, numbered from 1 and never changed: the markdown as stored
# (its content hash = sha256 of its UTF-8 bytes) and its parsed steps, with their ids, as
# the run loop uses them. No foreign key: a deleted protocol's versions that runs follow
# stay.
protocol_versions = Table(
    "protocol_versions", metadata,
    Column("protocol_id", String(36), primary_key=True),
    Column("version", Integer, primary_key=True),
    Column("space", String(64), nullable=False),
    Column("title", Text, nullable=False),
    Column("markdown", Text, nullable=False),
    Column("content_hash", String(64), nullable=False),
    Column("steps", JSON, nullable=False),
    Column("created_at", TS, nullable=False),
)

nonces = Table(
    "nonces", metadata,
    Column("nonce", String(64), primary_key=True),
    Column("run_id", String(36), nullable=False),
    Column("step_index", Integer, nullable=False),
    Column("attempt", Integer, nullable=False),
    Column("issued_at", TS, nullable=False),
)

proofs = Table(
    "proofs", metadata,
    Column("run_id", String(36), primary_key=True),
    Column("seq", Integer, primary_key=True),
    Column("step_uri", Text, nullable=False),
    Column("step_index", Integer, nullable=False),
    Column("record", JSON, nullable=False),
    Column("previous_hash", String(64), nullable=False),
    Column("proof_hash", String(64), nullable=False),
    Column("created_at", TS, nullable=False),
)

attestations = Table(
    "attestations", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("run_id", String(36), nullable=False, index=True),
    Column("space", String(64), nullable=False),
    Column("protocol_id", String(36), nullable=False),
    Column("step_uri", Text, nullable=False),
    Column("outcome", String(16), nullable=False),
    Column("message", Text, nullable=False),
    Column("quality_bonus", Float, nullable=False),
    Column("llm_model_id", String(128)),
    Column("proven", Boolean, nullable=False, default=False, server_default=false()),
    Column("created_at", TS, nullable=False),
)

# A protocol's statistics are kept per space that runs it: a space's own protocols have
# one row (their space's), a built-in one row per space that has run it.
protocol_metrics = Table(
    "protocol_metrics", metadata,
    Column("protocol_id", String(36), primary_key=True),
    Column("space", String(64), primary_key=True),
    Column("runs", Integer, nullable=False, default=0),
    Column("successes", Integer, nullable=False, default=0),
    Column("failures", Integer, nullable=False, default=0),
    Column("quality_bonus", Float, nullable=False, default=0.0),
    Column("last_outcome", String(16)),
    Column("last_run_at", TS),
    Column("per_model", JSON, nullable=False),
)

step_metrics = Table(
    "step_metrics", metadata,
    Column("step_id", String(36), primary_key=True),
    Column("space", String(64), primary_key=True),
    Column("protocol_id", String(36), nullable=False, index=True),
    Column("accepted", Integer, nullable=False, default=0),
    Column("refused", Integer, nullable=False, default=0),
    Column("failures", Integer, nullable=False, default=0),
)

# The statistics of one version of a protocol in one space: summed over the versions, the
# protocol's (``protocol_metrics``).
version_metrics = Table(
    "version_metrics", metadata,
    Column("protocol_id", String(36), primary_key=True),
    Column("version", Integer, primary_key=True),
    Column("space", String(64), primary_key=True),
    Column("runs", Integer, nullable=False, default=0),
    Column("successes", Integer, nullable=False, default=0),
    Column("failures", Integer, nullable=False, default=0),
    Column("quality_bonus", Float, nullable=False, default=0.0),
)

categories = Table(
    "categories", metadata,
    Column("space", String(64), primary_key=True),
    Column("code", String(64), primary_key=True),
    Column("name", Text, nullable=False),
    Column("description", Text, nullable=False, default=""),
)

experiences = Table(
    "experiences", metadata,
    Column("id", String(36), primary_key=True),
    Column("space", String(64), nullable=False, index=True),
    Column("category", String(64), nullable=False),
    Column("title", Text, nullable=False),
    Column("playbook", Text, nullable=False),
    Column("context", Text),
    Column("section", String(16), nullable=False),
    Column("author", Text),
    Column("created_at", TS, nullable=False),
    Column("updated_at", TS, nullable=False),
)

manuals = Table(
    "manuals", metadata,
    Column("id", String(36), primary_key=True),
    Column("space", String(64), nullable=False, index=True),
    Column("category", String(64), nullable=False),
    Column("title", Text, nullable=False),
    Column("content", Text, nullable=False),
    Column("summary", Text),
    Column("author", Text),
    Column("created_at", TS, nullable=False),
    Column("updated_at", TS, nullable=False),
)

# --- search index ----------------------------------------------------------------------------
# One row per searchable record (a protocol, an experience, a manual). Full-text lives in
# the dialect's own index (FTS5 on SQLite), keyed by ``rid``; vectors live in
# ``search_vectors`` (in ``seq`` order: summary, full text, then one per step).

search_docs = Table(
    "search_docs", metadata,
    Column("rid", Integer, primary_key=True, autoincrement=True),
    Column("key", String(80), nullable=False, unique=True),
    Column("kind", String(16), nullable=False),
    Column("entity_id", String(36), nullable=False),
    Column("space", String(64), nullable=False),
    Column("title", Text, nullable=False),
    Column("labels", Text, nullable=False, server_default=""),
    Column("body", Text, nullable=False),
    Column("ntokens", Integer, nullable=False, server_default="0"),
    Column("category", String(64)),
    Column("section", String(16)),
    Column("author", Text),
    Column("updated_at", TS, nullable=False),
    Index("ix_search_docs_space_kind", "space", "kind"),
)

search_vectors = Table(
    "search_vectors", metadata,
    Column("rid", Integer, ForeignKey("search_docs.rid", ondelete="CASCADE"), primary_key=True),
    Column("seq", Integer, primary_key=True),
    Column("model_id", String(128), nullable=False),
    Column("vector", LargeBinary, nullable=False),
    Column("role", String(8), nullable=False, server_default="doc"),  # doc, trigger, learned
)

# Learned triggers: queries that led to a proven successful run of a protocol, in its space
# (``search/learning.py``); ``vector`` is the query's as it was searched.
learned_triggers = Table(
    "learned_triggers", metadata,
    Column("id", String(36), primary_key=True),
    Column("space", String(64), nullable=False),
    Column("protocol_id", String(36), ForeignKey("protocols.id", ondelete="CASCADE"),
           nullable=False),
    Column("text", Text, nullable=False),
    Column("text_key", Text, nullable=False),
    Column("runs", Integer, nullable=False, default=1),
    Column("vector", LargeBinary),
    Column("model_id", String(128)),
    Column("created_at", TS, nullable=False),
    Column("last_seen", TS, nullable=False),
    UniqueConstraint("protocol_id", "text_key", name="uq_learned_triggers_text"),
    Index("ix_learned_triggers_protocol", "protocol_id"),
)

# The protocol searches of each caller, kept for a while so that a proven run can learn the
# query that led to it.
search_leads = Table(
    "search_leads", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("space", String(64), nullable=False),
    Column("caller", String(128), nullable=False),
    Column("query", Text, nullable=False),
    Column("protocol_ids", JSON, nullable=False),
    Column("vector", LargeBinary),
    Column("model_id", String(128)),
    Column("created_at", TS, nullable=False),
    Index("ix_search_leads_caller", "space", "caller", "created_at"),
    Index("ix_search_leads_created", "created_at"),
)

index_meta = Table(
    "index_meta", metadata,
    Column("key", String(64), primary_key=True),
    Column("value", Text, nullable=False),
)

# Search sessions stored in the database: used when several replicas share one PostgreSQL
# (the embedded default keeps them in an in-process LRU).
search_sessions = Table(
    "search_sessions", metadata,
    Column("session_id", String(128), primary_key=True),
    Column("last_seen", Float, nullable=False, index=True),
    Column("viewed_ids", JSON, nullable=False),
    Column("cited_ids", JSON, nullable=False),
    Column("last_queries", JSON, nullable=False),
)


def entry_table(kind: str) -> Table:
    """The table of an entry kind: ``experience`` or ``manual``."""
    return experiences if kind == "experience" else manuals


def insert_new(conn: Connection, table: Table) -> Insert:
    """An INSERT into ``table`` that skips a row whose key is already stored (ON CONFLICT
    DO NOTHING, in the connection's dialect)."""
    insert = postgresql.insert if conn.dialect.name == "postgresql" else sqlite.insert
    return insert(table).on_conflict_do_nothing()
