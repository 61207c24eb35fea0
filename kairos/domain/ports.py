"""What the services need from the outside world, as Protocols: the implementations live
in ``search.embedders``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import numpy as np


class Embedder(Protocol):
    """Turns texts into unit vectors (``embed``; ``EmbedderUnavailable`` when it cannot).

    ``ready`` is False while a model cannot embed (a broken install, or the provider
    ``none``): searches then use text alone instead of failing, and ``state`` says why.
    ``model_id`` names the vector space (provider, model, dimension): when it changes,
    every stored vector is embedded again."""

    @property
    def name(self) -> str: ...

    @property
    def ready(self) -> bool: ...

    @property
    def state(self) -> str: ...

    @property
    def model_id(self) -> str: ...

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...

    def load(self) -> object:
        """Do the model's start-up work now (a server does it before its first request)
        rather than during the first call."""

    def probe(self) -> None:
        """Complete ``model_id`` where the provider must be asked for it (a remote model's
        dimension, once it answers)."""

    def verify(self) -> list[str]:
        """The model's files that are not as shipped (empty when intact or remote)."""


__all__ = ["Embedder"]
