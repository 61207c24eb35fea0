"""Embedding providers behind one interface: ``local`` (MiniLM on ONNX Runtime, offline),
``openai`` (any OpenAI-compatible ``/v1/embeddings``) and ``none`` (text search only)."""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Sequence
from contextlib import suppress
from functools import cache
from pathlib import Path
from typing import Any, Self

import numpy as np

from ..domain.ports import Embedder


class EmbedderUnavailable(RuntimeError):
    """Vectors cannot be computed right now; callers fall back to text search."""


def embed(embedder: Embedder, texts: Sequence[str]) -> np.ndarray | None:
    """The vectors of ``texts``, or None when the provider cannot embed now."""
    if not embedder.ready:
        return None
    try:
        return np.asarray(embedder.embed(list(texts)), dtype=np.float32)
    except EmbedderUnavailable:
        return None


def _normalize(matrix: np.ndarray) -> np.ndarray:
    matrix = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return matrix / norms


class Provider:
    """What a provider does unless it says otherwise: nothing to load before the first
    call, nothing to ask the model (``probe``), no shipped files to check (``verify``)."""

    def load(self) -> Self:
        return self

    def probe(self) -> None:
        return None

    def verify(self) -> list[str]:
        return []


class NoEmbedder(Provider):
    """The provider ``none``: text search only."""

    name = "none"
    model_id = "none"
    ready = False
    state = "disabled"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        raise EmbedderUnavailable("the embedding provider is 'none'")


MODEL_DIR = Path(__file__).with_name("model")


class LocalEmbedder(Provider):
    """A sentence-embedding model as an ONNX graph shipped in the package (``model/``: the
    shipped all-MiniLM-L6-v2), run by ONNX Runtime on the CPU with the Hugging Face
    tokenizer. The graph pools and normalises, so its output is the sentence vector.
    ``model.json`` names the model and its dimension, and may give a ``prefix`` put before
    every text and the tokenizer's ``pad_id``. Loading takes a fraction of a second and
    happens on first use (or ``load()``), under a lock: there is no "not ready yet" state."""

    name = "local"

    def __init__(self, model_dir: Path | None = None, *, threads: int = 1,
                 batch_size: int = 1) -> None:
        self.model_dir = model_dir or MODEL_DIR
        self.meta = json.loads((self.model_dir / "model.json").read_text("utf-8"))
        self.dim = int(self.meta["dim"])
        self.prefix = str(self.meta.get("prefix", ""))
        self.model_id = "local:{}{}:{}".format(
            str(self.meta["model"]).rsplit("/", 1)[-1],
            "" if self.meta["precision"] == "fp32" else f"-{self.meta['precision']}", self.dim)
        self.threads = threads
        self.batch_size = batch_size
        self._session: Any = None
        self._run_options: Any = None
        self._tokenizer: Any = None
        self._error: str | None = None
        self._lock = threading.Lock()

    def load(self) -> LocalEmbedder:
        """Load the tokenizer and the graph (idempotent; raises EmbedderUnavailable)."""
        if self._session is not None:
            return self
        with self._lock:
            if self._session is None and self._error is None:
                try:
                    import onnxruntime as ort
                    from tokenizers import Tokenizer

                    tokenizer = Tokenizer.from_file(str(self.model_dir / "tokenizer.json"))
                    tokenizer.enable_truncation(max_length=int(self.meta["max_tokens"]))
                    pad_id = int(self.meta.get("pad_id", 0))
                    tokenizer.enable_padding(pad_id=pad_id, pad_token=tokenizer.id_to_token(pad_id))
                    options = ort.SessionOptions()
                    options.intra_op_num_threads = self.threads
                    options.inter_op_num_threads = 1
                    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
                    # Idle worker threads must not spin on the cores the server needs.
                    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
                    options.log_severity_level = 3
                    self._session = ort.InferenceSession(
                        str(self.model_dir / "model.onnx"), options,
                        providers=["CPUExecutionProvider"])
                    # The arena keeps the peak of the largest batch (+240 MB for ten texts
                    # of 256 word pieces); shrinking it after each run costs no measurable
                    # time and keeps the process near its size at start.
                    self._run_options = ort.RunOptions()
                    self._run_options.add_run_config_entry(
                        "memory.enable_memory_arena_shrinkage", "cpu:0")
                    self._tokenizer = tokenizer
                except Exception as exc:  # a broken install: reported through `state`
                    self._error = f"{type(exc).__name__}: {exc}"
        if self._session is None:
            raise EmbedderUnavailable(f"local model {self.state}")
        return self

    def verify(self) -> list[str]:
        """The shipped files whose SHA-256 differs from ``SHA256SUMS`` (empty when intact)."""
        bad = []
        for line in (self.model_dir / "SHA256SUMS").read_text("utf-8").splitlines():
            digest, name = line.split(maxsplit=1)
            path = self.model_dir / name
            if not path.is_file() or hashlib.sha256(path.read_bytes()).hexdigest() != digest:
                bad.append(name)
        return bad

    @property
    def ready(self) -> bool:
        if self._session is None and self._error is None:
            with suppress(EmbedderUnavailable):
                self.load()
        return self._session is not None

    @property
    def state(self) -> str:
        if self._session is not None:
            return "ready"
        return f"failed: {self._error}" if self._error else "not loaded"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.load()
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        # One text per run by default: padding costs as much as text, and on the CPU a batch
        # saves less than its padding costs (protocol texts, 1 thread: 96 texts/s one by one,
        # 87 in batches of 4, 56 in batches of 32, even sorted by length).
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for start in range(0, len(order), self.batch_size):
            chunk = order[start:start + self.batch_size]
            encoded = self._tokenizer.encode_batch([self.prefix + texts[i] for i in chunk])
            ids = np.array([e.ids for e in encoded], dtype=np.int64)
            mask = np.array([e.attention_mask for e in encoded], dtype=np.int64)
            (vectors,) = self._session.run(None, {"input_ids": ids, "attention_mask": mask},
                                           self._run_options)
            out[chunk] = vectors
        return out


@cache
def local_model() -> LocalEmbedder:
    """The shipped model, one per process (search and the comment check share it)."""
    return LocalEmbedder()


class OpenAIEmbedder(Provider):
    """Any OpenAI-compatible embeddings endpoint (OpenAI, TEI, Ollama, vLLM)."""

    name = "openai"

    def __init__(self, base_url: str, model: str, api_key: str = "", *,
                 timeout: float = 30.0, transport: Any = None) -> None:
        import httpx2

        self.base_url = base_url.rstrip("/")
        self.model = model
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx2.Client(timeout=timeout, headers=headers, transport=transport)
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
        import httpx2

        try:
            response = self._client.post(f"{self.base_url}/embeddings",
                                         json={"model": self.model, "input": list(texts)})
            response.raise_for_status()
            data = sorted(response.json()["data"], key=lambda d: d["index"])
            matrix = _normalize(np.array([d["embedding"] for d in data], dtype=np.float32))
        except (httpx2.HTTPError, KeyError, ValueError, TypeError) as exc:
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
        return local_model()
    if kind == "openai":
        return OpenAIEmbedder(base_url, model, api_key)
    if kind == "none":
        return NoEmbedder()
    raise ValueError(f"unknown embedder {kind!r}: expected local, openai or none")
