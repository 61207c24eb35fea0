"""Lexical evidence: which of a query's words a record holds, and where.

The full-text index says how many stored documents hold each word of the query
(``store.text_index.Terms``); ``Words.holds`` reads which of them a candidate's title and
its other text (step labels and bodies, triggers) hold, comparing words by a light stem
(``stem``: plurals and -ing/-ed forms meet). From that:

* a word and the same word with a final ``e`` (``stat`` / ``state``, ``glob`` / ``globe``,
  ``buildkit`` / ``buildkite``) meet at one stem but are different words: a record's word
  does not stand for the query's (``other_word``);
* **weight** of a word: its IDF (``scoring.fts5_idf``), so that rare words count more; a
  word the store has never seen weighs the most, so an unknown word in the query lowers
  every share below;
* **title share**: the weight of the query's words found in the title over the weight of
  all of them (1.0: every word of the query is in the title);
* **share**: the same over the title and the steps together;
* **rarity** of a word: ``1 - ln(count) / ln(n_docs)``, 1 for a word one document holds,
  0 for a word every document holds, whatever the size of the store; a word is **rare**
  when its rarity is at least ``RARE`` (a store of 50 documents: at most 3 hold it; of
  5,000: at most 13);
* **noise**: words that are mostly digits or look random (``is_noise``) count for
  nothing: a number or a random token in a query never carries a match on its own;
* **every word in the title** (``all_title``): the title holds every informative word;
* **rare and complete** (``rare_full``): the record holds every informative word, one of
  them rare: "a rare term found in a step", an exact command or tool name.

Pure functions, no I/O.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from .scoring import fts5_idf

__all__ = ["RARE", "Lexical", "Words", "is_noise", "other_word", "rarity", "stem", "words"]

#: A word that at most ``n_docs ** (1 - RARE)`` documents hold is rare.
RARE = 0.70

_RUNS = re.compile(r"[a-z]+|[0-9]+")
_WORD = re.compile(r"[^\W_]+")
#: A record's text beyond this many characters is not read for lexical evidence.
MAX_TEXT_CHARS = 20_000


@lru_cache(maxsize=65_536)
def stem(word: str) -> str:
    """A light English stem, the same for a query's words and a record's: ``files`` →
    ``file``, ``released`` / ``releasing`` / ``release`` → ``releas``, ``running`` →
    ``run``. Words of three letters or fewer stay as they are."""
    return _stemmed(word)[0]


@lru_cache(maxsize=65_536)
def _stemmed(word: str) -> tuple[str, str]:
    """The stem, and what it took off beyond a plural: ``"ed"`` (an -ed or -ing form),
    ``"e"`` (a final e alone) or ``""``."""
    w = word.lower()
    if len(w) <= 3:
        return w, ""
    if w.endswith("ies") and len(w) > 4:
        w = w[:-3] + "y"
    elif w.endswith("sses"):
        w = w[:-2]
    elif w.endswith("s") and not w.endswith(("ss", "us", "is")):
        w = w[:-1]
    for suffix in ("ing", "ed"):
        if w.endswith(suffix) and len(w) - len(suffix) >= 3:
            w = w[:-len(suffix)]
            if len(w) >= 4 and w[-1] == w[-2] and w[-1] not in "lsz":
                w = w[:-1]
            return (w[:-1] if w.endswith("e") and len(w) > 4 else w), "ed"
    return (w[:-1], "e") if w.endswith("e") and len(w) > 4 else (w, "")


def other_word(a: str, b: str) -> bool:
    """Whether two words of one stem are different words that differ by a final ``e``
    (plurals aside): ``stat`` and ``state``, ``glob`` and ``globes``, ``buildkit`` and
    ``buildkite``; not ``release`` and ``released`` or ``process`` and ``processes``."""
    return {_stemmed(a)[1], _stemmed(b)[1]} == {"e", ""}


def is_noise(word: str) -> bool:
    """A number, or a token that reads as random: all digits, or five characters or more
    of which three in four are digits, letters and digits alternating in five runs or
    more (``a7fk29xq``, but not ``sha256sum``, ``h264``, ``k8s`` or ``log4j``), or 30
    characters and longer."""
    w = word.lower()
    digits = sum(c.isdigit() for c in w)
    return (digits == len(w) or (len(w) >= 5 and digits * 4 >= len(w) * 3)
            or len(_RUNS.findall(w)) >= 5 or len(w) >= 30)


def rarity(n_docs: int, count: int) -> float:
    """How few of ``n_docs`` documents hold a word, in [0, 1] (1: one document or none)."""
    if count <= 1 or n_docs <= 1:
        return 1.0
    return max(0.0, 1.0 - math.log(count) / math.log(n_docs))


@dataclass(frozen=True, slots=True)
class Lexical:
    """A candidate's lexical evidence (see the module docstring)."""

    title_share: float = 0.0
    share: float = 0.0
    rare: float = 0.0          # the rarity of the rarest query word it holds
    informative: int = 0       # the query's words that are not noise

    @property
    def all_title(self) -> bool:
        return self.informative > 0 and self.title_share >= 1.0 - 1e-9

    @property
    def rare_full(self) -> bool:
        return self.informative > 0 and self.share >= 1.0 - 1e-9 and self.rare >= RARE

    def to_dict(self) -> dict[str, float | int | bool]:
        return {"title_share": round(self.title_share, 4), "share": round(self.share, 4),
                "rare": round(self.rare, 4), "informative_words": self.informative,
                "every_word_in_title": self.all_title, "rare_and_complete": self.rare_full}


@dataclass(frozen=True, slots=True)
class Words:
    """A query's informative words as the lexical evidence reads them: their stems, IDF
    weights and rarities (``words``), computed once per query."""

    stems: tuple[str, ...]
    weights: tuple[float, ...]
    rarities: tuple[float, ...]
    total: float
    #: A text's words that start like one of the stems (the only ones worth stemming).
    starts: re.Pattern[str] = re.compile(r"(?!)")
    #: The query's own forms (lower case) of each stem, for ``other_word``.
    forms: Mapping[str, frozenset[str]] = field(default_factory=dict, hash=False,
                                                 compare=False)

    @property
    def informative(self) -> int:
        return len(self.stems)

    def holds(self, title: str, rest: str) -> tuple[int, int]:
        """(title bits, anywhere bits): bit i set when ``title`` (``title`` or ``rest``)
        holds word i, compared by ``stem``."""
        wanted, forms = set(self.stems), self.forms

        def found(text: str) -> set[str]:
            return {st for w in set(self.starts.findall(text.lower()))
                    if (st := stem(w)) in wanted and (st not in forms or w in forms[st]
                                                      or not all(other_word(w, f)
                                                                 for f in forms[st]))}

        in_title = found(title)
        anywhere = in_title | found(rest[:MAX_TEXT_CHARS])
        title_bits = any_bits = 0
        for i, s in enumerate(self.stems):
            if s in in_title:
                title_bits |= 1 << i
            if s in anywhere:
                any_bits |= 1 << i
        return title_bits, any_bits

    def of(self, title_bits: int, any_bits: int) -> Lexical:
        """The lexical evidence of a record holding these words (``holds``)."""
        if self.total <= 0.0:
            return Lexical(informative=self.informative)
        title = found = rare = 0.0
        for i, (weight, rarest) in enumerate(zip(self.weights, self.rarities, strict=True)):
            if title_bits >> i & 1:
                title += weight
            if (title_bits | any_bits) >> i & 1:
                found += weight
                rare = max(rare, rarest)
        return Lexical(title / self.total, found / self.total, rare, self.informative)


def words(query_words: Sequence[str], counts: Sequence[int], n_docs: int) -> Words:
    """The informative words of a query (noise left out), from ``text_index.Terms``: each
    word's document count among ``n_docs``."""
    kept = [(w, c) for w, c in zip(query_words, counts, strict=True) if not is_noise(w)]
    weights = tuple(fts5_idf(n_docs, c) for _, c in kept)
    stems = tuple(stem(w) for w, _ in kept)
    heads = sorted({re.escape(s[:3]) for s in stems})
    starts = re.compile(r"(?<![^\W_])(?:" + "|".join(heads) + r")[^\W_]*") if heads else (
        re.compile(r"(?!)"))
    forms: dict[str, frozenset[str]] = {}
    for st, (w, _) in zip(stems, kept, strict=True):
        forms[st] = forms.get(st, frozenset()) | {w.lower()}
    return Words(stems, weights, tuple(rarity(n_docs, c) for _, c in kept), sum(weights),
                 starts, forms)
