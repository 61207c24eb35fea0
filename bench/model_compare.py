"""A candidate embedding model beside the shipped one, before any integration: plain cosine
recall over the same plain documents and queries as ``match_eval.py``'s baselines, the
latency of a short query, and the model's size, both models in the same run.

    python bench/model_compare.py --candidate DIR [--split tune] [--stores team,tldr]

``DIR`` is a model directory laid out as ``kairos/search/model/`` (``model.onnx``,
``tokenizer.json``, ``model.json``; ``model.json`` may give a ``prefix`` put before every
text). Both models run through ``LocalEmbedder`` (ONNX Runtime, one thread), one text per
run as the engine embeds. ``--doc-prefix`` embeds the documents with another prefix than
the queries (an asymmetric model's ``passage: ``), which the engine cannot do today: it
shows what the single prefix costs. Documents' vectors are kept in ``bench/.cache/``.
Choices are made on the tuning half (the default); results go to
``bench/results/model_compare_<split>.json``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agent_sets import DATA, STYLES, _jsonl, queries, team_documents, team_plain
from corpus import progress_bar, real_items
from harness import machine
from requests_eval import plain_doc
from search_quality import RESULTS

from kairos.domain.doctext import embedding_query
from kairos.search.embedders import MODEL_DIR, LocalEmbedder

CACHE = Path(__file__).resolve().parent / ".cache"
SHORT = ("undo my last commit", "compress a folder", "kill the process on port 8080",
         "rotate database credentials", "new hire", "release", "who owns this domain",
         "disk usage by directory")


def documents(name: str) -> dict[str, str]:
    """The plain documents the baselines of ``match_eval.py`` read, by record id."""
    if name == "team":
        return {d.title: team_plain(d) for d in team_documents()}
    if name == "tldr":
        return {it.page.id: plain_doc(it.page) for it in real_items()
                if it.page.platform == "common"}
    entries = [r for r in _jsonl(DATA / "entries.jsonl") if r["type"] == "entry"]
    return {e["id"]: f"{e['title']}: {e.get('playbook') or e.get('content')}" for e in entries}


def embed_docs(model: LocalEmbedder, texts: list[str], prefix: str | None, label: str,
               console: Console) -> np.ndarray:
    """Every text's vector, one text per run, cached by model, prefix and texts."""
    saved = model.prefix
    if prefix is not None:
        model.prefix = prefix
    key = hashlib.blake2b("\x00".join([model.model_id, model.prefix, *texts]).encode(),
                          digest_size=12).hexdigest()
    path = CACHE / f"compare-{key}.npy"
    try:
        if path.exists():
            return np.load(path)
        out = np.empty((len(texts), model.dim), dtype=np.float32)
        with progress_bar(console) as progress:
            task = progress.add_task(label, total=len(texts), rate="")
            for i, text in enumerate(texts):
                out[i] = model.embed([text])[0]
                progress.advance(task)
        CACHE.mkdir(exist_ok=True)
        np.save(path, out)
        return out
    finally:
        model.prefix = saved


def recall(model: LocalEmbedder, docs: dict[str, str], matrix: np.ndarray,
           split: str, name: str) -> dict[str, dict[str, float]]:
    """Plain cosine R@1 / R@5 per style (and all) of the on-topic queries."""
    ids = list(docs)
    ranks: dict[str, list[int | None]] = {}
    for q in queries(name, split):
        if not q.expected:
            continue
        sims = matrix @ model.embed([embedding_query(q.query)])[0]
        top = [ids[i] for i in np.argsort(-sims)[:5]]
        rank = next((i + 1 for i, x in enumerate(top) if x in q.expected), None)
        for key in (q.style, "all"):
            ranks.setdefault(key, []).append(rank)
    return {k: {"n": len(v), "r1": sum(r == 1 for r in v) / len(v),
                "r5": sum(r is not None for r in v) / len(v)} for k, v in ranks.items()}


def latency(models: list[LocalEmbedder], rounds: int) -> list[dict[str, float]]:
    """Per short query of each model, the models interleaved query by query: the median
    wall time and the median CPU time of the calling thread (ONNX Runtime runs a
    one-thread session on it), which a busy machine's preemptions leave out."""
    wall: list[list[float]] = [[] for _ in models]
    cpu: list[list[float]] = [[] for _ in models]
    for m in models:
        for q in SHORT:
            m.embed([q])
    for _ in range(rounds):
        for q in SHORT:
            for i, m in enumerate(models):
                t0, c0 = time.perf_counter(), time.thread_time()
                m.embed([q])
                cpu[i].append(time.thread_time() - c0)
                wall[i].append(time.perf_counter() - t0)
    return [{"wall_ms": 1000 * float(np.median(w)), "cpu_ms": 1000 * float(np.median(c))}
            for w, c in zip(wall, cpu, strict=True)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--candidate", type=Path, required=True)
    parser.add_argument("--split", choices=("tune", "test"), default="tune")
    parser.add_argument("--stores", default="team,tldr,entries")
    parser.add_argument("--doc-prefix", default=None,
                        help="the candidate's documents with this prefix instead")
    parser.add_argument("--rounds", type=int, default=25, help="latency rounds of 8 queries")
    args = parser.parse_args()
    console = Console(stderr=True)
    shipped = LocalEmbedder(MODEL_DIR, threads=1).load()
    candidate = LocalEmbedder(args.candidate, threads=1).load()
    models = {"shipped": shipped, "candidate": candidate}
    out: dict[str, Any] = {"split": args.split, "machine": machine(), "models": {
        k: {"model_id": m.model_id, "prefix": m.prefix,
            "onnx_mb": (m.model_dir / "model.onnx").stat().st_size / 1e6}
        for k, m in models.items()}, "doc_prefix": args.doc_prefix, "stores": {}}
    for name in args.stores.split(","):
        docs = documents(name)
        texts = list(docs.values())
        out["stores"][name] = {
            k: recall(m, docs, embed_docs(m, texts, args.doc_prefix if k == "candidate"
                                          else None, f"{name}: {k}", console),
                      args.split, name)
            for k, m in models.items()}
    a, b = latency([shipped, candidate], args.rounds)
    out["latency_ms"] = {"shipped": a, "candidate": b,
                         "ratio": {k: b[k] / a[k] for k in a}}
    out["load_end"] = machine()["load_avg"]
    report(out, Console(width=150))
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"model_compare_{args.split}.json").write_text(json.dumps(out, indent=1))


def report(out: dict[str, Any], console: Console) -> None:
    ids = {k: v["model_id"] for k, v in out["models"].items()}
    table = Table(title=f"Plain cosine, {out['split']} half: {ids['shipped']} vs "
                        f"{ids['candidate']} (R@1 / R@5)")
    for col in ("store", "style", "n", "shipped", "candidate", "Δ R@5"):
        table.add_column(col)
    for name, by_model in out["stores"].items():
        for style in ("all", *STYLES):
            a, b = by_model["shipped"].get(style), by_model["candidate"].get(style)
            if a and b:
                table.add_row(name, style, str(a["n"]), f"{a['r1']:.3f} / {a['r5']:.3f}",
                              f"{b['r1']:.3f} / {b['r5']:.3f}", f"{b['r5'] - a['r5']:+.3f}")
    console.print(table)
    lat, m = out["latency_ms"], out["models"]
    a, b, r = lat["shipped"], lat["candidate"], lat["ratio"]
    console.print(f"short query, median wall / CPU: shipped {a['wall_ms']:.2f} / "
                  f"{a['cpu_ms']:.2f} ms, candidate {b['wall_ms']:.2f} / {b['cpu_ms']:.2f} ms "
                  f"({r['wall_ms']:.2f}× / {r['cpu_ms']:.2f}×); model.onnx "
                  f"{m['shipped']['onnx_mb']:.1f} MB vs {m['candidate']['onnx_mb']:.1f} MB; "
                  f"load {out['machine']['load_avg']} → {out['load_end']}")


if __name__ == "__main__":
    main()
