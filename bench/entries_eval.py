"""Held-out retrieval of knowledge entries: requests in people's words against the
experiences and manuals of bench/data/entries.jsonl, through the real unified search
(``Kairos.search_entries``), beside plain all-MiniLM-L6-v2 cosine over "<title>: <body>".

    python bench/entries_eval.py --split tune [--evidence FILE]   # choices are made here
    python bench/entries_eval.py --split test                     # and reported here

Reported: recall@1 / recall@5 / MRR@10 of the labelled requests (ranked with min_score 0),
the share of title-level requests whose entry clears the default min_score, and the share
of off-topic requests with no result at the default min_score. ``--evidence`` writes each
request's candidates with the engine's raw evidence for bench/calibrate.py --entries.
The data was split once with a fixed seed.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from corpus import open_kairos
from search_quality import RESULTS, metrics

from kairos.search.embedders import LocalEmbedder

DATA = Path(__file__).resolve().parent / "data" / "entries.jsonl"
KINDS = ("experience", "manual")


def load(split: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    rows = [json.loads(line) for line in DATA.read_text("utf-8").splitlines() if line]
    entries = [r for r in rows if r["type"] == "entry"]
    requests = [r for r in rows if r["type"] == "request" and split in ("all", r["split"])]
    return entries, requests


def _rank_of(order: list[str], expected: set[str]) -> int | None:
    return next((i + 1 for i, e in enumerate(order[:10]) if e in expected), None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--split", choices=("tune", "test", "all"), default="tune")
    parser.add_argument("--evidence", type=Path, default=None)
    args = parser.parse_args()
    entries, requests = load(args.split)
    model = LocalEmbedder().load()
    home = Path(tempfile.mkdtemp(prefix="kairos-entries-"))
    k = open_kairos(home, model)
    try:
        ids: dict[str, str] = {}
        for e in entries:
            fields = {key: v for key, v in e.items() if key not in ("type", "id")}
            ids[str(k.write_entry(fields)["entity_id"])] = e["id"]
        ranks, cleared, quiet, evidence = [], [], [], []
        for r in requests:
            expected = set(r["expected"])
            ranked = k.search_entries({"query": r["query"], "types": list(KINDS),
                                       "limit": 10, "min_score": 0})["results"]
            found = [ids.get(x["entity_id"], "?") for x in ranked]
            default = k.search_entries({"query": r["query"], "types": list(KINDS)})
            if expected:
                ranks.append(_rank_of(found, expected))
                if r["kind"] == "title":
                    cleared.append(any(ids.get(x["entity_id"]) in expected
                                       for x in default["results"]))
            else:
                quiet.append(not default["results"])
            if args.evidence:
                hits = k.search_engine.rank(r["query"], space="default", kinds=KINDS).hits
                evidence.append({**r, "candidates": [[ids.get(h.entity_id, "?"), h.dense, h.text]
                                                     for h in hits]})
    finally:
        k.close()
        shutil.rmtree(home, ignore_errors=True)
    labelled = [r for r in requests if r["expected"]]
    docs = [f"{e['title']}: {e.get('playbook') or e.get('content')}" for e in entries]
    sims = model.embed([r["query"] for r in labelled]) @ model.embed(docs).T
    cos = [_rank_of([entries[i]["id"] for i in np.argsort(-sims[j])[:10]], set(r["expected"]))
           for j, r in enumerate(labelled)]
    methods = {"all-MiniLM-L6-v2 cosine": metrics(cos), "KAIROS search_entries": metrics(ranks)}
    table = Table(title=f"entries, {args.split}: {len(labelled)} labelled, {len(quiet)} "
                        f"off-topic, {len(entries)} entries")
    for col in ("method", "recall@1", "recall@5", "MRR@10"):
        table.add_column(col)
    for name, m in methods.items():
        table.add_row(name, f"{m['recall@1']:.3f}", f"{m['recall@5']:.3f}", f"{m['mrr@10']:.3f}")
    Console().print(table)
    Console().print(f"title-level requests whose entry clears the default min_score: "
                    f"{sum(cleared)}/{len(cleared)}; off-topic with no result: "
                    f"{sum(quiet)}/{len(quiet)}")
    if args.evidence:
        args.evidence.write_text("\n".join(json.dumps(e) for e in evidence) + "\n")
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"entries_{args.split}.json").write_text(json.dumps(
        {"split": args.split, "methods": methods, "title_cleared": [sum(cleared), len(cleared)],
         "off_topic_no_result": [sum(quiet), len(quiet)]}, indent=2))


if __name__ == "__main__":
    main()
