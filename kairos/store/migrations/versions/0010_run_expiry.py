"""runs are found by status and idle time: the expiry of idle active runs

An index on (status, updated_at) lets every serving process find the active runs idle
past ``run_idle_minutes`` (``service.expiry``) without reading every run.

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-26
"""

from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_runs_status_updated", "runs", ["status", "updated_at"])


def downgrade() -> None:
    op.drop_index("ix_runs_status_updated", table_name="runs")
