#!/usr/bin/env python3
"""Validate the query sets of what agents send (README.md, "Queries in five styles"):
team_queries.jsonl (over team/*.md), tldr_queries.jsonl (over the tldr `common` pages) and
entries_queries.jsonl (over entries.jsonl).

Standard library only. Exits non-zero on the first class of error found and prints a
summary otherwise.

    python3 bench/data/check_sets.py [--pages PATH]

Checks:
  * JSON shape: id, query, expected (list of str), style, split; ids unique;
  * styles keyword, intent, request, rare, off_topic; off-topic lines expect nothing;
  * every expected record exists (a team protocol's title, a `common` page id, an entry id);
  * the words of a rare-term query are all in the steps (tldr: the examples; entries:
    the body) of every expected record and of no other, and the query as typed is in
    none of their titles (tldr: names and descriptions);
  * a tldr query derived from a request of requests.jsonl (``source``) is in its half;
  * keyword queries are one word, intent queries two to four;
  * none of the queries quoted by the task that asked for these sets is reused.
"""

import argparse
import json
import re
import sys
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
#: The tldr pages, in the shared data directory beside the checkout (``../shared``).
DEFAULT_PAGES = HERE.parent.parent.parent / "shared" / "data" / "tldr" / "pages.jsonl"
STYLES = {"keyword", "intent", "request", "rare", "off_topic"}
STOPWORDS = {"a", "an", "and", "for", "in", "of", "on", "the", "to", "with"}
#: Queries quoted where these sets were asked for: none may be reused.
QUOTED = {
    "code review", "new hire", "rotate", "someone leaked a token", "add more pods",
    "the site is down", "set up my new macbook", "release", "bake sourdough bread",
    "book a flight to tokyo", "zanzibar board", "coding deploy", "jira create ticket",
    "xyz123garbagev2test1795639759331noonesearchesthis",
}

errors = []


def err(msg):
    errors.append(msg)


def tokens(text):
    return {w.lower() for w in re.findall(r"[^\W_]+", text)}


def rows_of(name):
    return [json.loads(line) for line in (HERE / name).read_text("utf-8").splitlines() if line]


def team_protocols():
    """(title, step text) of each protocol of team/*.md: an H1 starts one."""
    out = []
    for path in sorted((HERE / "team").glob("*.md")):
        title, lines = None, []
        for line in path.read_text("utf-8").splitlines():
            if line.startswith("# "):
                if title:
                    out.append((title, "\n".join(lines)))
                title, lines = line[2:].strip(), []
            else:
                lines.append(line)
        if title:
            out.append((title, "\n".join(lines)))
    return out


def check_common(rows, name):
    ids = [r.get("id") for r in rows]
    for i, n in Counter(ids).items():
        if n > 1:
            err(f"{name}: duplicate id {i}")
    for r in rows:
        if set(r) - {"id", "query", "expected", "style", "split", "source"} or not all(
                k in r for k in ("id", "query", "expected", "style", "split")):
            err(f"{name}: {r.get('id')}: bad shape {sorted(r)}")
            continue
        if r["style"] not in STYLES:
            err(f"{name}: {r['id']}: unknown style {r['style']}")
        if r["split"] not in ("tune", "test"):
            err(f"{name}: {r['id']}: unknown split {r['split']}")
        if (r["style"] == "off_topic") != (not r["expected"]):
            err(f"{name}: {r['id']}: off-topic lines, and only they, expect nothing")
        if " ".join(r["query"].lower().split()) in QUOTED:
            err(f"{name}: {r['id']}: reuses a quoted query: {r['query']!r}")
        n = len(r["query"].split())
        if r["style"] == "keyword" and n != 1:
            err(f"{name}: {r['id']}: a keyword query is one word")
        if r["style"] == "intent" and not 2 <= n <= 4:
            err(f"{name}: {r['id']}: an intent query is two to four words")


def check_rare(rows, name, records):
    """``records``: id → (title, title words, step words). The records whose steps hold
    every word of a rare-term query are exactly the expected ones, and the query as typed
    is in none of their titles."""
    for r in rows:
        if r["style"] != "rare":
            continue
        words = tokens(r["query"]) - STOPWORDS
        holders = {rid for rid, (_, _, steps) in records.items() if words <= steps}
        if holders != set(r["expected"]):
            err(f"{name}: {r['id']}: {sorted(words)} are in the steps of {sorted(holders)}, "
                f"expected {sorted(r['expected'])}")
        for rid in r["expected"]:
            if rid in records and r["query"].lower() in records[rid][0].lower():
                err(f"{name}: {r['id']}: {r['query']!r} is in the title of {rid}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--pages", type=Path, default=DEFAULT_PAGES)
    args = parser.parse_args()

    team = rows_of("team_queries.jsonl")
    check_common(team, "team")
    protocols = {title: (title, tokens(title), tokens(steps))
                 for title, steps in team_protocols()}
    for r in team:
        for title in r["expected"]:
            if title not in protocols:
                err(f"team: {r['id']}: no protocol titled {title!r}")
    check_rare(team, "team", protocols)

    tldr = rows_of("tldr_queries.jsonl")
    check_common(tldr, "tldr")
    pages = [json.loads(line) for line in args.pages.read_text("utf-8").splitlines()]
    common = {p["id"]: (p["name"] + " " + p["description"],
                        tokens(p["name"] + " " + p["description"]),
                        tokens(" ".join(e["description"] + " " + e["command"]
                                        for e in p["examples"])))
              for p in pages if p["platform"] == "common"}
    requests = {r["id"]: r for r in rows_of("requests.jsonl")}
    for r in tldr:
        for page in r["expected"]:
            if page not in common:
                err(f"tldr: {r['id']}: no common page {page}")
        source = r.get("source")
        if source and requests.get(source, {}).get("split") != r["split"]:
            err(f"tldr: {r['id']}: not in the half of its source {source}")
    check_rare(tldr, "tldr", common)

    entries = rows_of("entries_queries.jsonl")
    check_common(entries, "entries")
    stored = {e["id"]: (e["title"], tokens(e["title"]), tokens(" ".join(
        str(e.get(k) or "") for k in ("playbook", "context", "content", "summary"))))
        for e in rows_of("entries.jsonl") if e["type"] == "entry"}
    for r in entries:
        for entry in r["expected"]:
            if entry not in stored:
                err(f"entries: {r['id']}: no entry {entry}")
    check_rare(entries, "entries", stored)

    if errors:
        print("\n".join(errors))
        sys.exit(1)
    for name, rows in (("team", team), ("tldr", tldr), ("entries", entries)):
        counts = Counter((r["style"], r["split"]) for r in rows)
        print(f"{name}: " + ", ".join(f"{s} {counts[(s, 'tune')]}+{counts[(s, 'test')]}"
                                      for s in sorted(STYLES) if counts[(s, 'tune')]
                                      or counts[(s, 'test')]))
    print("ok")


if __name__ == "__main__":
    main()
