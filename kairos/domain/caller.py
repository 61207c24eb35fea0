"""Who is calling: the space a call may see, the identity that owns its runs, and the form
of a conversation's session id (a caller id and a search session id, contract §5 R10)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from .limits import SESSION_ID_CHARS

BUILTIN_SPACE = "_builtin"
"""The space of the built-in protocols, which every caller may see and run."""

SESSION_PATTERN = rf"^[A-Za-z0-9][A-Za-z0-9._:\-]{{0,{SESSION_ID_CHARS - 1}}}$"
"""A session id: up to ``SESSION_ID_CHARS`` letters, digits and ``. _ : -``."""
_SESSION_ID = re.compile(SESSION_PATTERN)


@dataclass(frozen=True)
class Caller:
    """Who is calling: the space they may see, and the identity that owns their runs."""

    space: str = "default"
    id: str = "local"

    @property
    def visible_spaces(self) -> tuple[str, str]:
        """The spaces whose protocols the caller may see: its own and the built-ins'."""
        return (self.space, BUILTIN_SPACE)

    def sees(self, space: str) -> bool:
        """Whether the caller may see a protocol (or step) stored in ``space``."""
        return space in self.visible_spaces


def valid_session_id(value: object) -> str | None:
    """The id when it is well formed; a malformed id is ignored (None), never an error."""
    return value if isinstance(value, str) and _SESSION_ID.match(value) else None


__all__ = ["BUILTIN_SPACE", "SESSION_PATTERN", "Caller", "valid_session_id"]
