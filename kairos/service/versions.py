"""Which version of a protocol a reader gets. Protocols have one version, their current
text, until versions are stored: this is the one place a ``version`` argument reaches."""

from __future__ import annotations

from typing import cast

from ..domain.caller import Caller
from ..domain.errors import NotFoundError
from ..domain.responses import ProtocolDump, StepDump
from .protocols import ProtocolService

CURRENT = 1  # the version of every protocol's current text


def version_of(protocol_id: str | None) -> int:
    """The version of the protocol ``protocol_id`` that is current (and that a run follows)."""
    return CURRENT


def read_version(protocols: ProtocolService, uri: str, caller: Caller,
                 version: int | None) -> StepDump | ProtocolDump:
    """The text of the step ``uri`` names as it is in ``version`` (None: the current one):
    the whole protocol's dump for its step 1, the step's for another step."""
    step = cast(StepDump, protocols.dump(uri, caller))
    if version is not None and version != version_of(None):
        raise NotFoundError(f"No version {version} of {uri}.", field="version")
    return protocols.dump(uri, caller, protocol=True) if step["position"] == 1 else step


__all__ = ["CURRENT", "read_version", "version_of"]
