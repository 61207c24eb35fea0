"""What the service needs from the outside world, as Protocols."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol


class Embedder(Protocol):
    """Turns texts into unit vectors. ``ready`` is False while a model is still loading or
    when the provider is ``none``; callers then skip vector work instead of failing."""

    name: str

    @property
    def ready(self) -> bool: ...

    def embed(self, texts: Sequence[str]) -> list[list[float]]: ...
