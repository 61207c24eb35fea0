"""Time and randomness, the two inputs the pure engine takes from outside."""

from __future__ import annotations

import secrets
from datetime import UTC, datetime

from ..store.schema import stamp


def now() -> str:
    return stamp(datetime.now(UTC))


def new_nonce() -> str:
    return secrets.token_hex(16)
