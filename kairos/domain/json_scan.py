"""JSON text read without parsing it, in pieces as it arrives: how many values it holds,
how deep it nests, how long its numbers are, whether it might hold text no store can keep,
and whether it is certainly not JSON (a string left open, brackets that do not close).

Every step runs in time linear in its piece, in a few passes of C (``bytes.replace``,
``translate``, substring search, a numpy sum) over at most ``PIECE`` bytes, so a server
can scan a request body piece by piece on its event loop as it arrives: no step holds the
interpreter for more than a fraction of a millisecond, whatever the body holds, and text
without escapes (most of any body) costs a byte search and little more.
"""

from __future__ import annotations

import re

from .errors import ValidationError

JSON_VALUES = 100_000
"""Values in one request body: more would cost the JSON parser (which holds the
interpreter while it runs) far more than any request needs."""
NUMBER_DIGITS = 100
"""Digits in a row in a JSON number: longer runs are refused before parsing (no number of a
request needs them, and converting them costs the parser, which holds the interpreter while
it runs, far more than their bytes)."""
PIECE = 1 << 15
"""Bytes scanned per step."""

_NOT_BRACKET = bytes(b for b in range(256) if b not in b"[]{}")
#: What each bracket does to the depth, as a byte read as a signed integer (0xff is -1).
_STEP = bytes.maketrans(b"[{]}", b"\x01\x01\xff\xff")
_QUOTED = re.compile(rb'"[^"]*"')  # tried at quotes only: an unclosed one fails once, at the end
#: Numbers by their shape: digits as 0, exponent letters as e, signs as +.
NUMBER_SHAPE = bytes.maketrans(b"0123456789eE+-", b"0000000000ee++")
#: In JSON text the only way to spell a NUL or a surrogate is a \\u escape.
_BAD_ESCAPE = re.compile(rb"\\u(?:0000|[dD][89a-fA-F][0-9a-fA-F]{2})")
_ESCAPE = len("\\u0000") - 1  # text kept from one piece to the next: an escape less one byte
_TOKEN = NUMBER_DIGITS  # structure kept: a number one digit too long, or a token, less one


def raw(text: str | bytes) -> bytes:
    return text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text


class JsonScan:
    """Feed JSON text (``feed``, any number of pieces), then ``finish``. Unless ``checks``
    is False, a ValidationError naming ``field`` is raised as soon as the text holds more
    than ``JSON_VALUES`` values (counted as commas, ``[`` and ``{``), nests deeper than
    ``depth_limit`` (None: no limit) or spells a number of more than ``NUMBER_DIGITS``
    digits.

    Strings are emptied before anything is counted: escaped backslashes, then escaped
    quotes, are dropped (neither can end a string), so every quote left opens or closes
    one. A piece never ends inside such an escape: an odd trailing backslash waits for
    the next piece.

    After ``finish``: ``deepest`` (the deepest nesting seen, counted up to just past the
    limit), ``not_json`` (a string left open, or brackets that do not balance: no parser
    would accept it) and ``suspect`` (it might decode to a NUL, a lone surrogate or a
    non-finite number: ``NaN``, ``Infinity``, a ``\\u`` escape of one, a three-digit
    exponent — worth parsing and walking with ``limits.check_value``)."""

    def __init__(self, field: str = "body", depth_limit: int | None = None, *,
                 checks: bool = True) -> None:
        self.field = field
        self.depth_limit = depth_limit
        self.checks = checks
        self.values = 1
        self.depth = self.deepest = 0
        self.unbalanced = False
        self.suspect = False
        self.not_json = False
        self._in_string = False
        self._backslash = b""  # an odd trailing backslash, held for the next piece
        self._escapes = b""    # the last bytes of the text so far, for an escape across pieces
        self._tail = b""       # the last bytes of the structure so far, for tokens across pieces

    def feed(self, text: str | bytes) -> None:
        data = raw(text)
        for start in range(0, len(data), PIECE):
            self._piece(data[start:start + PIECE])

    def finish(self) -> JsonScan:
        if self._backslash:  # the text ends inside an escape
            self._piece(b"", final=True)
        self.not_json = self._in_string or self.unbalanced or self.depth != 0
        return self

    def _piece(self, piece: bytes, final: bool = False) -> None:
        text, self._backslash = self._backslash + piece, b""
        if b"\\" in text or b"\\" in self._escapes:  # memchr: most text has no escape
            run = len(text) - len(text.rstrip(b"\\"))
            if run % 2 and not final:
                text, self._backslash = text[:-1], b"\\"
            text = text.replace(b"\\\\", b"").replace(b'\\"', b"")
            seam = self._escapes + text
            if b"\\u" in seam and _BAD_ESCAPE.search(seam):
                self.suspect = True
            self._escapes = seam[-_ESCAPE:]
        self._structure(text)

    def _structure(self, plain: bytes) -> None:
        """Count a piece with its escapes dropped."""
        if self._in_string:
            closing = plain.find(b'"')
            if closing < 0:
                return
            plain, self._in_string = plain[closing + 1:], False
        structure = _QUOTED.sub(b'""', plain)
        if structure.count(b'"') % 2:  # a string opens and goes on in the next piece
            structure = structure[:structure.rfind(b'"')] + b'""'
            self._in_string = True
        self.values += sum(structure.count(c) for c in (b",", b"[", b"{"))
        if self.values > JSON_VALUES and self.checks:
            raise ValidationError(self.field, f"at most {JSON_VALUES} JSON values",
                                  message=f"{self.field} holds about {self.values} JSON "
                                          f"values; the limit is {JSON_VALUES}.")
        self._nesting(structure)
        seam = self._tail + structure  # a token cut between pieces is whole here
        self._tail = seam[-_TOKEN:]
        shape = seam.translate(NUMBER_SHAPE)
        if self.checks and b"0" * (NUMBER_DIGITS + 1) in shape:
            raise ValidationError(self.field, f"JSON numbers of at most {NUMBER_DIGITS} digits",
                                  message=f"{self.field} holds a number of more than "
                                          f"{NUMBER_DIGITS} digits.")
        if not self.suspect and (b"NaN" in seam or b"Infinity" in seam
                                 or b"e000" in shape or b"e+000" in shape):
            self.suspect = True

    def _nesting(self, structure: bytes) -> None:
        brackets = structure.translate(None, _NOT_BRACKET)
        if not brackets:
            return
        limit = self.depth_limit
        if limit is not None and self.deepest > limit:
            return  # already past it: counting further changes nothing
        import numpy as np  # here: a start that checks no body (``kairos mcp``) needs none

        steps = np.frombuffer(brackets.translate(_STEP), dtype=np.int8)
        levels = steps.cumsum(dtype=np.int64) + self.depth
        self.depth, self.deepest = int(levels[-1]), max(self.deepest, int(levels.max()))
        self.unbalanced = self.unbalanced or int(levels.min()) < 0
        if limit is not None and self.deepest > limit and self.checks:
            raise ValidationError(self.field, f"JSON nested at most {limit} levels deep",
                                  message=f"{self.field} nests JSON more than {limit} "
                                          "levels deep.")


__all__ = ["JSON_VALUES", "NUMBER_DIGITS", "PIECE", "JsonScan"]
