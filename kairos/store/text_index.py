"""Full-text indexes, one per dialect, behind the same three calls. Scores are raw BM25
(higher is better); the search layer calibrates them."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Protocol

from sqlalchemy import text
from sqlalchemy.engine import Connection

_TOKEN = re.compile(r"\w+", re.UNICODE)
# Words too common to carry evidence in a query (kept short on purpose: queries are short).
QUERY_STOPWORDS = frozenset(
    "a an and are as at be by for from how i in is it of on or that the this to was what "
    "when where which who why will with you your me my do does can".split()
)


def query_terms(query: str) -> list[str]:
    """Distinct lower-cased words of a query, stop words dropped (unless nothing is left)."""
    words = [w.lower() for w in _TOKEN.findall(query)]
    kept = [w for w in words if w not in QUERY_STOPWORDS] or words
    return list(dict.fromkeys(kept))


def fts5_match(terms: Sequence[str]) -> str:
    """An FTS5 MATCH expression: any of the terms, each quoted so no term is an operator."""
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)


class TextIndex(Protocol):
    def upsert(self, conn: Connection, rid: int, title: str, body: str) -> None: ...

    def delete(self, conn: Connection, rids: Iterable[int]) -> None: ...

    def search(self, conn: Connection, query: str, *, space: str, kinds: Sequence[str],
               limit: int) -> list[tuple[int, float]]: ...


class SqliteFts:
    """FTS5 with bm25(); the title counts more than the body."""

    TITLE_WEIGHT = 3.0
    BODY_WEIGHT = 1.0

    def upsert(self, conn: Connection, rid: int, title: str, body: str) -> None:
        conn.execute(text("DELETE FROM search_fts WHERE rowid = :rid"), {"rid": rid})
        conn.execute(text("INSERT INTO search_fts(rowid, title, body) VALUES (:rid, :t, :b)"),
                     {"rid": rid, "t": title, "b": body})

    def delete(self, conn: Connection, rids: Iterable[int]) -> None:
        for rid in rids:
            conn.execute(text("DELETE FROM search_fts WHERE rowid = :rid"), {"rid": rid})

    def search(self, conn: Connection, query: str, *, space: str, kinds: Sequence[str],
               limit: int) -> list[tuple[int, float]]:
        terms = query_terms(query)
        if not terms:
            return []
        kind_list = ", ".join(f"'{k}'" for k in kinds if k.isalpha())
        sql = text(
            f"SELECT d.rid, -bm25(search_fts, {self.TITLE_WEIGHT}, {self.BODY_WEIGHT}) AS s "
            "FROM search_fts JOIN search_docs d ON d.rid = search_fts.rowid "
            f"WHERE search_fts MATCH :q AND d.space = :space AND d.kind IN ({kind_list}) "
            "ORDER BY s DESC LIMIT :limit")
        rows = conn.execute(sql, {"q": fts5_match(terms), "space": space, "limit": limit})
        return [(int(r[0]), float(r[1])) for r in rows]


_PG_TERM = re.compile(r"[^\w]+", re.UNICODE)


def pg_tsquery(terms: Sequence[str]) -> str:
    """A to_tsquery expression ORing the terms; every term reduced to word characters so
    no user input is ever an operator."""
    cleaned = [w for t in terms for w in _PG_TERM.split(t) if w]
    return " | ".join(dict.fromkeys(cleaned))


class PgFts:
    """PostgreSQL full text: a generated, weighted ``tsv`` column (title A, body B) with a
    GIN index, ranked by ts_rank_cd. Nothing to write: the column follows the row."""

    def upsert(self, conn: Connection, rid: int, title: str, body: str) -> None:
        return None

    def delete(self, conn: Connection, rids: Iterable[int]) -> None:
        return None

    def search(self, conn: Connection, query: str, *, space: str, kinds: Sequence[str],
               limit: int) -> list[tuple[int, float]]:
        expr = pg_tsquery(query_terms(query))
        if not expr:
            return []
        kind_list = ", ".join(f"'{k}'" for k in kinds if k.isalpha())
        sql = text(
            "SELECT d.rid, ts_rank_cd(d.tsv, q) AS s "
            "FROM search_docs d, to_tsquery('english', :q) q "
            f"WHERE d.tsv @@ q AND d.space = :space AND d.kind IN ({kind_list}) "
            "ORDER BY s DESC LIMIT :limit")
        rows = conn.execute(sql, {"q": expr, "space": space, "limit": limit})
        return [(int(r[0]), float(r[1])) for r in rows]
