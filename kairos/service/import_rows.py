"""The rows of an export, checked one by one as an import reads them: every column a
table has, of the type and within the limits a live write would give it.

``Row`` wraps one record with its line, so each refusal names the line and the field
(``steps.challenge``) and says what was expected. Checks that need several rows (the
protocol a step belongs to, a run's proof chain) are in ``service.imports``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from datetime import datetime
from typing import Any

from ..domain import challenge as ch
from ..domain import doctext, engine, limits
from ..domain.bundle_format import content_hash
from ..domain.canonical import CHAIN_RULES, KAIROS_JSON_1
from ..domain.errors import KairosError, MarkdownError, ValidationError
from ..domain.limits import Limits
from ..domain.proof import HASH_RE, RECORD_KEYS
from ..domain.requests import UUID_PATTERN
from ..domain.triggers import clean_triggers

__all__ = ["Row", "check_attestation", "check_category", "check_learned_trigger",
           "check_proof", "check_protocol", "check_run", "check_step", "check_version",
           "refused"]

_MISSING: Any = object()
_UUID = re.compile(f"^{UUID_PATTERN}$")
_URI = re.compile(f"^kairos://mem/{UUID_PATTERN}$")
_STAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,6})?\+00:00$")
_CODE = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,63}$")
OUTCOMES = ("success", "failure")
CALLER_CHARS = 128  # runs.caller


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def refused(line: int, field: str, expected: str, message: str) -> ValidationError:
    return ValidationError(field, expected, line=line,
                           message=f"Line {line}: {message}. Nothing was imported.")


class Row:
    """One exported record: its table, its line in the file and its columns, checked
    within ``limits`` (those of a live write)."""

    def __init__(self, table: str, line: int, values: dict[str, Any], limits: Limits) -> None:
        self.table, self.line, self.values, self.limits = table, line, values, limits

    def refuse(self, column: str, expected: str, got: Any = _MISSING) -> ValidationError:
        what = "is missing" if got is _MISSING else f"is {_shown(got)}"
        return refused(self.line, f"{self.table}.{column}", expected,
                       f"{self.table}.{column} {what}; expected {expected}")

    def get(self, column: str, expected: str, ok: Callable[[Any], bool], *,
            nullable: bool = False) -> Any:
        if column not in self.values:
            if nullable:
                return None
            raise self.refuse(column, expected)
        value = self.values[column]
        if (value is None and nullable) or (value is not None and ok(value)):
            return value
        raise self.refuse(column, expected + (" or null" if nullable else ""), value)

    # --- column kinds ----------------------------------------------------------------------

    def id(self, column: str = "id", *, nullable: bool = False) -> Any:
        return self.get(column, "a uuid", lambda v: isinstance(v, str) and bool(_UUID.match(v)),
                        nullable=nullable)

    def text(self, column: str, limit: int, *, nullable: bool = False,
             blank: bool = True) -> Any:
        return self.get(column, f"a string of at most {limit} characters"
                        + ("" if blank else " that is not blank"),
                        lambda v: isinstance(v, str) and len(v) <= limit
                        and (blank or bool(v.strip())), nullable=nullable)

    def integer(self, column: str, low: int, high: int) -> Any:
        return self.get(column, f"an integer from {low} to {high}",
                        lambda v: isinstance(v, int) and not isinstance(v, bool)
                        and low <= v <= high)

    def number(self, column: str, low: float, high: float, *, nullable: bool = False) -> Any:
        return self.get(column, f"a number from {low:g} to {high:g}",
                        lambda v: isinstance(v, int | float) and not isinstance(v, bool)
                        and math.isfinite(v) and low <= v <= high, nullable=nullable)

    def flag(self, column: str) -> Any:
        return self.get(column, "true or false", lambda v: isinstance(v, bool))

    def one_of(self, column: str, choices: tuple[str, ...], *, nullable: bool = False) -> Any:
        return self.get(column, "one of " + ", ".join(choices), lambda v: v in choices,
                        nullable=nullable)

    def stamp(self, column: str) -> Any:
        return self.get(column, "an ISO-8601 UTC time such as 2026-01-31T12:00:00.000000+00:00",
                        _is_stamp)

    def hash(self, column: str) -> Any:
        return self.get(column, "a sha256 hex digest (64 characters 0-9a-f)",
                        lambda v: isinstance(v, str) and bool(HASH_RE.match(v)))

    def uri(self, column: str) -> Any:
        return self.get(column, "a step URI kairos://mem/<uuid>",
                        lambda v: isinstance(v, str) and bool(_URI.match(v)))


def _is_stamp(value: Any) -> bool:
    if not isinstance(value, str) or not _STAMP.match(value):
        return False
    try:
        datetime.fromisoformat(value)
    except ValueError:
        return False
    return True


def _challenge_ok(value: Any) -> bool:
    """A challenge as a run issued it: a known type with its parameters (plus the nonce
    and proof_hash the run added)."""
    if not isinstance(value, dict) or not isinstance(value.get("description"), str):
        return False
    kind = value.get("type")
    try:
        ch.challenge_from_json({"type": kind, kind: value.get(kind)} if isinstance(kind, str)
                               else {"type": kind})
    except KairosError:
        return False
    return True


# --- the tables ------------------------------------------------------------------------------

def check_protocol(row: Row) -> dict[str, Any]:
    """Title, intro and steps are checked by minting them again (``imports``)."""
    if row.values.get("builtin") not in (False, None):
        raise row.refuse("builtin", "false: built-in protocols are installed by the server, "
                         "not imported", row.values.get("builtin"))
    if row.values.get("source_hash") is not None:
        raise row.refuse("source_hash", "null (a hash only built-in protocols have)",
                         row.values["source_hash"])
    lim = row.limits
    return {"id": row.id(), "title": row.text("title", lim.title_chars, blank=False),
            "intro": row.text("intro", lim.document_bytes),
            "tags": row.get("tags", "a list of strings", lambda v: isinstance(v, list)
                            and all(isinstance(t, str) for t in v)),
            "llm_model_id": row.text("llm_model_id", limits.MODEL_ID_CHARS, nullable=True),
            "triggers": _triggers(row, row.values.get("triggers", [])),
            "version": row.integer("version", 1, _MAX) if "version" in row.values else 1,
            "created_at": row.stamp("created_at"), "updated_at": row.stamp("updated_at")}


def _triggers(row: Row, value: Any, column: str = "triggers") -> list[str]:
    """Author triggers (or one learned trigger's text) as a mint would keep them."""
    try:
        return list(clean_triggers(value, row.line))
    except MarkdownError as exc:
        raise row.refuse(column, exc.expected or "a list of strings", value) from None


def check_learned_trigger(row: Row) -> dict[str, Any]:
    """A learned trigger: its text and use count; its vector is made again by the
    importing store's model (``search.learning``)."""
    text = _triggers(row, row.text("text", limits.TRIGGER_CHARS, blank=False), "text")
    return {"id": row.id(), "protocol_id": row.id("protocol_id"), "text": text[0],
            "text_key": doctext.title_form(text[0]), "runs": row.integer("runs", 1, 1_000_000),
            "created_at": row.stamp("created_at"), "last_seen": row.stamp("last_seen")}


def check_step(row: Row) -> dict[str, Any]:
    lim = row.limits
    return {"id": row.id(), "protocol_id": row.id("protocol_id"),
            "position": row.integer("position", 0, lim.steps - 1),
            "label": row.text("label", lim.label_chars, blank=False),
            "content": row.text("content", lim.document_bytes),
            "challenge": row.get("challenge", "a challenge object {type, description, "
                                 "<type>: {...}}", _challenge_ok),
            "updated_at": row.stamp("updated_at")}


def check_run(row: Row) -> dict[str, Any]:
    lim = row.limits
    return {"id": row.id(), "protocol_id": row.id("protocol_id"),
            "caller": row.text("caller", CALLER_CHARS, blank=False),
            "status": row.one_of("status", engine.RUN_STATUSES),
            "step_index": row.integer("step_index", 0, lim.steps),
            "challenge": row.get("challenge", "a challenge object {type, description, "
                                 "<type>: {...}}", _challenge_ok, nullable=True),
            "head": row.hash("head"),
            "retry_count": row.integer("retry_count", 0, 1_000_000),
            "attempt": row.integer("attempt", 1, 1_000_000),
            "outcome": row.one_of("outcome", OUTCOMES, nullable=True),
            "outcome_model": row.text("outcome_model", limits.MODEL_ID_CHARS, nullable=True),
            "failed_step_id": row.id("failed_step_id", nullable=True),
            "message": row.text("message", lim.message_chars, nullable=True),
            "quality_bonus": row.number("quality_bonus", -1, 1, nullable=True),
            "proven": row.flag("proven"),
            # An export made before versions holds neither: its runs followed version 1
            # and were hashed with the first rule.
            "protocol_version": (row.integer("protocol_version", 1, _MAX)
                                 if "protocol_version" in row.values else 1),
            "chain_rule": (row.one_of("chain_rule", CHAIN_RULES)
                           if "chain_rule" in row.values else KAIROS_JSON_1),
            "created_at": row.stamp("created_at"), "updated_at": row.stamp("updated_at")}


_MAX = 1_000_000


def _version_steps_ok(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(
        isinstance(s, dict) and set(s) == {"id", "label", "content", "challenge"}
        and isinstance(s["id"], str) and bool(_UUID.match(s["id"]))
        and isinstance(s["label"], str) and isinstance(s["content"], str)
        and _challenge_ok(s["challenge"]) for s in value)


def check_version(row: Row) -> dict[str, Any]:
    """A protocol version: its hash must be its text's (its steps are checked against the
    text by minting it again, in ``imports``)."""
    lim = row.limits
    values = {"protocol_id": row.id("protocol_id"), "version": row.integer("version", 1, _MAX),
              "title": row.text("title", lim.title_chars, blank=False),
              "markdown": row.text("markdown", lim.document_bytes, blank=False),
              "content_hash": row.hash("content_hash"),
              "steps": row.get("steps", "a list of steps {id, label, content, challenge}",
                               _version_steps_ok),
              "created_at": row.stamp("created_at")}
    digest = content_hash(values["markdown"])
    if values["content_hash"] != digest:
        raise row.refuse("content_hash", f"the sha256 of its markdown ({digest})",
                         values["content_hash"])
    return values


def check_proof(row: Row) -> dict[str, Any]:
    record = row.get("record", "an object with " + ", ".join(RECORD_KEYS),
                     lambda v: isinstance(v, dict) and all(k in v for k in RECORD_KEYS))
    values = {"run_id": row.id("run_id"), "seq": row.integer("seq", 0, 1_000_000),
              "step_uri": row.uri("step_uri"),
              "step_index": row.integer("step_index", 0, row.limits.steps),
              "record": record, "previous_hash": row.hash("previous_hash"),
              "proof_hash": row.hash("proof_hash"), "created_at": row.stamp("created_at")}
    for column in ("run_id", "step_uri", "step_index", "previous_hash"):
        if record[column] != values[column]:
            raise row.refuse(f"record.{column}", f"the proof's {column} "
                             f"({_shown(values[column])})", record[column])
    return values


def check_attestation(row: Row) -> dict[str, Any]:
    return {"run_id": row.id("run_id"), "protocol_id": row.id("protocol_id"),
            "step_uri": row.uri("step_uri"), "outcome": row.one_of("outcome", OUTCOMES),
            "message": row.text("message", row.limits.message_chars),
            "quality_bonus": row.number("quality_bonus", -1, 1),
            "llm_model_id": row.text("llm_model_id", limits.MODEL_ID_CHARS, nullable=True),
            "proven": row.flag("proven"), "created_at": row.stamp("created_at")}


def check_category(row: Row) -> dict[str, Any]:
    return {"code": row.get("code", "a code of lower-case letters, digits, '.', '_' or '-' "
                            "(at most 64)", lambda v: isinstance(v, str) and bool(_CODE.match(v))),
            "name": row.text("name", limits.ENTRY_TITLE_CHARS, blank=False),
            "description": row.text("description", limits.PLAYBOOK_CHARS)}
