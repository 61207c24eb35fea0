#!/usr/bin/env python3
"""Validate bench/data/entries.jsonl, the labelled set of knowledge entries.

Standard library only. Prints a summary, or the problems found and exits non-zero.

    python3 bench/data/check_entries.py [--data PATH]

Checks:
  * shapes: entry lines (experience: title, playbook, category, author, section;
    manual: title, summary, content, category, author) and request lines (query,
    expected, kind, split), with no other keys; text fields non-empty; titles at most
    120 characters, playbooks and summaries at most 2,000, contents at most 100,000;
    sections useful/harmful/contextual; categories among the starter ones;
  * ids unique: experiences e-NNN, manuals m-NNN, requests eq-NNN; queries unique;
  * expected ids exist; off-topic requests expect [], the others one id or more;
  * split: for each kind on its own, the request ids in file order shuffled with
    random.Random(20261124), the first half (rounded down) is "tune", the rest "test";
  * overlap: no request shares more than 4 consecutive words with the title or the
    body (playbook, or summary and content) of an entry it expects.
"""

import argparse
import json
import random
import re
import sys
from collections import Counter
from pathlib import Path

DATA = Path(__file__).resolve().parent / "entries.jsonl"
SEED = 20261124
MAX_OVERLAP = 4
KINDS = ("title", "body", "typo", "off_topic")
CATEGORIES = {"general", "coding", "debugging", "testing", "deployment", "operations",
              "security", "data", "tooling", "documentation"}
SECTIONS = {"useful", "harmful", "contextual"}
SHAPES = {
    "experience": {"type", "id", "entity_type", "title", "playbook", "category", "author",
                   "section"},
    "manual": {"type", "id", "entity_type", "title", "summary", "content", "category",
               "author"},
    "request": {"type", "id", "query", "expected", "kind", "split"},
}
LIMITS = {"title": 120, "playbook": 2_000, "summary": 2_000, "content": 100_000,
          "author": 200}
ID_FORMS = {"experience": r"e-\d{3}", "manual": r"m-\d{3}", "request": r"eq-\d{3}"}

errors = []


def err(msg):
    errors.append(msg)


def words(text):
    return re.findall(r"[a-z0-9]+", text.lower())


def longest_common_run(a, b):
    """Length of the longest contiguous run of words shared by a and b."""
    best, prev = 0, [0] * (len(b) + 1)
    for i in range(1, len(a) + 1):
        cur = [0] * (len(b) + 1)
        for j in range(1, len(b) + 1):
            if a[i - 1] == b[j - 1]:
                cur[j] = prev[j - 1] + 1
                best = max(best, cur[j])
        prev = cur
    return best


def expected_split(ids):
    order = list(ids)
    random.Random(SEED).shuffle(order)
    tune = set(order[: len(order) // 2])
    return {i: ("tune" if i in tune else "test") for i in ids}


def load(path):
    rows = []
    for n, line in enumerate(path.read_text("utf-8").splitlines(), 1):
        if not line.strip():
            err(f"line {n}: empty line")
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as e:
            err(f"line {n}: bad JSON: {e}")
            continue
        if not isinstance(row, dict):
            err(f"line {n}: not an object")
            continue
        rows.append(row)
    return rows


def check_entry(r):
    shape = r.get("entity_type")
    rid = r.get("id")
    if shape not in ("experience", "manual"):
        err(f"{rid}: entity_type {shape!r}")
        return False
    if set(r) != SHAPES[shape]:
        err(f"{rid}: keys {sorted(r)}, expected {sorted(SHAPES[shape])}")
        return False
    if not re.fullmatch(ID_FORMS[shape], str(rid)):
        err(f"{rid}: a {shape} id looks like {ID_FORMS[shape]}")
    for key in SHAPES[shape] - {"type", "id", "entity_type"}:
        value = r[key]
        if not isinstance(value, str) or not value.strip():
            err(f"{rid}: {key} must be a non-empty string")
        elif key in LIMITS and len(value) > LIMITS[key]:
            err(f"{rid}: {key} is {len(value)} characters (limit {LIMITS[key]})")
    if r["category"] not in CATEGORIES:
        err(f"{rid}: category {r['category']!r}")
    if shape == "experience" and r["section"] not in SECTIONS:
        err(f"{rid}: section {r['section']!r}")
    return True


def check_request(r):
    rid = r.get("id")
    if set(r) != SHAPES["request"]:
        err(f"{rid}: keys {sorted(r)}, expected {sorted(SHAPES['request'])}")
        return False
    if not re.fullmatch(ID_FORMS["request"], str(rid)):
        err(f"{rid}: a request id looks like eq-NNN")
    if not isinstance(r["query"], str) or not r["query"].strip():
        err(f"{rid}: empty query")
        return False
    exp = r["expected"]
    if not isinstance(exp, list) or not all(isinstance(x, str) for x in exp):
        err(f"{rid}: expected must be a list of ids")
        return False
    if len(set(exp)) != len(exp):
        err(f"{rid}: repeated expected id")
    if r["kind"] not in KINDS:
        err(f"{rid}: kind {r['kind']!r}")
        return False
    if (r["kind"] == "off_topic") != (not exp):
        err(f"{rid}: off-topic requests expect [], the others at least one id")
    if r["split"] not in ("tune", "test"):
        err(f"{rid}: split {r['split']!r}")
    return True


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DATA)
    args = ap.parse_args()
    rows = load(args.data)
    ids = Counter(r.get("id") for r in rows)
    for rid, n in ids.items():
        if n > 1:
            err(f"{rid}: id used {n} times")
    entries, requests = {}, []
    for r in rows:
        if r.get("type") == "entry":
            if check_entry(r):
                entries[r["id"]] = r
        elif r.get("type") == "request":
            if check_request(r):
                requests.append(r)
        else:
            err(f"{r.get('id')}: type {r.get('type')!r}")
    for q, n in Counter(r["query"].strip().lower() for r in requests).items():
        if n > 1:
            err(f"query repeated {n} times: {q!r}")

    max_run, max_at = 0, None
    for r in requests:
        q = words(r["query"])
        for x in r["expected"]:
            e = entries.get(x)
            if e is None:
                err(f"{r['id']}: expected {x} is not an entry")
                continue
            for field in ("title", "playbook", "summary", "content"):
                if field not in e:
                    continue
                n = longest_common_run(q, words(e[field]))
                if n > max_run:
                    max_run, max_at = n, (r["id"], x, field)
                if n > MAX_OVERLAP:
                    err(f"{r['id']}: shares {n} consecutive words with the {field} of {x}")

    for kind in KINDS:
        group = [r for r in requests if r["kind"] == kind]
        want = expected_split([r["id"] for r in group])
        for r in group:
            if r["split"] != want[r["id"]]:
                err(f"{r['id']}: split {r['split']}, the seeded shuffle gives {want[r['id']]}")

    kinds = Counter(e["entity_type"] for e in entries.values())
    print(f"{args.data.name}: "
          f"{kinds['experience']} experiences, {kinds['manual']} manuals, "
          f"{len(requests)} requests")
    print("  requests by kind and split:", {
        k: dict(sorted(Counter(r["split"] for r in requests if r["kind"] == k).items()))
        for k in KINDS})
    print("  categories:", dict(sorted(Counter(e["category"] for e in entries.values()).items())))
    covered = {x for r in requests for x in r["expected"]}
    print(f"  entries expected by at least one request: {len(covered)} of {len(entries)}")
    print(f"  longest word run shared by a request and its entry: {max_run} "
          f"(limit {MAX_OVERLAP})" + (f", at {max_at[0]} / {max_at[1]} {max_at[2]}"
                                      if max_at else ""))
    if errors:
        print(f"\n{len(errors)} problem(s):")
        for e in errors[:200]:
            print("  -", e)
        sys.exit(1)
    print("\nOK")


if __name__ == "__main__":
    main()
