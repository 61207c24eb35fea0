"""Learned triggers, measured by replay: after one pass of proven runs, does a paraphrase of
a learned query find its protocol first?

    python bench/learning_eval.py --split tune     # the half choices are made on
    python bench/learning_eval.py --split test     # the half that is reported

On the team store (``agent_sets.py``), for each line of ``bench/data/replay.jsonl`` (a
query an agent sent, the protocol it led to, and a paraphrase written apart): one agent
(its own caller id) calls kairos_search with the query, runs the protocol through
``kairos_begin`` / ``kairos_next`` / ``kairos_attest`` answering every challenge as a step
that went well, the last one with its solution (a proven success). Reported, before and
after that pass, on the same store: how often kairos_search puts the protocol first for the
paraphrase (its first match), and for the query itself; and, so that learning is seen not
to hurt other queries, the team query set's half (first match right, off-topic with no
match). Results: ``bench/results/learning_<split>.json``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agent_sets import DATA, open_store
from harness import machine
from match_eval import agent_view, summarise
from rich.console import Console
from search_quality import RESULTS

from kairos.search.embedders import LocalEmbedder
from kairos.service import Caller, Kairos


def solution(challenge: dict[str, Any]) -> dict[str, Any]:
    """The answer of a step that went well."""
    kind = challenge["type"]
    base = {"type": kind, "nonce": challenge["nonce"], "proof_hash": challenge["proof_hash"]}
    if kind == "shell":
        return {**base, "shell": {"exit_code": 0, "stdout": "", "stderr": ""}}
    if kind == "mcp":
        return {**base, "mcp": {"tool_name": challenge["mcp"]["tool_name"], "success": True,
                                "arguments": {}, "result": None}}
    if kind == "user_input":
        return {**base, "user_input": {"confirmation": "yes"}}
    return {**base, "comment": {"text": "Replayed by the learning benchmark: checked "
                                        "the outcome against the dashboard numbers."}}


def prove(k: Kairos, uri: str, caller: Caller) -> dict[str, Any]:
    """One proven successful run of the protocol at ``uri``."""
    steps = [s["uri"] for s in k.dump(uri, caller, protocol=True)["steps"]]
    response = k.begin(steps[0], caller)
    for nxt in steps[1:]:
        response = k.next(nxt, solution(response["challenge"]), caller)
        if "error_code" in response:
            raise SystemExit(f"{uri}: refused: {response['message']}")
    return k.attest(steps[-1], "success", "replayed", caller,
                    solution=solution(response["challenge"]))


def first(k: Kairos, query: str) -> str | None:
    choices = k.search(query, Caller(id="reader"))["choices"]
    return choices[0]["chain_label"] if choices[0]["role"] == "match" else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--split", choices=("tune", "test"), default="tune")
    args = parser.parse_args()
    console = Console(stderr=True)
    pairs = [json.loads(line) for line in (DATA / "replay.jsonl").read_text().splitlines()
             if line and json.loads(line)["split"] == args.split]
    root = Path(tempfile.mkdtemp(prefix="kairos-learning-"))
    out: dict[str, Any] = {"split": args.split, "pairs": len(pairs), "machine": machine()}
    try:
        store = open_store("team", root, LocalEmbedder(threads=1).load(), args.split, console)
        k = store.kairos
        uris = {p["chain_label"]: p["uri"] for p in k.list_protocols(limit=500)["items"]}

        def queries() -> dict[str, Any]:
            rows = [{"id": q.id, "query": q.query, "style": q.style,
                     "expected": q.expected, "agent": agent_view(store, q.query),
                     "ranking": [], "cosine": [], "bm25": []} for q in store.queries]
            figures = summarise(rows)
            return {"first_match_right": figures.get("agent", {}).get("r1"),
                    "off_topic_no_match": figures.get("off_topic_no_match")}

        before = {"paraphrase": [first(k, p["paraphrase"]) == p["protocol"] for p in pairs],
                  "query": [first(k, p["query"]) == p["protocol"] for p in pairs],
                  "queries": queries()}
        for i, p in enumerate(pairs):
            agent = Caller(id=f"replay-{i}")
            k.search(p["query"], agent)
            k.search_engine.learning.flush()
            attested = prove(k, uris[p["protocol"]], agent)
            assert attested["proven"], attested
        learned = sum(bool(k.triggers(uris[p["protocol"]])["learned"]) for p in pairs)
        after = {"paraphrase": [first(k, p["paraphrase"]) == p["protocol"] for p in pairs],
                 "query": [first(k, p["query"]) == p["protocol"] for p in pairs],
                 "queries": queries()}
        k.close()
    finally:
        shutil.rmtree(root, ignore_errors=True)
    for name, result in (("before", before), ("after", after)):
        out[name] = {"paraphrase_first": sum(result["paraphrase"]) / len(pairs),
                     "query_first": sum(result["query"]) / len(pairs), **result["queries"]}
    out["protocols_with_learned_triggers"] = learned
    out["missed_after"] = [p["paraphrase"] for p, ok in zip(pairs, after["paraphrase"],
                                                            strict=True) if not ok]
    out["load_end"] = machine()["load_avg"]
    Console().print_json(json.dumps({k: v for k, v in out.items() if k != "machine"}))
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"learning_{args.split}.json").write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
