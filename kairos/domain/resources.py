"""MCP resources as plain data: the URI forms KAIROS serves, matching a URI to one of
them, and the opaque cursor of a ``resources/list`` page. Pure: the service reads the
records, the MCP surface speaks the protocol.

Each kind is one row of ``KINDS``: a template (RFC 6570, as ``resources/templates/list``
shows it) and the pattern that reads a URI of that kind. A new kind is one more row.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from dataclasses import dataclass
from typing import Any

from .errors import INVALID_URI, NotFoundError, ValidationError
from .requests import UUID_PATTERN
from .texts import MIME_MARKDOWN

GUIDE_URI = "kairos://guide"
GUIDE, PROTOCOL, ENTRY, RUN, BUNDLE = "guide", "protocol", "entry", "run", "bundle"
MIME_JSON = "application/json"


@dataclass(frozen=True)
class Kind:
    name: str
    template: str
    pattern: re.Pattern[str]
    mime_type: str
    title: str
    description: str


KINDS = (
    Kind(GUIDE, GUIDE_URI, re.compile(r"^kairos://guide$"), MIME_MARKDOWN,
         "How to use KAIROS",
         "How to search, begin, answer each step and attest, for agents."),
    Kind(PROTOCOL, "kairos://mem/{uuid}{?version}",
         re.compile(rf"^kairos://mem/(?P<id>{UUID_PATTERN})(?:\?version=(?P<version>[^&]*))?$"),
         MIME_MARKDOWN, "Protocol",
         "A protocol's markdown (the URI of its step 1) or one step's (any other step). "
         "version: the text of that version."),
    Kind(ENTRY, "kairos://entries/{id}", re.compile(rf"^kairos://entries/(?P<id>{UUID_PATTERN})$"),
         MIME_JSON, "Experience or manual", "A knowledge entry in full, as JSON."),
    Kind(RUN, "kairos://runs/{id}", re.compile(rf"^kairos://runs/(?P<id>{UUID_PATTERN})$"),
         MIME_JSON, "Run",
         "A run with its proof chain and the chain's verification, as JSON."),
    Kind(BUNDLE, "kairos://runs/{id}/bundle",
         re.compile(rf"^kairos://runs/(?P<id>{UUID_PATTERN})/bundle$"), MIME_JSON,
         "Signed run bundle",
         "A run as a signed bundle that anyone with the server's public keys verifies "
         "offline (docs/bundle.md)."),
)
TEMPLATES = tuple(k for k in KINDS if "{" in k.template)


@dataclass(frozen=True)
class ResourceRef:
    kind: str
    id: str | None = None
    version: int | None = None


def parse_resource(uri: Any) -> ResourceRef:
    """The resource a URI names. A URI of no known form is ``INVALID_URI``; a version that
    is no positive integer is ``INVALID_INPUT`` naming ``version``."""
    expected = "a URI of the form " + ", ".join(k.template for k in KINDS)
    if not isinstance(uri, str):
        raise ValidationError("uri", expected, code=INVALID_URI)
    for kind in KINDS:
        match = kind.pattern.match(uri)
        if match is None:
            continue
        found = match.groupdict()
        raw = found.get("version")
        version = None
        if raw is not None:
            if not raw.isdigit() or int(raw) < 1 or len(raw) > 9:
                raise ValidationError("version", "a positive integer")
            version = int(raw)
        ident = found.get("id")
        return ResourceRef(kind.name, ident.lower() if ident else None, version)
    raise ValidationError("uri", expected, code=INVALID_URI,
                          message=f"Invalid uri {uri[:200]!r}: expected {expected}.")


def unknown(uri: str) -> NotFoundError:
    """What a URI answers when it names nothing the caller may read (another space's
    record answers exactly the same)."""
    return NotFoundError(f"No resource {uri}.", field="uri")


def entry_uri(entry_id: str) -> str:
    return f"kairos://entries/{entry_id}"


def run_uri(run_id: str) -> str:
    return f"kairos://runs/{run_id}"


# --- cursors ----------------------------------------------------------------------------------

SECTIONS = ("protocol", "experience", "manual")
"""What a listing walks through, in order, after the guide and the built-in protocols."""


@dataclass(frozen=True)
class Cursor:
    """Where the next page starts: after the key ``(sort, id)`` of ``section``."""

    section: str
    sort: str
    id: str

    def encode(self) -> str:
        raw = json.dumps([self.section, self.sort, self.id], separators=(",", ":"))
        return base64.urlsafe_b64encode(raw.encode("utf-8")).decode("ascii").rstrip("=")

    @classmethod
    def decode(cls, text: Any) -> Cursor:
        expected = "a cursor returned by the previous page"
        if not isinstance(text, str) or len(text) > 2048:
            raise ValidationError("cursor", expected)
        try:
            raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
            section, sort, ident = json.loads(raw.decode("utf-8"))
        except (binascii.Error, UnicodeDecodeError, ValueError, TypeError):
            raise ValidationError("cursor", expected) from None
        if section not in SECTIONS or not isinstance(sort, str) or not isinstance(ident, str):
            raise ValidationError("cursor", expected)
        return cls(section, sort, ident)


__all__ = ["ENTRY", "GUIDE", "GUIDE_URI", "KINDS", "MIME_JSON", "PROTOCOL", "RUN",
           "SECTIONS", "TEMPLATES", "Cursor", "Kind", "ResourceRef", "entry_uri",
           "parse_resource", "run_uri", "unknown"]
