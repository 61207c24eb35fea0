"""JSON as text: pretty for people (the CLI, resources), compact for the wire and lines."""

from __future__ import annotations

import json
from typing import Any


def pretty(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=2)


def compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


__all__ = ["compact", "pretty"]
