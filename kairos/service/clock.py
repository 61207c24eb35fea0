"""Time and randomness, the two inputs the pure engine takes from outside."""

from __future__ import annotations

import secrets
from datetime import UTC, datetime


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")


def new_nonce() -> str:
    return secrets.token_hex(16)
