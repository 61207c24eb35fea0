"""runs carry a version; a protocol's statistics are kept per space that runs it

- ``runs.version``: every change of a run adds one, and a write applies only to the
  version it read (the run loop's compare-and-swap).
- ``protocol_metrics`` is keyed by protocol and space, ``step_metrics`` by step and space
  (a new column). A space's own protocols keep their one row. The built-in protocols'
  rows mixed the runs of every space: they are counted again, per space, from the runs
  themselves — runs, counted outcomes, quality bonuses and models; per step the accepted
  answers (proofs), the refused ones (each refusal issued a nonce of a later attempt) and
  the failures attested at it.

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-26
"""

from collections import defaultdict
from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None

PROTOCOL_METRICS = sa.table(
    "protocol_metrics", sa.column("protocol_id", sa.String), sa.column("space", sa.String),
    sa.column("runs", sa.Integer), sa.column("successes", sa.Integer),
    sa.column("failures", sa.Integer), sa.column("quality_bonus", sa.Float),
    sa.column("last_outcome", sa.String), sa.column("last_run_at", sa.String),
    sa.column("per_model", sa.JSON))
STEP_METRICS = sa.table(
    "step_metrics", sa.column("step_id", sa.String), sa.column("space", sa.String),
    sa.column("protocol_id", sa.String), sa.column("accepted", sa.Integer),
    sa.column("refused", sa.Integer), sa.column("failures", sa.Integer))
COUNTERS = {"success": "successes", "failure": "failures"}


def _shape(table: str, key: list[str]) -> sa.Table:
    """A metrics table as it stands with ``space`` and the primary key ``key``."""
    columns: list[sa.Column[Any]]
    if table == "protocol_metrics":
        columns = [sa.Column("protocol_id", sa.String(36), nullable=False),
                   sa.Column("space", sa.String(64), nullable=False),
                   *(sa.Column(c, sa.Integer(), nullable=False)
                     for c in ("runs", "successes", "failures")),
                   sa.Column("quality_bonus", sa.Float(), nullable=False),
                   sa.Column("last_outcome", sa.String(16)),
                   sa.Column("last_run_at", sa.String(32)),
                   sa.Column("per_model", sa.JSON(), nullable=False)]
    else:
        columns = [sa.Column("step_id", sa.String(36), nullable=False),
                   sa.Column("protocol_id", sa.String(36), nullable=False, index=True),
                   *(sa.Column(c, sa.Integer(), nullable=False)
                     for c in ("accepted", "refused", "failures")),
                   sa.Column("space", sa.String(64), nullable=False)]
    return sa.Table(table, sa.MetaData(), *columns,
                    sa.PrimaryKeyConstraint(*key, name=f"{table}_pkey"))


def _rekey(table: str, key: list[str]) -> None:
    if op.get_bind().dialect.name == "sqlite":  # the table is made again with the new key
        with op.batch_alter_table(table, recreate="always", copy_from=_shape(table, key)):
            pass
    else:
        op.drop_constraint(f"{table}_pkey", table, type_="primary")
        op.create_primary_key(f"{table}_pkey", table, key)


def upgrade() -> None:
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.add_column(sa.Column("version", sa.Integer(), nullable=False,
                                      server_default="0"))
    with op.batch_alter_table("step_metrics", schema=None) as batch_op:
        batch_op.add_column(sa.Column("space", sa.String(length=64), nullable=False,
                                      server_default=""))
    op.execute("UPDATE step_metrics SET space = COALESCE((SELECT m.space FROM "
               "protocol_metrics m WHERE m.protocol_id = step_metrics.protocol_id), '')")
    with op.batch_alter_table("step_metrics", schema=None) as batch_op:
        batch_op.alter_column("space", server_default=None)
    _rekey("protocol_metrics", ["protocol_id", "space"])
    _rekey("step_metrics", ["step_id", "space"])
    conn = op.get_bind()
    for (pid,) in conn.execute(sa.text("SELECT id FROM protocols WHERE builtin = :yes"),
                               {"yes": True}).all():
        _recount(conn, pid)


def _recount(conn: sa.Connection, pid: str) -> None:
    """A built-in protocol's statistics, per space, from its runs."""
    bind = {"p": pid}
    steps = conn.execute(sa.text("SELECT id, position FROM steps WHERE protocol_id = :p"),
                         bind).all()
    at = {s.position: s.id for s in steps}
    runs = conn.execute(sa.text(
        "SELECT space, outcome, proven, outcome_model, quality_bonus, failed_step_id, "
        "updated_at FROM runs WHERE protocol_id = :p ORDER BY updated_at"), bind).all()
    per_step: dict[tuple[str, str], dict[str, int]] = defaultdict(
        lambda: {"accepted": 0, "refused": 0, "failures": 0})
    for kind, table, extra in (("accepted", "proofs", ""),
                               ("refused", "nonces", " AND x.attempt > 1")):
        for space, index, n in conn.execute(sa.text(
                f"SELECT r.space, x.step_index, COUNT(*) FROM {table} x JOIN runs r "
                f"ON r.id = x.run_id WHERE r.protocol_id = :p{extra} "
                "GROUP BY r.space, x.step_index"), bind).all():
            if index in at:
                per_step[(space, at[index])][kind] += n
    spaces: dict[str, dict[str, Any]] = {}
    for r in runs:
        m = spaces.setdefault(r.space, {
            "protocol_id": pid, "space": r.space, "runs": 0, "successes": 0, "failures": 0,
            "quality_bonus": 0.0, "last_outcome": None, "last_run_at": None,
            "per_model": {}})
        m["runs"] += 1
        m["quality_bonus"] += r.quality_bonus or 0.0
        m["last_run_at"] = r.updated_at
        m["last_outcome"] = r.outcome or m["last_outcome"]
        counted = r.outcome if r.outcome == "failure" or (
            r.outcome == "success" and r.proven) else None
        if counted:
            m[COUNTERS[counted]] += 1
            if r.outcome_model:
                model = m["per_model"].setdefault(r.outcome_model, {})
                model[counted] = model.get(counted, 0) + 1
        if r.failed_step_id:
            per_step[(r.space, r.failed_step_id)]["failures"] += 1
    conn.execute(sa.text("DELETE FROM protocol_metrics WHERE protocol_id = :p"), bind)
    conn.execute(sa.text("DELETE FROM step_metrics WHERE protocol_id = :p"), bind)
    if spaces:
        conn.execute(sa.insert(PROTOCOL_METRICS), list(spaces.values()))
        conn.execute(sa.insert(STEP_METRICS), [
            {"step_id": s.id, "space": space, "protocol_id": pid,
             **per_step[(space, s.id)]} for space in spaces for s in steps])


def downgrade() -> None:
    """Back to one row per protocol and step: a built-in protocol's rows of every space are
    added together, as they were counted before."""
    conn = op.get_bind()
    for table, key, counters in (
            ("protocol_metrics", "protocol_id",
             ("runs", "successes", "failures", "quality_bonus")),
            ("step_metrics", "step_id", ("accepted", "refused", "failures"))):
        sums = ", ".join(f"SUM({c})" for c in counters)
        rows = conn.execute(sa.text(
            f"SELECT {key}, MIN(space), COUNT(*), {sums} FROM {table} GROUP BY {key} "
            "HAVING COUNT(*) > 1")).all()
        for row in rows:
            conn.execute(sa.text(f"DELETE FROM {table} WHERE {key} = :k AND space <> :s"),
                         {"k": row[0], "s": row[1]})
            conn.execute(sa.text(
                f"UPDATE {table} SET " + ", ".join(f"{c} = :{c}" for c in counters)
                + f" WHERE {key} = :k"), {"k": row[0], **dict(zip(counters, row[3:],
                                                                  strict=True))})
    _rekey("step_metrics", ["step_id"])
    _rekey("protocol_metrics", ["protocol_id"])
    with op.batch_alter_table("step_metrics", schema=None) as batch_op:
        batch_op.drop_column("space")
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.drop_column("version")
