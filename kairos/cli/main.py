"""``kairos``: thin commands over the service (parse, call, render), one module per group
of commands. ``app`` is the program; importing this module registers every command, and
nothing heavy (database layer, web stack, model) until a command needs it."""

from __future__ import annotations

from . import bundles, data, entries, protocols, runs, server, versions  # noqa: F401  (they register their commands)
from .base import app

__all__ = ["app"]

if __name__ == "__main__":  # pragma: no cover
    app()
