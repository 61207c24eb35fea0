"""The benchmark's corpora: tldr pages as protocols (and as manual entries), built once per
run into one growing store that is copied at each corpus size, so the sizes are nested
(1k ⊂ 4.6k ⊂ 7.4k ⊂ synthetic 50k) and every figure of a size reads the same data.

Building is made fast without changing what is stored: vectors are computed in batches
ahead of time (`PrimedEmbedder`, kept on disk in `bench/.cache/` for the next run) and the
advisory duplicate check, which only annotates the mint response, is skipped. The mint
figure is measured on the real path: the last `sample` mints before each size use the live
model and the duplicate check.

The synthetic variants (50k) take their vectors from the page they vary, each moved by
seeded noise (cosine ≈ 0.8 to the source, about what a real variant's summary has to its
page's): embedding their ~300,000 texts would take about two hours on 2 CPUs, and what the
50k figures measure (latency, memory) depends on the number and size of the vectors, not
on their values."""

from __future__ import annotations

import hashlib
import random
import sqlite3
import time
from collections.abc import Callable, Sequence
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from harness import stats
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from workload import Page, load_pages, manual_entry, protocol_markdown, task_query

from kairos.cli.protocols import MINT_BATCH
from kairos.config import load_settings
from kairos.domain import markdown
from kairos.domain.markdown import title_key
from kairos.search.documents import entry_doc, protocol_doc
from kairos.search.embedders import LocalEmbedder
from kairos.service.wiring import open_service
from tests.client import Agent

SYNTHETIC_SIZE = 50_000


def vector_cache(model: LocalEmbedder) -> Path:
    """Where the vectors of ``model`` are kept between runs (one file per model id)."""
    return Path(__file__).parent / ".cache" / (
        model.model_id.replace("/", "_").replace(":", "_") + ".npz")
_CONTEXTS = ("on a build server", "in a CI job", "for a release", "on a fresh machine",
             "during an incident", "in a container", "on a shared host", "for a teammate",
             "before a deploy", "in a scratch directory")


@dataclass(frozen=True)
class Item:
    """One corpus document: the page it comes from, its title and its protocol markdown."""
    page: Page
    title: str
    base: Item | None = None  # the page a synthetic variant varies
    described: bool = False   # the page's description as the protocol's introduction

    @property
    def markdown(self) -> str:
        return protocol_markdown(self.page, with_description=self.described, title=self.title)


@dataclass
class Corpus:
    kind: str                    # "protocol" | "manual"
    size: int
    home: Path                   # a KAIROS_HOME holding kairos.db
    items: list[Item]
    uris: dict[str, int] = field(default_factory=dict)   # step-1 uri → index in items

    @property
    def db(self) -> Path:
        return self.home / "kairos.db"


def real_items() -> list[Item]:
    """Every tldr page, `common` first (the retrieval task's pages, in search_quality's
    order), titled by name, or by id when another page already took the name."""
    pages = load_pages()
    ordered = [p for p in pages if p.platform == "common"] + [
        p for p in pages if p.platform != "common"]
    seen: set[str] = set()
    items = []
    for page in ordered:
        title = page.name if title_key(page.name) not in seen else page.id
        seen.add(title_key(title))
        items.append(Item(page, title))
    return items


def synthetic_items(base: list[Item], total: int = SYNTHETIC_SIZE) -> list[Item]:
    """``base`` plus variants up to ``total``: each a page with its examples reordered,
    one dropped, and a context phrase in every step label, under a new title."""
    rng = random.Random(42)
    out = list(base)
    round_ = 1
    while len(out) < total:
        for item in base:
            if len(out) >= total:
                break
            examples = list(item.page.examples)
            rng.shuffle(examples)
            if len(examples) > 2:
                examples.pop(rng.randrange(len(examples)))
            where = _CONTEXTS[(round_ + len(out)) % len(_CONTEXTS)]
            examples = [{**e, "description": f"{e['description'].rstrip(':')} {where}"}
                        for e in examples]
            page = Page(f"{item.page.id}~{round_}", item.page.platform, item.page.name,
                        item.page.description, examples)
            out.append(Item(page, f"{item.title} ({where}, variant {round_})", item))
        round_ += 1
    return out


def queries(items: Sequence[Item], n: int) -> list[tuple[int, str]]:
    """``n`` (index, query) pairs spread evenly over the common pages among ``items``."""
    pool = [(i, q) for i, it in enumerate(items)
            if it.page.platform == "common" and "~" not in it.page.id
            and (q := task_query(it.page))]
    if n <= 0 or n >= len(pool):
        return pool
    step = len(pool) / n
    return [pool[int(j * step)] for j in range(n)]


class PrimedEmbedder:
    """The local model behind a cache of vectors computed ahead in batches. ``live=True``
    bypasses the cache (a measured mint); ``spent`` adds up the seconds in the model."""

    def __init__(self, model: LocalEmbedder, store: Path | None = None) -> None:
        self.model = model
        self.name, self.model_id = model.name, model.model_id
        self.cache: dict[str, np.ndarray] = {}
        self.live = False
        self.spent = 0.0
        self.store = store
        self._stored: dict[str, np.ndarray] = {}
        if store is not None and store.exists():
            with np.load(store) as data:
                self._stored = dict(zip(data["keys"].tolist(), data["vectors"], strict=True))

    @staticmethod
    def _key(text: str) -> str:
        return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()

    @property
    def ready(self) -> bool:
        return self.model.ready

    @property
    def state(self) -> str:
        return self.model.state

    def _model(self, texts: list[str]) -> np.ndarray:
        started = time.perf_counter()
        vectors = self.model.embed(texts)
        self.spent += time.perf_counter() - started
        return vectors

    def prime(self, texts: Sequence[str], progress: Progress, label: str,
              batch: int = 64) -> None:
        todo = []
        for t in {t for t in texts if t not in self.cache}:
            if (v := self._stored.get(self._key(t))) is not None:
                self.cache[t] = v
            else:
                todo.append(t)
        # By length, so that a batch pads its texts to about the same length.
        todo.sort(key=lambda t: (len(t), t))
        task = progress.add_task(label, total=len(todo), rate="")
        for i in range(0, len(todo), batch):
            chunk = todo[i:i + batch]
            vectors = self._model(chunk)
            self.cache.update(zip(chunk, vectors, strict=True))
            self._stored.update(zip(map(self._key, chunk), vectors, strict=True))
            progress.advance(task, len(chunk))
        progress.remove_task(task)
        if todo and self.store is not None:
            self.store.parent.mkdir(parents=True, exist_ok=True)
            with self.store.open("wb") as f:
                np.savez(f, keys=np.array(list(self._stored)),
                         vectors=np.stack(list(self._stored.values())))

    def derive(self, texts: Sequence[str], source: Sequence[str], seed: str) -> None:
        """Vectors for a synthetic variant's ``texts``: its source's vectors (cycled),
        each moved by noise seeded by ``seed`` and renormalized."""
        base = np.stack([self.cache[t] for t in source])
        rng = np.random.default_rng(int(self._key(seed), 16))
        moved = base[np.arange(len(texts)) % len(base)]
        moved = moved + rng.standard_normal(moved.shape, dtype=np.float32) * (
            0.75 / np.sqrt(moved.shape[1]))
        moved /= np.linalg.norm(moved, axis=1, keepdims=True)
        self.cache.update((t, v) for t, v in zip(texts, moved.astype(np.float32), strict=True)
                          if t not in self.cache)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        texts = list(texts)
        if self.live:
            return self._model(texts)
        missing = [t for t in dict.fromkeys(texts) if t not in self.cache]
        if missing:
            self.cache.update(zip(missing, self._model(missing), strict=True))
        return np.stack([self.cache[t] for t in texts])


def protocol_vector_texts(item: Item) -> tuple[str, ...]:
    return protocol_doc("", "default", markdown.parse(item.markdown)[0], "").vector_texts


def manual_vector_texts(item: Item) -> tuple[str, ...]:
    entry = {k: v.strip() if isinstance(v, str) else v
             for k, v in manual_entry(item.page).items()}
    return entry_doc("manual", {"id": "", "space": "default", "updated_at": "",
                                         **entry}).vector_texts


def progress_bar(console: Console) -> Progress:
    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TextColumn("{task.fields[rate]}"), TimeElapsedColumn(),
                    TimeRemainingColumn(), console=console, transient=True)


def _no_duplicate_check(*_: Any, **__: Any) -> dict[str, Any]:
    return {"duplicates": [], "warnings": []}


def open_kairos(home: Path, embedder: Any, database_url: str | None = None) -> Agent:
    """The service of a store in ``home``, called as an agent's code calls it: JSON values
    in, each validated into its request model as a surface does (``tests.client``)."""
    env = {"KAIROS_HOME": str(home)}
    if database_url:
        env["KAIROS_DATABASE_URL"] = database_url
    return Agent(open_service(load_settings(env=env), embedder=embedder, background=False))


def snapshot(db: Path, home: Path) -> None:
    """A consistent copy of a live SQLite store (WAL included) into ``home``."""
    home.mkdir(parents=True, exist_ok=True)
    with closing(sqlite3.connect(db)) as src, closing(sqlite3.connect(home / "kairos.db")) as dst:
        src.backup(dst)


def build(kind: str, items: list[Item], sizes: Sequence[int], root: Path,
          embedder: PrimedEmbedder, console: Console, *, sample: int = 0,
          database_url: str | None = None) -> tuple[dict[int, Corpus], dict[int, Any]]:
    """Mint (or write, for manuals) ``items`` in order into one store, copying it at each
    size. Returns the corpora and, per size, the figures of the ``sample`` measured
    mints that precede it (real path: live model and duplicate check)."""
    write: Callable[[Agent, list[Item]], list[str]]
    if kind == "protocol":
        def write(k: Agent, chunk: list[Item]) -> list[str]:
            results = k.mint_many([it.markdown for it in chunk], force_update=True)
            return [str(r["items"][0]["uri"]) for r in results if isinstance(r, dict)]
        texts_of, batch = protocol_vector_texts, MINT_BATCH
    else:
        def write(k: Agent, chunk: list[Item]) -> list[str]:
            return [str(k.write_entry(manual_entry(it.page))["entity_id"]) for it in chunk]
        texts_of, batch = manual_vector_texts, 1
    sizes = sorted(sizes)
    work = root / f"build-{kind}{'-pg' if database_url else ''}"
    corpora: dict[int, Corpus] = {}
    measured: dict[int, Any] = {}
    uris: dict[str, int] = {}
    with progress_bar(console) as progress:
        embedder.prime([t for it in items[:sizes[-1]] if it.base is None
                        for t in texts_of(it)], progress,
                       f"embedding {kind} texts (batches of 64)")
        for it in items[:sizes[-1]]:
            if it.base is not None:
                embedder.derive(texts_of(it), texts_of(it.base), it.page.id)
        k = open_kairos(work, embedder, database_url)
        task = progress.add_task(f"writing {kind}s", total=sizes[-1], rate="")
        try:
            for size in sizes:
                lat, model = [], []
                first_live = max(len(uris), size - sample)
                embedder.live = False
                k.search_engine.duplicates.check = _no_duplicate_check  # type: ignore
                for i in range(len(uris), first_live, 64):
                    chunk = list(range(i, min(i + 64, first_live)))
                    uris.update(zip(write(k, [items[j] for j in chunk]), chunk, strict=True))
                    progress.advance(task, len(chunk))
                # The measured mints: live model, duplicate check, in bulk-mint batches.
                embedder.live = True
                k.search_engine.duplicates.__dict__.pop("check", None)
                for i in range(first_live, size, batch):
                    chunk = list(range(i, min(i + batch, size)))
                    embedder.spent = 0.0
                    started = time.perf_counter()
                    uris.update(zip(write(k, [items[j] for j in chunk]), chunk, strict=True))
                    # per protocol, amortized over its batch
                    lat += [(time.perf_counter() - started) / len(chunk)] * len(chunk)
                    model += [embedder.spent / len(chunk)] * len(chunk)
                    progress.update(task, rate=f"measured {len(lat) / sum(lat):.1f}/s")
                    progress.advance(task, len(chunk))
                embedder.live = False
                k.search_engine.background.backfill()  # creates the HNSW index on PostgreSQL
                if lat:
                    measured[size] = {"mints": len(lat), "batch": batch,
                                      "per_second": len(lat) / sum(lat),
                                      "mint": stats(lat), "embedding": stats(model),
                                      "embedding_per_second": len(model) / sum(model)}
                home = work if database_url else root / f"{kind}-{size}"
                if not database_url:
                    snapshot(work / "kairos.db", home)
                corpora[size] = Corpus(kind, size, home, items[:size], dict(uris))
                note = f", measured mint {measured[size]['per_second']:.1f}/s" if lat else ""
                progress.console.print(f"{kind}s: {size} stored{note}")
        finally:
            embedder.live = False
            k.close()
    return corpora, measured
