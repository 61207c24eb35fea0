"""Use cases: the one API every surface calls."""

from ..domain.caller import Caller
from .app import Kairos

__all__ = ["Caller", "Kairos"]
