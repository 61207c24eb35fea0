#!/usr/bin/env python3
"""Validate bench/data/requests.jsonl and tests/data/comment_relevance.jsonl.

Standard library only. Exits non-zero on the first class of error found and
prints a summary otherwise.

    python3 bench/data/check_requests.py [--pages PATH]

Checks for requests.jsonl:
  * JSON shape: id, query, expected (list of str), kind, split;
  * ids unique; labelled ids are rq-NNN, off-topic ids are off-NNN;
  * every expected id exists in pages.jsonl with platform "common";
  * off-topic lines have expected == [] and kind "off_topic";
  * split: reproduces the seeded shuffle (seed 20261123, done separately for
    labelled and off-topic lines) and counts are half/half;
  * overlap: the longest common run of words between a query and any
    description (page description or example description) of its expected
    pages is at most 4 words; the maximum is printed.

Checks for comment_relevance.jsonl:
  * JSON shape and allowed labels/sources; ids unique; comment length >= 20;
  * no step_body contains a "PROOF OF WORK:" line; tldr sources exist;
  * at least 60 % of lines are labelled "relevant".
"""

import argparse
import json
import random
import re
import sys
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
#: The tldr pages, in the shared data directory beside the checkout (``../shared``).
DEFAULT_PAGES = ROOT.parent / "shared" / "data" / "tldr" / "pages.jsonl"
SEED = 20261123
MAX_OVERLAP = 4
KINDS = {"goal", "synonym", "typo", "short", "question"}
CR_LABELS = {"relevant", "irrelevant", "filler"}

errors = []


def err(msg):
    errors.append(msg)


def words(text):
    return re.findall(r"[a-z0-9]+", text.lower())


def longest_common_run(a, b):
    """Length of the longest contiguous common word sequence of a and b."""
    best = 0
    prev = [0] * (len(b) + 1)
    for i in range(1, len(a) + 1):
        cur = [0] * (len(b) + 1)
        for j in range(1, len(b) + 1):
            if a[i - 1] == b[j - 1]:
                cur[j] = prev[j - 1] + 1
                if cur[j] > best:
                    best = cur[j]
        prev = cur
    return best


def load_jsonl(path):
    rows = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                err(f"{path.name}:{n}: empty line")
                continue
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as e:
                err(f"{path.name}:{n}: bad JSON: {e}")
    return rows


def expected_split(ids):
    order = list(ids)
    random.Random(SEED).shuffle(order)
    tune = set(order[: len(order) // 2])
    return {i: ("tune" if i in tune else "test") for i in ids}


def check_requests(path, pages):
    rows = load_jsonl(path)
    seen = set()
    labelled, off = [], []
    for r in rows:
        rid = r.get("id")
        if set(r) != {"id", "query", "expected", "kind", "split"}:
            err(f"{rid}: keys {sorted(r)}")
            continue
        if rid in seen:
            err(f"{rid}: duplicate id")
        seen.add(rid)
        if not isinstance(r["query"], str) or not r["query"].strip():
            err(f"{rid}: empty query")
        exp = r["expected"]
        if not isinstance(exp, list) or not all(isinstance(x, str) for x in exp):
            err(f"{rid}: expected must be a list of strings")
            continue
        if len(set(r["expected"])) != len(r["expected"]):
            err(f"{rid}: repeated expected id")
        if r["split"] not in ("tune", "test"):
            err(f"{rid}: split {r['split']!r}")
        if rid.startswith("off-"):
            off.append(r)
            if r["kind"] != "off_topic" or r["expected"]:
                err(f"{rid}: off-topic line needs kind off_topic and expected []")
        elif rid.startswith("rq-"):
            labelled.append(r)
            if r["kind"] not in KINDS:
                err(f"{rid}: kind {r['kind']!r}")
            if not r["expected"]:
                err(f"{rid}: labelled line without expected ids")
            for x in r["expected"]:
                p = pages.get(x)
                if p is None:
                    err(f"{rid}: {x} not in pages.jsonl")
                elif p["platform"] != "common":
                    err(f"{rid}: {x} has platform {p['platform']}")
        else:
            err(f"{rid}: id must start with rq- or off-")
    qs = Counter(r["query"].strip().lower() for r in rows)
    for q, c in qs.items():
        if c > 1:
            err(f"query repeated {c}x: {q!r}")

    for grp, name in ((labelled, "labelled"), (off, "off-topic")):
        want = expected_split([r["id"] for r in grp])
        for r in grp:
            if r["split"] != want[r["id"]]:
                err(f"{r['id']}: split {r['split']} but the seeded shuffle gives {want[r['id']]}")
        c = Counter(r["split"] for r in grp)
        if abs(c["tune"] - c["test"]) > 1:
            err(f"{name}: split counts {dict(c)} are not half/half")

    # Overlap of each query with the descriptions of its expected pages.
    max_run, max_at = 0, None
    for r in labelled:
        q = words(r["query"])
        for x in r["expected"]:
            p = pages.get(x)
            if p is None:
                continue
            for d in [p.get("description", "")] + [e["description"] for e in p["examples"]]:
                n = longest_common_run(q, words(d))
                if n > max_run:
                    max_run, max_at = n, (r["id"], x, d)
                if n > MAX_OVERLAP:
                    err(f"{r['id']}: {n}-word run shared with a description of {x}: {d!r}")

    distinct_first = {r["expected"][0] for r in labelled if r["expected"]}
    distinct_all = {x for r in labelled for x in r["expected"]}
    print(f"requests.jsonl: {len(labelled)} labelled, {len(off)} off-topic")
    print("  kinds:", dict(sorted(Counter(r["kind"] for r in labelled).items())))
    print(
        "  split labelled:",
        dict(sorted(Counter(r["split"] for r in labelled).items())),
        " off-topic:",
        dict(sorted(Counter(r["split"] for r in off).items())),
    )
    print(
        f"  distinct pages: {len(distinct_first)} as first answer,"
        f" {len(distinct_all)} in all expected lists"
    )
    sizes = [len(r["expected"]) for r in labelled]
    print(
        f"  expected ids per labelled query: mean {sum(sizes) / max(1, len(sizes)):.2f},"
        f" max {max(sizes, default=0)}"
    )
    print(
        "  overlap check: longest common word run with a description of an expected page"
        f" = {max_run} (limit {MAX_OVERLAP})"
    )
    if max_at:
        print(f"    at {max_at[0]} / {max_at[1]}: {max_at[2]!r}")
    return labelled, off


def check_comments(path, pages):
    rows = load_jsonl(path)
    seen = set()
    keys = {"id", "protocol", "step_label", "step_body", "comment", "label", "source"}
    for r in rows:
        rid = r.get("id")
        if set(r) != keys:
            err(f"{rid}: keys {sorted(r)}")
            continue
        if rid in seen:
            err(f"{rid}: duplicate id")
        seen.add(rid)
        if not re.fullmatch(r"cr-\d{3,}", rid or ""):
            err(f"{rid}: id must look like cr-001")
        for k in keys - {"id"}:
            if not isinstance(r[k], str) or not r[k].strip():
                err(f"{rid}: empty {k}")
        if r["label"] not in CR_LABELS:
            err(f"{rid}: label {r['label']!r}")
        if len(r["comment"]) < 20:
            err(f"{rid}: comment shorter than 20 characters")
        if "PROOF OF WORK" in r["step_body"].upper():
            err(f"{rid}: step_body contains a PROOF OF WORK line")
        src = r["source"]
        if src.startswith("tldr:"):
            if src[5:] not in pages:
                err(f"{rid}: {src} not in pages.jsonl")
        elif src not in ("seed", "written"):
            err(f"{rid}: source {src!r}")
    labels = Counter(r.get("label") for r in rows)
    n = len(rows)
    if n and labels["relevant"] / n < 0.60:
        err(f"comment_relevance: only {labels['relevant'] / n:.0%} relevant (need >= 60 %)")
    srcs = Counter(
        "tldr" if r.get("source", "").startswith("tldr:") else r.get("source") for r in rows
    )

    def step(r):
        return (r.get("protocol"), r.get("step_label"), r.get("step_body"))

    steps = Counter(step(r) for r in rows)
    mixed = 0
    for s in steps:
        ls = {r.get("label") for r in rows if step(r) == s}
        if "relevant" in ls and len(ls) > 1:
            mixed += 1
    print(f"comment_relevance.jsonl: {n} lines")
    share = labels["relevant"] / max(1, n)
    print("  labels:", dict(sorted(labels.items())), f"({share:.0%} relevant)")
    print("  sources:", dict(sorted(srcs.items())))
    print(
        f"  distinct steps: {len(steps)}, of which {mixed} carry both relevant"
        " and non-relevant comments"
    )


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pages", type=Path, default=DEFAULT_PAGES)
    ap.add_argument("--requests", type=Path, default=HERE / "requests.jsonl")
    ap.add_argument(
        "--comments", type=Path, default=ROOT / "tests" / "data" / "comment_relevance.jsonl"
    )
    a = ap.parse_args()
    pages = {}
    with open(a.pages, encoding="utf-8") as f:
        for line in f:
            p = json.loads(line)
            pages[p["id"]] = p
    check_requests(a.requests, pages)
    if a.comments.exists():
        check_comments(a.comments, pages)
    else:
        err(f"{a.comments} missing")
    if errors:
        print(f"\n{len(errors)} problem(s):")
        for e in errors[:200]:
            print("  -", e)
        sys.exit(1)
    print("\nOK")


if __name__ == "__main__":
    main()
