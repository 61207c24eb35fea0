"""initial schema

Revision ID: 0001
Revises:
Create Date: 2026-11-22
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:

    op.create_table(
        "attestations",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("run_id", sa.String(length=36), nullable=False),
        sa.Column("space", sa.String(length=64), nullable=False),
        sa.Column("protocol_id", sa.String(length=36), nullable=False),
        sa.Column("step_uri", sa.Text(), nullable=False),
        sa.Column("outcome", sa.String(length=16), nullable=False),
        sa.Column("message", sa.Text(), nullable=False),
        sa.Column("quality_bonus", sa.Float(), nullable=False),
        sa.Column("llm_model_id", sa.String(length=128), nullable=True),
        sa.Column("created_at", sa.String(length=32), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("attestations", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_attestations_run_id"), ["run_id"], unique=False)

    op.create_table(
        "categories",
        sa.Column("space", sa.String(length=64), nullable=False),
        sa.Column("code", sa.String(length=64), nullable=False),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("space", "code"),
    )
    op.create_table(
        "experiences",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("space", sa.String(length=64), nullable=False),
        sa.Column("category", sa.String(length=64), nullable=False),
        sa.Column("title", sa.Text(), nullable=False),
        sa.Column("playbook", sa.Text(), nullable=False),
        sa.Column("context", sa.Text(), nullable=True),
        sa.Column("section", sa.String(length=16), nullable=False),
        sa.Column("author", sa.Text(), nullable=True),
        sa.Column("created_at", sa.String(length=32), nullable=False),
        sa.Column("updated_at", sa.String(length=32), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("experiences", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_experiences_space"), ["space"], unique=False)

    op.create_table(
        "manuals",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("space", sa.String(length=64), nullable=False),
        sa.Column("category", sa.String(length=64), nullable=False),
        sa.Column("title", sa.Text(), nullable=False),
        sa.Column("content", sa.Text(), nullable=False),
        sa.Column("summary", sa.Text(), nullable=True),
        sa.Column("author", sa.Text(), nullable=True),
        sa.Column("created_at", sa.String(length=32), nullable=False),
        sa.Column("updated_at", sa.String(length=32), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("manuals", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_manuals_space"), ["space"], unique=False)

    op.create_table(
        "nonces",
        sa.Column("nonce", sa.String(length=64), nullable=False),
        sa.Column("run_id", sa.String(length=36), nullable=False),
        sa.Column("step_index", sa.Integer(), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("issued_at", sa.String(length=32), nullable=False),
        sa.PrimaryKeyConstraint("nonce"),
    )
    op.create_table(
        "proofs",
        sa.Column("run_id", sa.String(length=36), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("step_uri", sa.Text(), nullable=False),
        sa.Column("step_index", sa.Integer(), nullable=False),
        sa.Column("record", sa.JSON(), nullable=False),
        sa.Column("previous_hash", sa.String(length=64), nullable=False),
        sa.Column("proof_hash", sa.String(length=64), nullable=False),
        sa.Column("created_at", sa.String(length=32), nullable=False),
        sa.PrimaryKeyConstraint("run_id", "seq"),
    )
    op.create_table(
        "protocol_metrics",
        sa.Column("protocol_id", sa.String(length=36), nullable=False),
        sa.Column("space", sa.String(length=64), nullable=False),
        sa.Column("runs", sa.Integer(), nullable=False),
        sa.Column("successes", sa.Integer(), nullable=False),
        sa.Column("failures", sa.Integer(), nullable=False),
        sa.Column("quality_bonus", sa.Float(), nullable=False),
        sa.Column("last_outcome", sa.String(length=16), nullable=True),
        sa.Column("last_run_at", sa.String(length=32), nullable=True),
        sa.Column("per_model", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("protocol_id"),
    )
    op.create_table(
        "protocols",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("space", sa.String(length=64), nullable=False),
        sa.Column("title", sa.Text(), nullable=False),
        sa.Column("title_key", sa.Text(), nullable=False),
        sa.Column("intro", sa.Text(), nullable=False),
        sa.Column("tags", sa.JSON(), nullable=False),
        sa.Column("builtin", sa.Boolean(), nullable=False),
        sa.Column("source_hash", sa.String(length=64), nullable=True),
        sa.Column("llm_model_id", sa.String(length=128), nullable=True),
        sa.Column("created_at", sa.String(length=32), nullable=False),
        sa.Column("updated_at", sa.String(length=32), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("space", "title_key", name="uq_protocols_space_title"),
    )
    op.create_table(
        "runs",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("space", sa.String(length=64), nullable=False),
        sa.Column("protocol_id", sa.String(length=36), nullable=False),
        sa.Column("caller", sa.String(length=128), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("step_index", sa.Integer(), nullable=False),
        sa.Column("challenge", sa.JSON(), nullable=True),
        sa.Column("nonce", sa.String(length=64), nullable=True),
        sa.Column("head", sa.String(length=64), nullable=False),
        sa.Column("retry_count", sa.Integer(), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("outcome", sa.String(length=16), nullable=True),
        sa.Column("outcome_model", sa.String(length=128), nullable=True),
        sa.Column("failed_step_id", sa.String(length=36), nullable=True),
        sa.Column("message", sa.Text(), nullable=True),
        sa.Column("quality_bonus", sa.Float(), nullable=True),
        sa.Column("created_at", sa.String(length=32), nullable=False),
        sa.Column("updated_at", sa.String(length=32), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.create_index("ix_runs_caller", ["caller", "protocol_id", "status"], unique=False)
        batch_op.create_index("ix_runs_space_updated", ["space", "updated_at"], unique=False)

    op.create_table(
        "step_metrics",
        sa.Column("step_id", sa.String(length=36), nullable=False),
        sa.Column("protocol_id", sa.String(length=36), nullable=False),
        sa.Column("accepted", sa.Integer(), nullable=False),
        sa.Column("refused", sa.Integer(), nullable=False),
        sa.Column("failures", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("step_id"),
    )
    with op.batch_alter_table("step_metrics", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_step_metrics_protocol_id"), ["protocol_id"], unique=False
        )

    op.create_table(
        "steps",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("protocol_id", sa.String(length=36), nullable=False),
        sa.Column("space", sa.String(length=64), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("label", sa.Text(), nullable=False),
        sa.Column("content", sa.Text(), nullable=False),
        sa.Column("challenge", sa.JSON(), nullable=False),
        sa.Column("updated_at", sa.String(length=32), nullable=False),
        sa.ForeignKeyConstraint(["protocol_id"], ["protocols.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("steps", schema=None) as batch_op:
        batch_op.create_index("ix_steps_protocol", ["protocol_id", "position"], unique=False)


def downgrade() -> None:

    with op.batch_alter_table("steps", schema=None) as batch_op:
        batch_op.drop_index("ix_steps_protocol")

    op.drop_table("steps")
    with op.batch_alter_table("step_metrics", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_step_metrics_protocol_id"))

    op.drop_table("step_metrics")
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.drop_index("ix_runs_space_updated")
        batch_op.drop_index("ix_runs_caller")

    op.drop_table("runs")
    op.drop_table("protocols")
    op.drop_table("protocol_metrics")
    op.drop_table("proofs")
    op.drop_table("nonces")
    with op.batch_alter_table("manuals", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_manuals_space"))

    op.drop_table("manuals")
    with op.batch_alter_table("experiences", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_experiences_space"))

    op.drop_table("experiences")
    op.drop_table("categories")
    with op.batch_alter_table("attestations", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_attestations_run_id"))

    op.drop_table("attestations")
