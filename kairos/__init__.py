"""KAIROS: a memory server for AI agents (protocols with proof chains, experiences and
manuals)."""

from __future__ import annotations


def version() -> str:
    """The installed distribution's version ("0" when running from a bare source tree)."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed

    try:
        return installed("kairos")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        return "0"
