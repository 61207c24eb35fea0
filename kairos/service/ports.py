"""What the service needs from the outside world, as Protocols."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import numpy as np


class Embedder(Protocol):
    """Turns texts into unit vectors. ``ready`` is False while a model is still loading or
    when the provider is ``none``; callers then use text search instead of failing.
    ``model_id`` names the vector space (provider, model, dimension): when it changes, every
    stored vector is re-embedded."""

    name: str

    @property
    def ready(self) -> bool: ...

    @property
    def model_id(self) -> str: ...

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...
