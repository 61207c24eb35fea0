"""What KAIROS embeds and indexes for a record, and how a query is normalised: the one place
where a record's search text is written.

Chosen on the tuning half of the held-out requests (``bench/requests_eval.py``), one idea at
a time:

* **a protocol is one vector**, "<title>: <intro> how to <label>; <label>; ...". Its
  cosine alone put the right protocol first for 0.734 of the tuning requests and in the top
  five for 0.911, against 0.665 / 0.905 for the earlier mix of four cosines (a summary, a
  full text with every step body, the best-matching step, the first step), and it separates
  off-topic requests better. It is also the cheapest: about 80 word pieces to embed per
  protocol instead of about 380, and one vector to scan instead of seven. When its steps
  say more in words than their labels (a body without code or challenge: tldr steps have
  none, their bodies are commands, which the text index keeps), a vector of
  "... how to <label> (<words>); ..." comes first, and the better cosine of the two counts;
* a knowledge entry has three vectors, "<title>: <body>", its title and its body, so a
  request that names only the title finds it as well as one about its body;
* the first vector of every record is its fullest text: the duplicate check compares
  first vectors;
* the text index has three columns, title / step labels / body, so bm25() can weight them
  (see ``scoring.BM25_COLUMN_WEIGHTS``);
* template noise is removed before embedding or indexing: ``{{placeholders}}`` and tldr
  style ``[c]reate`` mnemonics lose their braces and brackets, markdown links keep their
  text, whitespace is collapsed;
* a query loses its trailing sentence punctuation before it is embedded: MiniLM's mean
  pooling counts the final "." as a token.

Pure functions, no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["MAX_CONTENT_CHARS", "RECIPE", "STOPWORDS", "DocText", "clean", "document",
           "embedding_query", "fts5_match", "query_terms", "step_prose", "step_search_body",
           "step_words", "title_form"]

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
_WORD = re.compile(r"[^\W_]+")
_TOKEN = re.compile(r"\S+")
# Linear-time patterns: a line's prefix never runs into the next line, so a long run of
# punctuation or blank lines is scanned once.
_POW_PREFIX = re.compile(r"^[^\w\n]*proof\s+of\s+work[^\w\n]*:[^\w\n]*",
                         re.IGNORECASE | re.MULTILINE)
_POW_LINE = re.compile(r"^[^\w\n]*proof\s+of\s+work[^\w\n]*:[^\n]*$",
                       re.IGNORECASE | re.MULTILINE)


@dataclass(frozen=True, slots=True)
class DocText:
    """What the indexes hold of one record: ``vectors``, the texts embedded (one vector
    each, in this order), and ``title``, ``labels`` and ``body``, the three full-text
    columns."""

    vectors: tuple[str, ...]
    title: str
    labels: str
    body: str


#: Changes whenever ``document`` embeds different texts: a store indexed under another
#: recipe is re-embedded in the background (``search.background``), as after a model change.
RECIPE = "2"

#: A protocol's vector text is cut here; MiniLM reads at most 256 word pieces anyway.
MAX_VECTOR_CHARS = 2000
#: An entry's "<title>: <body>" vector text is cut here.
MAX_ENTRY_CHARS = 1200


def clean(text: str, limit: int | None = None) -> str:
    """Drop template noise: link targets, code fences, braces and brackets, extra spaces.
    With ``limit``, the first ``limit`` characters of that, read from no more of ``text``
    than they need.

    Each pass is one C call that holds the interpreter, so passes that cannot apply are
    skipped, and spaces are collapsed by ``str.split`` (the same whitespace as ``\\s``),
    many times faster than a regex on a long step."""
    if "](" in text:
        text = _LINK.sub(r"\1", text)
    if "```" in text:
        text = _FENCE.sub(" ", text)
    if limit is None:
        return " ".join(_TEMPLATE.sub("", text).split())
    kept: list[str] = []
    size = 0
    for token in _TOKEN.finditer(text):  # the words of ``text.split()``, lazily
        if word := _TEMPLATE.sub("", token.group()):
            kept.append(word)
            size += len(word) + 1
            if size > limit:
                break
    return " ".join(kept)[:limit]


def _lower_first(text: str) -> str:
    return text[:1].lower() + text[1:]


def document(title: str, intro: str = "", steps: Sequence[tuple[str, str]] = ()) -> DocText:
    """The search text of a record: a protocol (``intro`` is the text before its first
    step; ``steps`` are (label, body) pairs, the body as written, challenge included) or,
    without steps, a knowledge entry (``intro`` is its body)."""
    t, text = clean(title), clean(intro)
    if not steps:
        return DocText(vectors=(f"{t}: {text}"[:MAX_ENTRY_CHARS] if text else t, t,
                                text[:MAX_CONTENT_CHARS] or t),
                       title=t, labels="", body=text)
    labels = [clean(label) for label, _ in steps]
    contents = [c for _, body in steps
                if (c := step_search_body(body, MAX_CONTENT_CHARS))]
    words = [step_words(body, MAX_CONTENT_CHARS) for _, body in steps]
    head = f"{t}: {text} how to " if text else f"{t}: how to "
    summary = head + "; ".join(_lower_first(label) for label in labels if label)
    vectors: tuple[str, ...] = (summary[:MAX_VECTOR_CHARS],)
    if any(words):  # the fullest text first: the duplicate check compares first vectors
        said = head + "; ".join(_lower_first(f"{label} ({w})" if w else label)
                                for label, w in zip(labels, words, strict=True) if label or w)
        vectors = (said[:MAX_VECTOR_CHARS], *vectors)
    return DocText(vectors=vectors, title=t, labels=" ".join(labels),
                   body="\n".join(filter(None, [text, " ".join(contents)])))


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


def step_search_body(content: str, limit: int | None = None) -> str:
    """A step's body as search sees it, cleaned (``clean``, ``limit`` included): the
    challenge block gone, a ``PROOF OF WORK:`` line reduced to what follows the prefix (its
    command, tool or prompt)."""
    return clean(_POW_PREFIX.sub("", drop_json_blocks(content, objects_only=True))
                 .replace("`", " "), limit)


_CODE_SPAN = re.compile(r"`[^`\n]*`")
_CODE_BLOCK = re.compile(r"```.*?(?:```|\Z)", re.DOTALL)


def step_words(content: str, limit: int | None = None) -> str:
    """A step's body in words: without fenced blocks, code spans or challenge lines (the
    first ``limit`` characters, as ``clean``)."""
    return clean(_CODE_SPAN.sub(" ", _POW_LINE.sub("", _CODE_BLOCK.sub(" ", content))), limit)


def step_prose(label: str, content: str) -> str:
    """What a step asks for in words: its label and body without any challenge line or
    block (a comment is judged against this, not against ``min_length=20``)."""
    body = clean(_POW_LINE.sub("", drop_json_blocks(content, objects_only=True))
                 .replace("`", " "))
    return f"{clean(label)}. {body}".strip(" .") if body else clean(label)


def embedding_query(query: str) -> str:
    """The query as it is embedded: cleaned, without trailing sentence punctuation."""
    return clean(query).rstrip(" .!?;:,")  # clean() leaves no whitespace but single spaces


def title_form(text: str) -> str:
    """A query or a title with case, template noise, spacing and trailing punctuation set
    aside: a query whose form is a record's title's names that record."""
    return embedding_query(text).casefold()


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
