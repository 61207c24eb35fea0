"""The evaluation sets of what agents send (bench/data/README.md, "Queries in five
styles"), and the three stores they are asked of, each built through the real engine:

* **team**: the 48 protocols of ``bench/data/team/*.md`` (ops, development, support),
  minted as ``kairos mint DIR`` does; queries ``team_queries.jsonl``; **team-triggers**
  is the same store with two author triggers per protocol (``team_triggers.json``);
* **tldr**: the 4,613 tldr ``common`` pages minted with their descriptions (as
  ``requests_eval.py``); queries ``tldr_queries.jsonl`` and ``requests.jsonl``;
* **entries**: the 40 experiences and 20 manuals of ``entries.jsonl``, written through
  ``write_entry``; queries ``entries_queries.jsonl`` and the requests of ``entries.jsonl``.

Every query has a style (``keyword``, ``intent``, ``request``, ``rare``, ``off_topic``)
and a half (``tune``, ``test``), fixed once in the data files. Each store also gives the
plain documents that the baselines (MiniLM cosine, BM25) read.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from corpus import PrimedEmbedder, build, open_kairos, real_items, vector_cache
from entries_eval import write_all
from requests_eval import plain_doc
from rich.console import Console

from kairos.domain import markdown
from kairos.search.embedders import LocalEmbedder
from tests.client import Agent

DATA = Path(__file__).resolve().parent / "data"
STYLES = ("keyword", "intent", "request", "rare", "off_topic")
PROTOCOL_STORES = ("team", "team-triggers", "tldr")


@dataclass
class Query:
    id: str
    query: str
    expected: list[str]
    style: str
    split: str


@dataclass
class Store:
    """A built store: ``docs`` maps each record's id (a title, a page id, an entry id) to
    the plain text the baselines read; ``id_of`` maps what a result names (a protocol's
    title, an entry's entity id) to it."""

    name: str
    kairos: Agent
    docs: dict[str, str]
    id_of: dict[str, str]
    queries: list[Query]
    kinds: tuple[str, ...]


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line]


def queries(name: str, split: str) -> list[Query]:
    rows: list[dict[str, Any]] = []
    if name == "team":
        rows = _jsonl(DATA / "team_queries.jsonl")
    elif name == "tldr":
        rows = _jsonl(DATA / "tldr_queries.jsonl")
        for r in _jsonl(DATA / "requests.jsonl"):
            style = {"short": "intent", "off_topic": "off_topic"}.get(r["kind"], "request")
            rows.append({**r, "style": style})
    else:
        rows = [r for r in _jsonl(DATA / "entries.jsonl") if r["type"] == "request"]
        rows = [{**r, "style": "off_topic" if r["kind"] == "off_topic" else "request"}
                for r in rows] + _jsonl(DATA / "entries_queries.jsonl")
    return [Query(r["id"], r["query"], list(r["expected"]), r["style"], r["split"])
            for r in rows if split in ("all", r["split"])]


def team_documents() -> list[markdown.ProtocolDraft]:
    return [d for path in sorted((DATA / "team").glob("*.md"))
            for d in markdown.parse(path.read_text("utf-8"))]


def team_plain(draft: markdown.ProtocolDraft) -> str:
    """A team protocol's words: title, intro, each step's label and body."""
    steps = " ".join(f"{s.label}. {s.content}" for s in draft.steps)
    return " ".join(f"{draft.title}: {draft.intro} {steps}".split())


def _home(root: Path, name: str) -> tuple[Path, bool]:
    home = root / name
    return home, (home / "kairos.db").exists()


def open_store(name: str, root: Path, model: LocalEmbedder, split: str,
               console: Console) -> Store:
    """The store ``name`` under ``root``, built there first when it is not yet."""
    builders: dict[str, Callable[..., Store]] = {
        "team": _team, "team-triggers": _team_triggers, "tldr": _tldr, "entries": _entries}
    return builders[name](root, model, split, console)


def with_triggers(doc: str, triggers: dict[str, list[str]]) -> str:
    """A team document with each protocol's author triggers as front matter."""
    out = []
    for line in doc.splitlines():
        title = line[2:].strip() if line.startswith("# ") else None
        if title in triggers:
            out += ["---", "triggers:", *(f"  - {json.dumps(t)}" for t in triggers[title]),
                    "---"]
        out.append(line)
    return "\n".join(out) + "\n"


def _team(root: Path, model: LocalEmbedder, split: str, console: Console,
          name: str = "team", triggers: dict[str, list[str]] | None = None) -> Store:
    home, built = _home(root, name)
    k = open_kairos(home, model)
    drafts = team_documents()
    if not built:
        docs = [with_triggers(p.read_text("utf-8"), triggers or {})
                for p in sorted((DATA / "team").glob("*.md"))]
        for result in k.mint_many(docs):
            if not isinstance(result, dict):
                raise SystemExit(f"team store: a document was refused: {result}")
    id_of = {d.title: d.title for d in drafts}
    return Store(name, k, {d.title: team_plain(d) for d in drafts}, id_of,
                 queries("team", split), ("protocol",))


def _team_triggers(root: Path, model: LocalEmbedder, split: str, console: Console) -> Store:
    """The team store, each protocol with two author triggers (``team_triggers.json``)."""
    triggers = json.loads((DATA / "team_triggers.json").read_text("utf-8"))
    return _team(root, model, split, console, "team-triggers", triggers)


def _tldr(root: Path, model: LocalEmbedder, split: str, console: Console) -> Store:
    home, built = _home(root, "tldr")
    items = [dataclasses.replace(it, described=True) for it in real_items()
             if it.page.platform == "common"]
    if not built:
        work = root / "tldr-build"
        build("protocol", items, [len(items)], work,
              PrimedEmbedder(model, vector_cache(model)), console)
        (work / f"protocol-{len(items)}").rename(home)
    k = open_kairos(home, model)
    id_of = {it.title: it.page.id for it in items}
    return Store("tldr", k, {it.page.id: plain_doc(it.page) for it in items}, id_of,
                 queries("tldr", split), ("protocol",))


def _entries(root: Path, model: LocalEmbedder, split: str, console: Console) -> Store:
    home, built = _home(root, "entries")
    k = open_kairos(home, model)
    entries = [r for r in _jsonl(DATA / "entries.jsonl") if r["type"] == "entry"]
    ids_file = home / "ids.json"
    if not built or not ids_file.exists():
        ids_file.write_text(json.dumps(write_all(k, entries, console)))
    id_of = json.loads(ids_file.read_text())
    docs = {e["id"]: f"{e['title']}: {e.get('playbook') or e.get('content')}" for e in entries}
    return Store("entries", k, docs, id_of, queries("entries", split),
                 ("experience", "manual"))
