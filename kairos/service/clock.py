"""Time and randomness, the two inputs the pure engine takes from outside."""

from __future__ import annotations

import secrets
from datetime import UTC, datetime


def now(moment: datetime | None = None) -> str:
    """``moment`` (default: now) as the store writes a time."""
    return (moment or datetime.now(UTC)).isoformat(timespec="microseconds")


def new_nonce() -> str:
    return secrets.token_hex(16)
