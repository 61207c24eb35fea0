"""Look-alike characters: text that a reader takes for a keyword but that is not it.

A challenge keyword (``PROOF OF WORK:``, ``mcp``, ``user_input`` ...) is compared after
Unicode NFKC normalisation, so full-width ``ｍｃｐ`` is ``mcp``. What NFKC leaves alone —
Cyrillic ``с`` in ``mсp``, Greek ``Ο`` in ``PRΟOF`` — is mapped to the Latin letter it is
confusable with by Unicode's confusables data (UTS #39, through ``confusable_homoglyphs``,
loaded only when a keyword position holds a character outside ASCII); invisible format
characters (zero-width spaces and joiners) are dropped. When the result spells a keyword
that the text itself does not, the text is a look-alike and is refused with the characters
named.
"""

from __future__ import annotations

import unicodedata
from functools import lru_cache

__all__ = ["describe", "nfkc", "skeleton", "strangers"]


def nfkc(text: str) -> str:
    return unicodedata.normalize("NFKC", text)


@lru_cache(maxsize=4096)
def _as_ascii(char: str) -> str:
    """The ASCII letter ``char`` is confusable with, "" for an invisible format character,
    else ``char`` itself."""
    if unicodedata.category(char) == "Cf":
        return ""
    from confusable_homoglyphs import confusables

    found = confusables.is_confusable(char, greedy=True,
                                      preferred_aliases=["latin", "common"]) or []
    for entry in found:
        for glyph in entry["homoglyphs"]:
            if glyph["c"].isascii():
                return str(glyph["c"])
    return char


def skeleton(text: str) -> str:
    """``text`` as a reader may read it: NFKC, then each remaining character outside ASCII
    replaced by the ASCII character it looks like (or dropped when invisible). Linear: each
    distinct character is looked up once."""
    text = nfkc(text)
    if text.isascii():
        return text
    table = {ord(c): _as_ascii(c) for c in set(text) if not c.isascii()}
    return text.translate(table)


def strangers(text: str) -> list[str]:
    """The characters of ``text`` (after NFKC) that are not ASCII, in order, once each."""
    return list(dict.fromkeys(c for c in nfkc(text) if not c.isascii()))


def describe(text: str) -> str:
    """``U+0441 CYRILLIC SMALL LETTER ES, ...``: the characters a look-alike is made of."""
    return ", ".join(f"U+{ord(c):04X} {unicodedata.name(c, 'UNNAMED CHARACTER')}"
                     for c in strangers(text)[:3])
