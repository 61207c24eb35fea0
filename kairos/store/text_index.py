"""Full-text indexes, one per dialect, behind the same calls. Both return the text
evidence of ``domain.scoring``: FTS5's bm25() over (title, step labels, body) weighted
``BM25_COLUMN_WEIGHTS``, divided by the largest value it could reach for the query. SQLite
computes bm25() itself; PostgreSQL computes the same formula from its tsvectors (a
weighted column per field), so a text score means the same on both."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from sqlalchemy import text
from sqlalchemy.engine import Connection

from ..domain import scoring
from ..domain.doctext import fts5_match, query_terms


@dataclass(frozen=True, slots=True)
class Terms:
    """The query's words as the index counts them: ``counts[i]`` of the ``n_docs`` stored
    documents hold ``words[i]`` (the counts behind each word's IDF)."""

    words: tuple[str, ...]
    counts: tuple[int, ...]
    n_docs: int
    n_scope: int | None = None  # the documents of the searched space and kinds, if counted


@dataclass(frozen=True, slots=True)
class TextMatches:
    """The text evidence of one query: ``best``, its best matches by bm25 (every match when
    no limit was asked), and ``of``, the evidence of any other documents that match, looked
    up afterwards on the same connection without running the query again; ``terms``, the
    query's words with their document counts (``domain.lexical``)."""

    best: dict[int, float]
    of: Callable[[Sequence[int]], dict[int, float]]
    terms: Terms = Terms((), (), 0)


def _none(rids: Sequence[int]) -> dict[int, float]:
    return {}


class TextIndex:
    """What both indexes answer; writes need nothing unless an index is a table of its own
    (``SqliteFts``)."""

    def upsert(self, conn: Connection, rid: int, space: str, kind: str, title: str,
               labels: str, body: str) -> None:
        return None

    def delete(self, conn: Connection, rids: Iterable[int]) -> None:
        return None

    def search(self, conn: Connection, query: str, *, space: str, kinds: Sequence[str],
               limit: int | None) -> TextMatches | None:
        """The query's matches in the space and kinds; None when it has no indexable
        words."""
        raise NotImplementedError


def kinds_in(kinds: Sequence[str]) -> str:
    """The SQL list of ``kinds`` (names of letters: nothing to escape)."""
    return ", ".join(f"'{k}'" for k in kinds if k.isalpha()) or "''"


#: The SQLite full-text table: the three searched columns, then ``scope``, one token naming
#: the row's space and kind (``scope_token``) so that a search keeps to its space and kinds
#: inside FTS5 rather than looking up the document row of every match (at 50,000 documents
#: that lookup was half the cost of a query). bm25() weighs ``scope`` 0, but counts its token
#: in each row's length: ``SCOPE_TOKENS``.
SQLITE_FTS = ("CREATE VIRTUAL TABLE search_fts USING fts5(title, labels, body, scope, "
              "tokenize = 'porter unicode61 remove_diacritics 2')")


#: Where a SQLite search keeps every match's bm25() for ``TextMatches.of``: a table of each
#: connection, made when the connection opens (``db``).
SQLITE_MATCHES = "CREATE TEMP TABLE text_matches (rid INTEGER PRIMARY KEY, b REAL NOT NULL)"


def scope_token(space: str, kind: str) -> str:
    """One FTS5 token (letters and digits) that stands for a space and a kind."""
    return "scope" + hashlib.sha256(f"{space}\0{kind}".encode()).hexdigest()[:24]


#: The tokens a row's length holds beyond its searched words (the scope token): PostgreSQL
#: counts them too, so that bm25's length normalisation is the same on both.
SCOPE_TOKENS = 1

_TOKENS = re.compile(r"[^\W_]+")


def token_count(*texts: str) -> int:
    """The tokens FTS5's unicode61 tokenizer makes of ``texts``: runs of letters and digits
    (an underscore separates, as any other punctuation). PostgreSQL's bm25 reads a
    document's length from this count (``search_docs.ntokens``)."""
    return sum(len(_TOKENS.findall(text)) for text in texts)


class SqliteFts(TextIndex):
    """FTS5 with bm25(); document counts for the IDFs come from one MATCH count per term."""

    WEIGHTS = ", ".join(str(w) for w in (*scoring.BM25_COLUMN_WEIGHTS, 0.0))

    def upsert(self, conn: Connection, rid: int, space: str, kind: str, title: str,
               labels: str, body: str) -> None:
        conn.execute(text("DELETE FROM search_fts WHERE rowid = :rid"), {"rid": rid})
        conn.execute(text("INSERT INTO search_fts(rowid, title, labels, body, scope) "
                          "VALUES (:rid, :t, :l, :b, :s)"),
                     {"rid": rid, "t": title, "l": labels, "b": body,
                      "s": scope_token(space, kind)})

    def delete(self, conn: Connection, rids: Iterable[int]) -> None:
        for rid in rids:
            conn.execute(text("DELETE FROM search_fts WHERE rowid = :rid"), {"rid": rid})

    def search(self, conn: Connection, query: str, *, space: str, kinds: Sequence[str],
               limit: int | None) -> TextMatches | None:
        terms = query_terms(query)
        if not terms:
            return None
        if not kinds:
            return TextMatches({}, _none)
        # The documents, and each term's documents, in one statement.
        counts = conn.exec_driver_sql(
            "SELECT (SELECT count(*) FROM search_docs)" + ", (SELECT count(*) FROM search_fts "
            "WHERE search_fts MATCH ?)" * len(terms), tuple(fts5_match([t]) for t in terms)).one()
        ceiling = scoring.bm25_ceiling(scoring.fts5_idf(counts[0], n) for n in counts[1:])
        stats = Terms(tuple(terms), tuple(int(n) for n in counts[1:]), int(counts[0]))

        def evidence(rows: Iterable[tuple[int, float]]) -> dict[int, float]:
            pairs = np.array(list(rows), dtype=np.float64).reshape(-1, 2)
            return dict(zip(pairs[:, 0].astype(np.int64).tolist(),
                            scoring.text_evidence(pairs[:, 1], ceiling).tolist(), strict=True))

        scopes = " OR ".join(f'"{scope_token(space, kind)}"' for kind in kinds)
        matches = (f"SELECT rowid, bm25(search_fts, {self.WEIGHTS}) FROM search_fts "
                   "WHERE search_fts MATCH ?")
        match = f"({fts5_match(terms)}) AND scope : ({scopes})"
        if limit is None:
            every = evidence(conn.exec_driver_sql(matches, (match,)))
            return TextMatches(every, lambda rids: {r: every[r] for r in rids if r in every},
                               stats)
        # Every match is scored in one pass into a table of this connection, so that the
        # evidence of other documents (``of``) is a lookup: FTS5 would re-run the whole
        # query for each rowid it is given.
        conn.exec_driver_sql("DELETE FROM temp.text_matches")
        conn.exec_driver_sql(f"INSERT INTO temp.text_matches {matches}", (match,))
        best = evidence(conn.exec_driver_sql(
            "SELECT rid, b FROM temp.text_matches ORDER BY b LIMIT ?", (limit,)))

        def of(rids: Sequence[int]) -> dict[int, float]:
            wanted = [int(r) for r in rids]
            return evidence(conn.exec_driver_sql(
                "SELECT rid, b FROM temp.text_matches "
                f"WHERE rid IN ({', '.join('?' * len(wanted))})", tuple(wanted)))

        return TextMatches(best, of, stats)


class PgFts(TextIndex):
    """PostgreSQL full text: a generated ``tsv`` column (title A, labels B, body C) with a
    GIN index picks the candidates; their bm25 comes from the weights of the query's
    lexemes in ``tsv`` and the documents' token counts. Nothing to write: the column
    follows the row."""

    WEIGHTS: ClassVar[dict[str, float]] = dict(zip("ABC", scoring.BM25_COLUMN_WEIGHTS,
                                                   strict=True))

    def search(self, conn: Connection, query: str, *, space: str, kinds: Sequence[str],
               limit: int | None) -> TextMatches | None:
        terms = query_terms(query)
        if not terms:
            return None
        # Each term's lexeme (none for an English stop word) and its document count.
        lexemes: dict[str, str] = {}
        for term in terms:
            lex = conn.execute(text("SELECT lexeme FROM unnest(to_tsvector('english', :t)) "
                                    "LIMIT 1"), {"t": term}).scalar()
            if lex is not None:
                lexemes.setdefault(str(lex), term)
        if not lexemes:
            return TextMatches({}, _none)
        lex_list = list(lexemes)
        quoted = {f"l{i}": "'" + lex.replace("'", "''") + "'" for i, lex in enumerate(lex_list)}
        any_q = " | ".join(quoted.values())
        counts = ", ".join(f"count(*) FILTER (WHERE tsv @@ CAST(:{name} AS tsquery))"
                           for name in quoted)
        stats = conn.execute(text(
            "SELECT (SELECT count(*) FROM search_docs), "
            "(SELECT coalesce(avg(ntokens), 0) FROM search_docs), "
            "(SELECT count(*) FROM search_docs WHERE space = :space "
            f"AND kind IN ({kinds_in(kinds)})), " + counts +
            " FROM search_docs WHERE tsv @@ CAST(:any AS tsquery)"),
            {"any": any_q, "space": space, **quoted}).one()
        n_rows, avg_len = int(stats[0]), float(stats[1]) + SCOPE_TOKENS
        idf = {lex: scoring.fts5_idf(n_rows, int(n)) for lex, n in zip(lex_list, stats[3:],
                                                                         strict=True)}
        ceiling = scoring.bm25_ceiling(idf.values())
        best = ("" if limit is None
                else "ORDER BY ts_rank(tsv, CAST(:any AS tsquery)) DESC LIMIT :limit")
        top = [int(r[0]) for r in conn.execute(text(
            "SELECT rid FROM search_docs WHERE tsv @@ CAST(:any AS tsquery) "
            f"AND space = :space AND kind IN ({kinds_in(kinds)}) {best}"),
            {"any": any_q, "space": space, "limit": limit})]

        def of(rids: Sequence[int]) -> dict[int, float]:
            bm25: dict[int, float] = {}
            for rid, ntokens, lex, weights in conn.execute(text(
                    "SELECT d.rid, d.ntokens, u.lexeme, u.weights FROM search_docs d, "
                    "unnest(d.tsv) u WHERE d.rid = ANY(:rids) AND u.lexeme = ANY(:lex) "
                    f"AND d.space = :space AND d.kind IN ({kinds_in(kinds)})"),
                    {"rids": list(rids), "lex": lex_list, "space": space}):
                tf = sum(self.WEIGHTS.get(str(w), 1.0) for w in weights)
                bm25[int(rid)] = bm25.get(int(rid), 0.0) + scoring.bm25_term(
                    idf[str(lex)], tf, int(ntokens) + SCOPE_TOKENS, avg_len)
            return {rid: float(scoring.text_evidence(-score, ceiling))
                    for rid, score in bm25.items()}

        terms_seen = Terms(tuple(lexemes[lex] for lex in lex_list),
                           tuple(int(n) for n in stats[3:]), n_rows, int(stats[2]))
        return TextMatches(of(top), of, terms_seen)
