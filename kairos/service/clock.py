"""Time and randomness, the two inputs the pure engine takes from outside."""

from __future__ import annotations

import secrets
from datetime import UTC, datetime


def stamp(moment: datetime) -> str:
    """``moment`` as the store writes a time."""
    return moment.isoformat(timespec="microseconds")


def now() -> str:
    return stamp(datetime.now(UTC))


def new_nonce() -> str:
    return secrets.token_hex(16)
