"""Held-out retrieval of knowledge entries: requests in people's words against the
experiences and manuals of bench/data/entries.jsonl, through the real unified search
(``Kairos.search_entries``), beside plain all-MiniLM-L6-v2 cosine over "<title>: <body>"
texts of the same entries, computed in the same run.

    python bench/entries_eval.py --split tune [--evidence FILE]   # choices are made here
    python bench/entries_eval.py --split test                     # and reported here

Every entry is written through ``Kairos.write_entry`` (validation and the duplicate check
included); a refused entry is an error in the data. Reported: recall@1 / recall@5 / MRR@10
of the labelled requests (ranked with min_score 0), the share of title-level requests whose
entry clears the default min_score, and the share of off-topic requests with no result at
the default min_score. ``--evidence`` writes each request's candidates with the engine's
raw evidence ([entry id, dense, text] per hit). The requests were
split once with a fixed seed (bench/data/check_entries.py checks it).
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

from kairos.domain.errors import KairosError
from kairos.search.embedders import LocalEmbedder

DATA = Path(__file__).resolve().parent / "data" / "entries.jsonl"
KINDS = ("experience", "manual")
KIND_ORDER = ("title", "body", "typo")


def load(split: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    rows = [json.loads(line) for line in DATA.read_text("utf-8").splitlines() if line]
    entries = [r for r in rows if r["type"] == "entry"]
    requests = [r for r in rows if r["type"] == "request" and split in ("all", r["split"])]
    return entries, requests


def body(entry: dict[str, Any]) -> str:
    return str(entry.get("playbook") or entry.get("content"))


def _rank_of(order: list[str], expected: set[str]) -> int | None:
    return next((i + 1 for i, e in enumerate(order[:10]) if e in expected), None)


def write_all(k: Any, entries: list[dict[str, Any]], console: Console) -> dict[str, str]:
    """Each entry through the real write path; the stored entity id → the dataset id."""
    ids: dict[str, str] = {}
    for e in entries:
        fields = {key: v for key, v in e.items() if key not in ("type", "id")}
        try:
            out = k.write_entry(fields)
        except KairosError as exc:
            sys.exit(f"{e['id']} refused by write_entry: {exc}")
        ids[str(out["entity_id"])] = e["id"]
        if out.get("recommendation") == "review_first":
            near = [ids.get(d.get("entity_id"), "?") for d in out.get("duplicates", [])]
            console.print(f"[yellow]{e['id']}: duplicate check says review_first "
                          f"(near {near})[/yellow]")
    return ids


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--split", choices=("tune", "test", "all"), default="tune")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    parser.add_argument("--evidence", type=Path, default=None,
                        help="write each request's candidates with the engine's raw evidence "
                             "(dense, text) here")
    args = parser.parse_args()

    console = Console(stderr=True)
    entries, requests = load(args.split)
    labelled = [r for r in requests if r["expected"]]
    off_topic = [r for r in requests if not r["expected"]]
    model = LocalEmbedder(threads=1).load()
    home = Path(tempfile.mkdtemp(prefix="kairos-entries-"))
    k = open_kairos(home, model)
    try:
        ids = write_all(k, entries, console)
        ranks: dict[str, int | None] = {}
        cleared: list[bool] = []
        quiet: list[bool] = []
        top_off: list[float] = []
        evidence = []
        for r in requests:
            expected = set(r["expected"])
            ranked = k.search_entries({"query": r["query"], "types": list(KINDS),
                                       "limit": 10, "min_score": 0})["results"]
            found = [ids.get(x["entity_id"], "?") for x in ranked]
            default = k.search_entries({"query": r["query"], "types": list(KINDS),
                                        "limit": 10})["results"]
            if expected:
                ranks[r["id"]] = _rank_of(found, expected)
                if r["kind"] == "title":
                    cleared.append(any(ids.get(x["entity_id"]) in expected for x in default))
            else:
                quiet.append(not default)
                top_off.append(float(ranked[0]["score"]) if ranked else 0.0)
            if args.evidence:
                hits = k.search_engine.candidates.rank(r["query"], space="default",
                                                       kinds=KINDS).hits
                evidence.append({**r, "candidates": [[ids.get(h.entity_id, "?"), h.dense, h.text]
                                                     for h in hits]})
    finally:
        k.close()
        shutil.rmtree(home, ignore_errors=True)

    docs = [f"{e['title']}: {body(e)}" for e in entries]
    sims = model.embed([r["query"] for r in labelled]) @ model.embed(docs).T
    cos = {r["id"]: _rank_of([entries[i]["id"] for i in np.argsort(-sims[j])[:10]],
                             set(r["expected"]))
           for j, r in enumerate(labelled)}
    methods = {"all-MiniLM-L6-v2 cosine": metrics([cos[r["id"]] for r in labelled]),
               "KAIROS search_entries": metrics([ranks[r["id"]] for r in labelled])}
    groups = {kind: [r for r in labelled if r["kind"] == kind] for kind in KIND_ORDER}
    by_kind = {kind: {"all-MiniLM-L6-v2 cosine": metrics([cos[r["id"]] for r in group]),
                      "KAIROS search_entries": metrics([ranks[r["id"]] for r in group])}
               for kind, group in groups.items() if group}

    table = Table(title=f"entries, {args.split}: {len(labelled)} labelled, {len(off_topic)} "
                        f"off-topic, {len(entries)} entries")
    for col in ("requests", "method", "recall@1", "recall@5", "MRR@10"):
        table.add_column(col)
    rows = [("all", len(labelled), methods)] + [(kind, len(groups[kind]), v)
                                                 for kind, v in by_kind.items()]
    for name, n, ms in rows:
        for method in methods:
            m = ms[method]
            table.add_row(f"{name} ({n})", method, f"{m['recall@1']:.3f}",
                          f"{m['recall@5']:.3f}", f"{m['mrr@10']:.3f}")
    Console().print(table)
    Console().print(f"title-level requests whose entry clears the default min_score: "
                    f"{sum(cleared)}/{len(cleared)}; off-topic with no result at the default "
                    f"min_score: {sum(quiet)}/{len(quiet)}")
    if top_off:
        Console().print(f"off-topic top scores (min_score 0): median {np.median(top_off):.3f}, "
                        f"max {max(top_off):.3f}")
    if args.evidence:
        args.evidence.write_text("\n".join(json.dumps(e) for e in evidence) + "\n")
    out = args.json or RESULTS / f"entries_{args.split}.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(
        {"split": args.split, "entries": len(entries), "requests": len(labelled),
         "off_topic": len(off_topic), "model_id": model.model_id, "methods": methods,
         "by_kind": {kind: {"requests": len(groups[kind]), **v} for kind, v in by_kind.items()},
         "title_cleared": [sum(cleared), len(cleared)],
         "off_topic_no_result": [sum(quiet), len(quiet)]}, indent=2))


if __name__ == "__main__":
    main()
