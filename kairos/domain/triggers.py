"""Author triggers: example requests that say when to use a protocol, written as YAML front
matter right before its ``# Title``::

    ---
    triggers:
      - the site is down
      - customers see errors
    ---
    # Respond to a production outage

The block sits at the top of a document, or right before any later ``# Title`` of a
document that holds several protocols (there its first line must be ``triggers:``, so a
step that ends with two horizontal rules is never read as one). ``triggers`` is the only
key; it holds a list of strings (or one string). Each trigger is searched like the
protocol's own text (``doctext.document``): a protocol scores the best of its vectors.

``markdown.parse`` calls ``split_front_matter`` before it reads headings (the block's lines
become blank, so every line number stays) and ``markdown.render`` writes ``front_matter``
back, so a dump mints again with its triggers. Pure, no I/O.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Sequence
from typing import Any

import yaml

from . import limits
from .errors import INVALID_INPUT, MarkdownError

__all__ = ["KEY", "clean_triggers", "front_matter", "split_front_matter"]

KEY = "triggers"
_DELIMITER = "---"


def _h1(line: str) -> bool:
    stripped = line.lstrip(" ")
    return len(line) - len(stripped) <= 3 and stripped.startswith("# ")


def _refuse(message: str, line: int, expected: str) -> MarkdownError:
    return MarkdownError(INVALID_INPUT, message, line, expected)


def clean_triggers(value: Any, line: int = 1) -> tuple[str, ...]:
    """A ``triggers`` value as a tuple of distinct, trimmed strings (case aside), checked
    against ``limits.TRIGGERS`` and ``limits.TRIGGER_CHARS``."""
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
        raise _refuse(f"Line {line}: 'triggers' must be a list of strings.", line,
                      "triggers: a list of example requests")
    out: dict[str, str] = {}
    for item in items:
        text = " ".join(item.split())
        if not text:
            continue
        if len(text) > limits.TRIGGER_CHARS:
            raise _refuse(f"Line {line}: a trigger is {len(text)} characters; the limit is "
                          f"{limits.TRIGGER_CHARS}.", line,
                          f"triggers of at most {limits.TRIGGER_CHARS} characters")
        out.setdefault(text.casefold(), text)
    if len(out) > limits.TRIGGERS:
        raise _refuse(f"Line {line}: {len(out)} triggers; the limit is {limits.TRIGGERS}.",
                      line, f"at most {limits.TRIGGERS} triggers per protocol")
    return tuple(out.values())


def _read(block: list[str], line: int) -> tuple[str, ...]:
    """The triggers of a front matter block (its lines between the delimiters); ``line``
    is the document line of its opening delimiter."""
    try:
        data = yaml.safe_load("\n".join(block))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = line + 1 + (mark.line if mark is not None else 0)
        raise _refuse(f"Line {at}: the front matter is not valid YAML.", at,
                      "YAML front matter: 'triggers:' and a list of strings") from None
    if data is None:
        return ()
    if not isinstance(data, dict):
        raise _refuse(f"Line {line + 1}: the front matter must be a mapping with the key "
                      "'triggers'.", line + 1, "triggers: a list of example requests")
    unknown = sorted(str(k) for k in data if k != KEY)
    if unknown:
        at = line + 1 + next(i for i, text in enumerate(block)
                             if text.split(":", 1)[0].strip() == unknown[0])
        raise _refuse(f"Line {at}: unknown front matter key '{unknown[0]}'; the only key is "
                      f"'{KEY}'.", at, f"the key '{KEY}'")
    return clean_triggers(data.get(KEY), line + 1)


def split_front_matter(lines: list[str], fenced: Sequence[bool]
                       ) -> tuple[list[str], dict[int, tuple[str, ...]]]:
    """``lines`` with each front matter block blanked, and the triggers of each block by
    the index of the ``# Title`` line that follows it. ``fenced`` marks the lines inside
    fenced code blocks, which never hold front matter. Linear in the number of lines."""
    out = list(lines)
    found: dict[int, tuple[str, ...]] = {}
    delimiters = [i for i, text in enumerate(lines)
                  if not fenced[i] and text.rstrip() == _DELIMITER]
    following = [len(lines)] * (len(lines) + 1)  # the next non-blank line at or after i
    for i in range(len(lines) - 1, -1, -1):
        following[i] = i if lines[i].strip() else following[i + 1]
    used = -1
    for opening, end in itertools.pairwise(delimiters):
        if opening <= used:
            continue
        after = following[end + 1]
        first = lines[following[opening + 1]] if following[opening + 1] < end else ""
        at_start = following[0] == opening
        if (after == len(lines) or fenced[after] or not _h1(lines[after])
                or not (at_start or first.startswith(f"{KEY}:"))):
            continue
        found[after] = _read(lines[opening + 1:end], opening + 1)
        out[opening:end + 1] = [""] * (end + 1 - opening)
        used = end
    return out, found


#: What YAML refuses in a document (its reader's "printable" set, inverted), and the line
#: breaks it would fold in a quoted string (NEL, U+2028, U+2029).
_UNPRINTABLE = re.compile("[^\t\n\r\x20-\x7e\xa0-\u2027\u202a-\ud7ff\ue000-\ufffd"
                          "\U00010000-\U0010ffff]")


def _escape(found: re.Match[str]) -> str:
    return f"\\u{ord(found.group()):04x}"


def front_matter(triggers: Sequence[str]) -> list[str]:
    """The front matter block of ``triggers`` (nothing when there are none), as lines.
    Each trigger is a JSON string, which YAML reads back as the same text; a character
    YAML may not hold as it is (``U+FFFF``, C1 controls, line breaks) is written as its
    escape."""
    if not triggers:
        return []
    items = [f"  - {_UNPRINTABLE.sub(_escape, json.dumps(t, ensure_ascii=False))}"
             for t in triggers]
    return [_DELIMITER, f"{KEY}:", *items, _DELIMITER]
