"""A deterministic embedder for unit tests: hashed bag of words, unit length."""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Sequence


class HashEmbedder:
    name = "fake"

    def __init__(self, dim: int = 256, ready: bool = True) -> None:
        self.dim = dim
        self._ready = ready

    @property
    def ready(self) -> bool:
        return self._ready

    @property
    def state(self) -> str:
        return "ready" if self._ready else "loading"

    def load(self) -> HashEmbedder:
        return self

    def probe(self) -> None:
        """Nothing to ask: the dimension is given."""

    def verify(self) -> list[str]:
        return []

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        out = []
        for text in texts:
            vec = [0.0] * self.dim
            for word in re.findall(r"[a-z0-9]+", text.lower()):
                h = int(hashlib.md5(word.encode()).hexdigest(), 16)
                vec[h % self.dim] += 1.0
            norm = math.sqrt(sum(v * v for v in vec)) or 1.0
            out.append([v / norm for v in vec])
        return out


HashEmbedder.model_id = "fake:hash:256"  # type: ignore[attr-defined]
