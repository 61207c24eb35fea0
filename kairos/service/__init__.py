"""Use cases: the one API every surface calls."""

from .app import Kairos
from .protocols import Caller

__all__ = ["Caller", "Kairos"]
