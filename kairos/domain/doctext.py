"""What KAIROS embeds and indexes for a protocol, and how a query is normalised.

The recipe was chosen on the tldr "describe → find" benchmark (a training figure there);
every choice below is one that measurably helped there:

* three kinds of vectors per protocol: a *summary* ("<title>: how to <label>; <label>;
  ..."), a *full* text ("<title>: how to <label> (<content>); ...") and one vector per
  step ("<label>: <content>"); the step vectors give the best-matching step and the first
  step, which usually states what the procedure is for. The "how to" phrasing with
  ";"-joined labels scored 1-2 points of recall@1 above plain concatenation;
* the text index has three columns, title / step labels / step contents, so bm25() can
  weight them (see ``scoring.BM25_COLUMN_WEIGHTS``);
* template noise is removed before embedding or indexing: ``{{placeholders}}`` and tldr
  style ``[c]reate`` mnemonics lose their braces and brackets, markdown links keep their
  text, whitespace is collapsed;
* a query loses its trailing sentence punctuation before it is embedded: MiniLM's mean
  pooling counts the final "." as a token, and dropping it moved recall@1 from 0.444 to
  0.468 on the benchmark with the same documents.

Pure functions, no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = [
    "MAX_CONTENT_CHARS",
    "STOPWORDS",
    "DocText",
    "build_doc_text",
    "clean",
    "embedding_query",
    "fts5_match",
    "query_terms",
    "step_prose",
    "step_search_body",
]

#: Step contents longer than this are cut before embedding and indexing: a long body would
#: drown the labels, and MiniLM reads at most 256 word pieces anyway.
MAX_CONTENT_CHARS = 600

#: Query words never sent to the text index: Lucene's classic English list plus the words
#: of a question ("how do I ..."), which a store has seldom seen and whose IDF would sink
#: the text evidence of a plain question. Short on purpose: longer lists drop words that
#: matter for procedures ("show", "find", "top").
STOPWORDS = frozenset(
    "a an and are as at be but by for if in into is it no not of on or such that the their "
    "then there these they this to was will with "
    "how what which when where who why do does did i me my we our you your can could should "
    "would".split()
)

_LINK = re.compile(r"!?\[([^\[\]]*)\]\([^()]*\)")  # linear: no run is rescanned
_FENCE = re.compile(r"```[^\n]*")
_TEMPLATE = re.compile(r"[{}\[\]]")
_SPACE = re.compile(r"\s+")
_WORD = re.compile(r"[^\W_]+")
# Linear-time patterns: a line's prefix never runs into the next line, so a long run of
# punctuation or blank lines is scanned once.
_POW_PREFIX = re.compile(r"^[^\w\n]*proof\s+of\s+work[^\w\n]*:[^\w\n]*",
                         re.IGNORECASE | re.MULTILINE)
_POW_LINE = re.compile(r"^[^\w\n]*proof\s+of\s+work[^\w\n]*:[^\n]*$",
                       re.IGNORECASE | re.MULTILINE)


@dataclass(frozen=True, slots=True)
class DocText:
    """Everything the indexes need for one protocol.

    ``summary``, ``full`` and ``steps`` are embedded (``steps`` one vector each, in step
    order); ``title``, ``labels`` and ``contents`` are the three full-text columns.
    """

    summary: str
    full: str
    steps: tuple[str, ...]
    title: str
    labels: str
    contents: str


def clean(text: str) -> str:
    """Drop template noise: link targets, code fences, braces and brackets, extra spaces."""
    text = _LINK.sub(r"\1", text)
    text = _FENCE.sub(" ", text)
    text = _TEMPLATE.sub("", text)
    return _SPACE.sub(" ", text).strip()


def _lower_first(text: str) -> str:
    return text[:1].lower() + text[1:]


def build_doc_text(title: str, step_labels: Sequence[str],
                   step_contents: Sequence[str]) -> DocText:
    """The texts to embed and to index for a protocol.

    ``step_labels`` are the H2 headings; ``step_contents`` the matching step bodies, or what
    best says what the step does (for a shell challenge, its command). Both sequences are
    read pairwise; a missing content counts as empty.
    """
    t = clean(title)
    labels = [clean(label) for label in step_labels]
    contents = [clean(c)[:MAX_CONTENT_CHARS] for c in step_contents]
    contents += [""] * (len(labels) - len(contents))
    pairs = list(zip(labels, contents, strict=False))
    summary = f"{t}: how to " + "; ".join(_lower_first(lbl) for lbl in labels) if labels else t
    full = f"{t}: how to " + "; ".join(
        _lower_first(f"{lbl} ({c})" if c else lbl) for lbl, c in pairs) if pairs else t
    steps = tuple(f"{lbl}: {c}" if c else lbl for lbl, c in pairs) or (t,)
    return DocText(summary=summary, full=full, steps=steps, title=t,
                   labels=" ".join(labels), contents=" ".join(c for c in contents if c))


def drop_json_blocks(text: str, *, objects_only: bool = False) -> str:
    """``text`` with each ```json fenced block replaced by a space (with ``objects_only``,
    only blocks holding one ``{...}``); linear in the length of the text."""
    low = text.lower() if not objects_only else text
    out: list[str] = []
    pos = start = 0
    while (i := low.find("```json", start)) >= 0:
        j = text.find("```", i + 7)
        if j < 0:
            break
        inner = text[i + 7 : j].strip()
        if objects_only and not (inner.startswith("{") and inner.endswith("}")):
            start = i + 7
            continue
        out += [text[pos:i], " "]
        pos = start = j + 3
    out.append(text[pos:])
    return "".join(out)


def step_search_body(content: str) -> str:
    """A step's body as search sees it: the challenge block gone, a ``PROOF OF WORK:``
    line reduced to what follows the prefix (its command, tool or prompt)."""
    return " ".join(_POW_PREFIX.sub("", drop_json_blocks(content, objects_only=True))
                    .replace("`", " ").split())


def step_prose(label: str, content: str) -> str:
    """What a step asks for in words: its label and body without any challenge line or
    block (a comment is judged against this, not against ``min_length=20``)."""
    body = clean(_POW_LINE.sub("", drop_json_blocks(content, objects_only=True))
                 .replace("`", " "))
    return f"{clean(label)}. {body}".strip(" .") if body else clean(label)


def embedding_query(query: str) -> str:
    """The query as it is embedded: cleaned, without trailing sentence punctuation."""
    return clean(query).rstrip(" .!?;:,")  # clean() leaves no whitespace but single spaces


def query_terms(query: str) -> list[str]:
    """Distinct lower-case words of the query minus stop words, in order.

    Words are split like SQLite's unicode61 tokenizer (letters and digits), so each one is a
    single token for FTS5 and its document count is the IDF FTS5 itself uses.
    """
    words = (w.lower() for w in _WORD.findall(query))
    return list(dict.fromkeys(w for w in words if w not in STOPWORDS))


def fts5_match(terms: Sequence[str]) -> str | None:
    """An FTS5 MATCH expression that any of ``terms`` satisfies, or None when empty.

    Each term is a quoted string, so FTS5 syntax in a query (AND, NEAR, ``*``, ``:``) is
    never interpreted; the porter tokenizer stems the quoted word like the indexed text.
    """
    if not terms:
        return None
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)
