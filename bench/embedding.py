"""The local embedding model on its own: load time, query latency, bulk throughput, and
agreement with sentence-transformers' vectors (tests/data/minilm_reference.npz).

    python bench/embedding.py [--model-dir DIR ...] [--threads 1 2] [--json FILE]

Each model directory is measured in the same run, one after the other (load in a fresh
subprocess, so imports and file reads count), and printed as a table of medians.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kairos.search.embedders import MODEL_DIR, LocalEmbedder  # noqa: E402

REFERENCE = ROOT / "tests" / "data" / "minilm_reference.npz"
QUERIES = ["publish a new release", "shrink all my holiday photos to half their size",
           "how do i uncompress a tar.gz", "list open ports", "undo my last git commit",
           "convert a video to gif", "check disk usage of a folder", "find files by name"]

_LOAD = """
import sys, time
t = time.perf_counter()
from kairos.search.embedders import LocalEmbedder
e = LocalEmbedder(__import__('pathlib').Path(sys.argv[1])).load()
e.embed(['warm'])
print(time.perf_counter() - t)
"""


def load_seconds(model_dir: Path, repeat: int = 5) -> float:
    """Import + tokenizer + graph + first embedding, in a fresh interpreter."""
    times = [float(subprocess.run([sys.executable, "-c", _LOAD, str(model_dir)], cwd=ROOT,
                                  capture_output=True, text=True, check=True).stdout)
             for _ in range(repeat)]
    return statistics.median(times)


def measure(model_dir: Path, threads: int) -> dict[str, Any]:
    model = LocalEmbedder(model_dir, threads=threads).load()
    data = np.load(REFERENCE)
    texts = [str(t) for t in data["texts"]]
    for q in QUERIES:
        model.embed([q])
    lat = []
    for _ in range(25):
        for q in QUERIES:
            t = time.perf_counter()
            model.embed([q])
            lat.append((time.perf_counter() - t) * 1000)
    t = time.perf_counter()
    vectors = model.embed(texts)
    bulk = len(texts) / (time.perf_counter() - t)
    cos = np.sum(vectors * data["vectors"], axis=1)
    return {"model_id": model.model_id, "threads": threads,
            "query_ms_p50": statistics.median(lat),
            "query_ms_p99": float(np.percentile(lat, 99)),
            "bulk_texts_per_s": bulk,
            "cosine_mean": float(cos.mean()), "cosine_min": float(cos.min())}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model-dir", type=Path, nargs="+", default=[MODEL_DIR])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    rows = []
    for model_dir in args.model_dir:
        load = load_seconds(model_dir)
        for threads in args.threads:
            row = {"model_dir": str(model_dir), "load_s": load, **measure(model_dir, threads)}
            rows.append(row)
    print("| model | threads | load s | query p50 / p99 ms | bulk texts/s | cosine mean / min |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['model_id']} | {r['threads']} | {r['load_s']:.2f} | "
              f"{r['query_ms_p50']:.2f} / {r['query_ms_p99']:.2f} | "
              f"{r['bulk_texts_per_s']:.0f} | {r['cosine_mean']:.4f} / {r['cosine_min']:.4f} |")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
