"""Every size limit of KAIROS, defined once, and the checks on input text shared by all
surfaces: JSON nesting depth, NUL characters and lone surrogates.

The configurable limits are settings (``KAIROS_MAX_*``, see the README): ``Settings.limits``
is read once at start and handed to what checks them (the parser, the HTTP guard, the
services); ``DEFAULT`` is what a check uses when it is given none.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, fields
from typing import Any

from .errors import ValidationError
from .json_scan import JSON_VALUES, NUMBER_DIGITS, JsonScan


@dataclass(frozen=True)
class Limits:
    body_bytes: int = 4_000_000
    """An HTTP request body (checked before it is read whole)."""
    document_bytes: int = 1_000_000
    """A markdown document to mint (UTF-8 bytes)."""
    steps: int = 200
    """Steps of one protocol."""
    title_chars: int = 200
    """A protocol title."""
    label_chars: int = 200
    """A step label (its ``##`` heading)."""
    message_chars: int = 10_000
    """An attestation message."""
    json_depth: int = 64
    """Nesting of JSON objects and arrays, in a request body or a challenge block."""
    inflight: int = 16
    """Requests served at once by one HTTP process; more wait in its queue."""
    queue: int = 64
    """Requests that wait for one of those slots; more are answered 503."""
    wait_ms: int = 5_000
    """How long a request waits for a slot before it is answered 503."""
    mcp_sessions: int = 100
    """MCP sessions one token (or, without tokens, the server) may hold open at once."""


DEFAULT = Limits()
"""The limits of a server configured with none."""

#: Setting key (``config.DEFAULTS``, ``KAIROS_<KEY>``) → Limits field.
SETTINGS = {f"max_{f.name}": f.name for f in fields(Limits)}


def setting_defaults() -> dict[str, int]:
    """The ``max_*`` settings with their default values (for ``config.DEFAULTS``)."""
    return {key: getattr(DEFAULT, name) for key, name in SETTINGS.items()}


#: Fixed limits (they follow from the schema or from the challenge semantics).
MODEL_ID_CHARS = 128
SESSION_ID_CHARS = 128  # a search session's id (X-CHL-Session, session_id)
OFFSET_MAX = 1_000_000_000  # how far a page may start (fits every database's integers)
PAGE_MAX = 500  # items of one page of protocols, runs or entries
RESOURCE_PAGE = 100  # items of one page of MCP resources/list
PLAYBOOK_CHARS = 2_000  # an experience's playbook and context, a manual's summary
CONTENT_CHARS = 100_000  # a manual's content
AUTHOR_CHARS = 200
ENTRY_TITLE_CHARS = 120  # an experience's or a manual's title
COMMENT_MIN_LENGTH_MAX = 10_000
QUERY_CHARS = 2_000  # a search query
SEARCH_LIMIT = 25  # results per search page (contract §5: small pages for LLM contexts)
SEARCH_DEFAULT = 10  # results per search page when none is asked for
SNIPPET_MIN, SNIPPET_DEFAULT, SNIPPET_MAX = 80, 320, 640  # characters of a snippet
SHELL_TIMEOUT_MAX_SECONDS = 86_400
TRIGGERS = 20  # author triggers of one protocol (its front matter's ``triggers:``)
TRIGGER_CHARS = 200  # one trigger, author's or learned
LEARNED_TRIGGERS = 10  # learned triggers kept per protocol (the least recently used go)

# --- raw JSON: depth and bad text, checked before parsing ---------------------------------
def json_depth(text: str | bytes, stop_above: int | None = None) -> int:
    """The deepest nesting of ``[`` and ``{`` in JSON text, without parsing it (strings are
    skipped); stops counting once the depth passes ``stop_above``."""
    scan = JsonScan(depth_limit=stop_above, checks=False)
    scan.feed(text)
    return scan.deepest


def check_json_text(text: str | bytes, field: str, limit: int) -> None:
    """ValidationError when JSON text, read without parsing it, holds more than
    ``JSON_VALUES`` values, nests deeper than ``limit``, or spells a number of more than
    ``NUMBER_DIGITS`` digits: the limits checked before a parser runs (``JsonScan``)."""
    JsonScan(field, limit).feed(text)


BAD_CHAR = re.compile("[\x00\ud800-\udfff]")


def bad_text(value: Any, path: str = "", max_depth: int | None = None
             ) -> tuple[str, str] | None:
    """(field path, problem) of the first string or object key in ``value`` that holds a
    NUL character or a lone surrogate, of a NaN or infinite number, or of the first
    container nested deeper than ``max_depth``; None when there is none."""
    stack: list[tuple[str, Any, int]] = [(path, value, 0)]
    while stack:
        where, item, depth = stack.pop()
        if isinstance(item, str):
            m = BAD_CHAR.search(item)
            if m:
                what = "a NUL character" if m.group() == "\x00" else "a lone surrogate"
                return where or "body", what
            continue
        if isinstance(item, float) and not math.isfinite(item):
            return where or "body", "a number that is not finite (NaN or Infinity)"
        if isinstance(item, dict | list) and max_depth is not None and depth >= max_depth:
            return where or "body", f"JSON nested more than {max_depth} levels deep"
        if isinstance(item, dict):
            for key, sub in reversed(list(item.items())):
                if isinstance(key, str) and BAD_CHAR.search(key):
                    return where or "body", "an object key that is not valid text"
                stack.append((f"{where}.{key}" if where else str(key), sub, depth + 1))
        elif isinstance(item, list):
            stack.extend((f"{where}[{i}]", sub, depth + 1)
                         for i, sub in reversed(list(enumerate(item))))
    return None


def check_value(value: Any, limit: int, path: str = "") -> None:
    """ValidationError naming the first field that holds text no store can keep (NUL, a
    lone surrogate) or nests deeper than ``limit`` (the JSON depth limit)."""
    found = bad_text(value, path, limit)
    if found is not None:
        field, what = found
        if what.startswith("JSON nested"):
            raise ValidationError(field, f"JSON nested at most {limit} levels deep",
                                  message=f"Invalid {field}: {what}.")
        if what.startswith("a number"):
            raise ValidationError(field, "a finite number", message=f"Invalid {field}: {what}.")
        raise ValidationError(field, "text without NUL characters or lone surrogates",
                              message=f"Invalid {field}: it contains {what}; expected valid "
                                      "Unicode text without NUL (U+0000).")


def check_length(value: str | None, field: str, limit: int) -> None:
    if value is not None and len(value) > limit:
        raise ValidationError(field, f"at most {limit} characters",
                              message=f"{field} is {len(value)} characters; the limit is "
                                      f"{limit}.")


__all__ = ["AUTHOR_CHARS", "BAD_CHAR", "COMMENT_MIN_LENGTH_MAX", "CONTENT_CHARS", "DEFAULT",
           "ENTRY_TITLE_CHARS", "JSON_VALUES", "MODEL_ID_CHARS", "NUMBER_DIGITS", "OFFSET_MAX",
           "PAGE_MAX", "PLAYBOOK_CHARS", "QUERY_CHARS", "RESOURCE_PAGE", "SEARCH_DEFAULT",
           "SEARCH_LIMIT", "SESSION_ID_CHARS", "SETTINGS", "SHELL_TIMEOUT_MAX_SECONDS",
           "SNIPPET_DEFAULT", "SNIPPET_MAX", "SNIPPET_MIN", "Limits", "bad_text",
           "check_json_text", "check_length", "check_value", "json_depth", "setting_defaults"]
