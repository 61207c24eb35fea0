"""The evidence ``rank_ideas.py`` measures ideas on: every record of the three stores of
``match_eval.py`` as the engine indexed it, and every tuning query's full-text matches,
word counts and lexical evidence (``collect``; ``load`` reads it back)."""

from __future__ import annotations

import argparse
import dataclasses
import pickle
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kairos.domain.lexical import words
from kairos.search.documents import draft_of, stored_doc

STORES = ("team", "tldr", "entries")
STYLES = ("keyword", "intent", "request", "rare")


@dataclass
class Record:
    rid: int
    id: str                       # the record id the queries name
    kind: str
    title: str
    labels: str
    body: str
    intro: str
    steps: list[tuple[str, str]]  # (label, content) of a protocol's steps
    vector_texts: tuple[str, ...]
    plain: str                    # the baselines' document


@dataclass
class QueryData:
    id: str
    query: str
    style: str
    expected: list[str]
    text: dict[int, float]        # record index → text evidence (every match)
    lexical: dict[int, tuple[float, float, float, int]]  # → Lexical's four fields
    informative: int
    terms: tuple[list[str], list[int], int] | None


@dataclass
class StoreData:
    name: str
    records: list[Record]
    queries: list[QueryData]


# --- collection ------------------------------------------------------------------------------

def _records(store: Any) -> list[Record]:
    from sqlalchemy import select

    from kairos.store import schema as t
    c = t.search_docs.c
    out = []
    with store.kairos.store.read() as repo:
        rows = list(repo.conn.execute(
            select(c.rid, c.kind, c.entity_id, c.title, c.labels, c.body)
            .where((c.space == "default") & c.kind.in_(list(store.kinds)))
            .order_by(c.rid)).mappings())
        for r in rows:
            spec = stored_doc(repo, r["kind"], r["entity_id"])
            assert spec is not None
            intro, steps = spec.body, []
            if r["kind"] == "protocol":
                draft = draft_of(repo.protocol(r["entity_id"]), repo.steps_of(r["entity_id"]))
                intro, steps = draft.intro, [(s.label, s.content) for s in draft.steps]
            rid = store.id_of.get(r["title"] if r["kind"] == "protocol" else r["entity_id"], "?")
            out.append(Record(r["rid"], rid, r["kind"], r["title"], r["labels"], r["body"],
                              intro, steps, spec.vector_texts, store.docs.get(rid, r["title"])))
    return out


def _query_data(store: Any, records: list[Record], q: Any) -> QueryData:
    index = {r.rid: i for i, r in enumerate(records)}
    with store.kairos.store.read() as repo:
        matches = store.kairos.store.text_index.search(
            repo.conn, q.query, space="default", kinds=store.kinds, limit=None)
    if matches is None:
        return QueryData(q.id, q.query, q.style, list(q.expected), {}, {}, 0, None)
    text = {index[rid]: v for rid, v in matches.best.items() if rid in index}
    terms = matches.terms
    asked = words(terms.words, terms.counts, terms.n_docs)
    lexical = {}
    for i in text if asked.informative else ():
        r = records[i]
        lex = asked.of(*asked.holds(r.title, f"{r.labels}\n{r.body}"))
        lexical[i] = (lex.title_share, lex.share, lex.rare, lex.informative)
    return QueryData(q.id, q.query, q.style, list(q.expected), text, lexical,
                     asked.informative, (list(terms.words), list(terms.counts), terms.n_docs))


def collect(args: argparse.Namespace) -> None:
    from agent_sets import open_store
    from rich.console import Console

    from kairos.search.embedders import LocalEmbedder
    console = Console(stderr=True)
    model = LocalEmbedder(threads=1).load()
    out = []
    for name in STORES:
        store = open_store(name, args.stores, model, "tune", console)
        try:
            records = _records(store)
            out.append(StoreData(name, records,
                                 [_query_data(store, records, q) for q in store.queries]))
        finally:
            store.kairos.close()
        console.print(f"{name}: {len(records)} records, {len(out[-1].queries)} queries")
    args.out.write_bytes(pickle.dumps([dataclasses.asdict(s) for s in out]))


def load(path: Path, relex: bool = False) -> list[StoreData]:
    """The collected evidence; with ``relex``, the lexical evidence read again from the
    records with the current ``domain.lexical`` (to measure a change there)."""
    raw = pickle.loads(path.read_bytes())
    stores = [StoreData(d["name"], [Record(**r) for r in d["records"]],
                        [QueryData(**q) for q in d["queries"]]) for d in raw]
    for s in stores if relex else ():
        for q in s.queries:
            if q.terms is None:
                continue
            asked = words(*q.terms)
            q.informative = asked.informative
            q.lexical = {}
            for i in q.text if asked.informative else ():
                r = s.records[i]
                lex = asked.of(*asked.holds(r.title, f"{r.labels}\n{r.body}"))
                q.lexical[i] = (lex.title_share, lex.share, lex.rare, lex.informative)
    return stores
