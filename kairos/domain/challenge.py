"""Challenges: how a step declares one, how it is shown, and how an answer is checked."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from . import limits, lookalike, relevance, texts
from .errors import (
    INVALID_CHALLENGE_JSON,
    MISSING_CHALLENGE_FIELD,
    UNKNOWN_CHALLENGE_TYPE,
    MarkdownError,
)

CHALLENGE_TYPES = ("shell", "mcp", "user_input", "comment")
DEFAULT_SHELL_TIMEOUT = 30
AFFIRMATIVE = frozenset(
    {"yes", "y", "ok", "okay", "approve", "approved", "confirm", "confirmed", "accept",
     "accepted", "agree", "agreed", "proceed", "go", "sure", "true", "affirmative", "yep",
     "yeah", "granted", "allow", "allowed", "continue", "done"}
)


@dataclass(frozen=True)
class Challenge:
    """A step's declared challenge: ``type`` plus that type's parameters."""

    type: str
    params: dict[str, Any]
    description: str

    def to_dict(self) -> dict[str, Any]:
        """The challenge as shown to an agent, before nonce and proof_hash are added."""
        return {"type": self.type, "description": self.description, self.type: dict(self.params)}


def default_challenge() -> Challenge:
    return make_challenge("comment", {"min_length": texts.DEFAULT_COMMENT_MIN_LENGTH})


#: A challenge's description when its step gives none, from its parameters.
_DESCRIPTIONS = {"shell": "Execute shell command: {cmd}", "mcp": "Call MCP tool: {tool_name}",
                 "user_input": "User confirmation: {prompt}",
                 "comment": "Provide a verification comment (minimum {min_length} characters)"}


def make_challenge(kind: str, params: dict[str, Any], description: str | None = None) -> Challenge:
    return Challenge(kind, params, description or _DESCRIPTIONS[kind].format_map(params))


def _missing(message: str, field: str, line: int | None, expected: str | None = None
             ) -> MarkdownError:
    return MarkdownError(MISSING_CHALLENGE_FIELD, message, field=field, expected=expected,
                         line=line)


def _on_line(line: int | None) -> str:
    return f" on line {line}" if line else ""


def _in_line(line: int | None) -> str:
    return f" (line {line})" if line else ""


def _need(obj: dict[str, Any], key: str, kind: str, expected: type | tuple[type, ...],
          line: int | None) -> Any:
    value = obj.get(key)
    ok = isinstance(value, expected) and not isinstance(value, bool) and value != ""
    if not ok:
        raise _missing(f"{kind} challenge needs '{kind}.{key}'{_on_line(line)}",
                       f"challenge.{kind}.{key}", line)
    return value


def challenge_from_json(data: Any, line: int | None = None) -> Challenge:
    """Validate a ``{"type": ..., "<type>": {...}}`` object from a step's json block."""
    if not isinstance(data, dict):
        raise _missing("challenge must be a JSON object", "challenge", line)
    kind = data.get("type")
    if kind not in CHALLENGE_TYPES:
        raise MarkdownError(
            UNKNOWN_CHALLENGE_TYPE,
            f"Unknown challenge type {kind!r}{_on_line(line)}; expected one of "
            f"{', '.join(CHALLENGE_TYPES)}",
            field="challenge.type",
            expected=" | ".join(CHALLENGE_TYPES),
            line=line,
        )
    body = data.get(kind)
    if not isinstance(body, dict):
        raise _missing(f"{kind} challenge needs a '{kind}' object{_on_line(line)}",
                       f"challenge.{kind}", line)
    params: dict[str, Any]
    if kind == "shell":
        timeout = body.get("timeout_seconds", DEFAULT_SHELL_TIMEOUT)
        if (not isinstance(timeout, int | float) or isinstance(timeout, bool)
                or not 0 < timeout <= limits.SHELL_TIMEOUT_MAX_SECONDS):
            raise _missing("shell.timeout_seconds must be a positive number of at most "
                           f"{limits.SHELL_TIMEOUT_MAX_SECONDS} seconds{_in_line(line)}",
                           "challenge.shell.timeout_seconds", line)
        params = {"cmd": _need(body, "cmd", kind, str, line), "timeout_seconds": timeout}
    elif kind == "mcp":
        params = {"tool_name": _need(body, "tool_name", kind, str, line),
                  "expected_result": body.get("expected_result")}
    elif kind == "user_input":
        params = {"prompt": _need(body, "prompt", kind, str, line)}
    else:
        params = {"min_length": _min_length(_need(body, "min_length", kind, int, line), line)}
    description = data.get("description")
    return make_challenge(kind, params, description if isinstance(description, str) else None)


def _min_length(value: int, line: int | None) -> int:
    """A comment's minimum length: from 1 to ``limits.COMMENT_MIN_LENGTH_MAX``."""
    cap = limits.COMMENT_MIN_LENGTH_MAX
    if not 1 <= value <= cap:
        raise _missing(f"comment min_length must be from 1 to {cap}{_in_line(line)}",
                       "challenge.comment.min_length", line, f"an integer from 1 to {cap}")
    return value


_TIMEOUT = re.compile(r"^timeout\s+(?P<n>\d+(?:\.\d+)?)(?P<unit>ms|s|m|h)?\s+(?P<cmd>.+)$",
                      re.IGNORECASE)
_UNITS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, None: 1}
_TIMEOUT_FORM = "timeout <number>[ms|s|m|h] <command>"
KEYWORDS = ("mcp", "user_input", "comment", "shell", "timeout")
"""The words that open a ``PROOF OF WORK:`` form; any other first word is a command."""


def _keyword(head: str, line: int | None) -> str:
    """The first word of a challenge, lower case after NFKC (full-width ``ｍｃｐ`` is
    ``mcp``); a word that only looks like a keyword (``mсp`` with a Cyrillic ``с``) is
    refused rather than run as a shell command."""
    word = lookalike.nfkc(head).lower()
    if word in KEYWORDS or word.isascii():
        return word
    seen = lookalike.skeleton(word).lower()
    if seen in KEYWORDS:
        raise MarkdownError(
            UNKNOWN_CHALLENGE_TYPE,
            f"PROOF OF WORK on line {line}: {head!r} looks like '{seen}' but is written with "
            f"look-alike characters ({lookalike.describe(head)}); write '{seen}' in plain "
            "letters.", field="challenge.type", expected=" | ".join(KEYWORDS[:4]), line=line)
    return word


def challenge_from_pow(spec: str, line: int | None = None) -> Challenge:
    """Parse the forms of contract §2: ``timeout 30s cmd``, ``cmd``, ``mcp tool``,
    ``user_input "prompt"``, ``comment min_length=N``."""
    if not spec:
        raise _missing(f"PROOF OF WORK on line {line} is empty", "challenge", line)
    head, _, rest = spec.partition(" ")
    word = _keyword(head, line)
    rest = rest.strip()
    if word == "mcp":
        if not rest:
            raise _missing(f"PROOF OF WORK: mcp needs a tool name on line {line}",
                           "challenge.mcp.tool_name", line)
        return make_challenge("mcp", {"tool_name": rest.split()[0], "expected_result": None})
    if word == "user_input":
        prompt = _unquote(rest)
        if not prompt:
            raise _missing(f"PROOF OF WORK: user_input needs a prompt on line {line}",
                           "challenge.user_input.prompt", line)
        return make_challenge("user_input", {"prompt": prompt})
    if word == "comment":
        m = re.fullmatch(r"(?:min_length\s*=\s*(\d{1,9}))?", rest)
        if not m:
            raise _missing(f"PROOF OF WORK: comment expects min_length=N (N from 1 to "
                           f"{limits.COMMENT_MIN_LENGTH_MAX}) on line {line}",
                           "challenge.comment.min_length", line,
                           f"min_length=N, N from 1 to {limits.COMMENT_MIN_LENGTH_MAX}")
        n = int(m.group(1)) if m.group(1) else texts.DEFAULT_COMMENT_MIN_LENGTH
        return make_challenge("comment", {"min_length": _min_length(n, line)})
    if word == "shell":
        spec = rest
    elif word == "timeout":
        spec = f"timeout {rest}"
    m = _TIMEOUT.match(spec)
    if m:
        seconds = float(m.group("n")) * _UNITS[m.group("unit") and m.group("unit").lower()]
        if not 0 < seconds <= limits.SHELL_TIMEOUT_MAX_SECONDS:
            raise _missing(f"PROOF OF WORK on line {line}: the timeout must be more than 0 and "
                           f"at most {limits.SHELL_TIMEOUT_MAX_SECONDS} seconds",
                           "challenge.shell.timeout_seconds", line, _TIMEOUT_FORM)
        timeout: int | float = int(seconds) if seconds == int(seconds) else seconds
        cmd = m.group("cmd").strip()
    elif word == "timeout":
        raise _missing(f"PROOF OF WORK on line {line}: expected {_TIMEOUT_FORM}, e.g. "
                       "'timeout 30s make test'", "challenge.shell.timeout_seconds", line,
                       _TIMEOUT_FORM)
    else:
        timeout, cmd = DEFAULT_SHELL_TIMEOUT, spec
    cmd = cmd.strip()
    if not cmd:
        raise _missing(f"PROOF OF WORK on line {line} has no command", "challenge.shell.cmd",
                       line)
    return make_challenge("shell", {"cmd": cmd, "timeout_seconds": timeout})


def _unquote(text: str) -> str:
    """A prompt as a reader sees it: without one pair of quotes around the whole of it."""
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        return text[1:-1].strip()
    return text


def _no_constant(name: str) -> Any:
    raise json.JSONDecodeError(f"{name} is not a JSON number", name, 0)


def parse_json_block(body: str, line: int, depth_limit: int) -> Any:
    """The JSON of a step's challenge block (``line``: the line of its opening fence),
    nested at most ``depth_limit`` levels."""
    if limits.json_depth(body, depth_limit) > depth_limit:
        raise MarkdownError(
            INVALID_CHALLENGE_JSON,
            f"Invalid challenge JSON on line {line + 1}: nested more than {depth_limit} "
            "levels deep",
            field="challenge",
            expected=f'{{"challenge": {{"type": ..., ...}}}} nested at most {depth_limit} '
                     "levels deep",
            line=line + 1,
        )
    try:
        return json.loads(body, parse_constant=_no_constant)
    except json.JSONDecodeError as exc:
        at = line + exc.lineno
        raise MarkdownError(
            INVALID_CHALLENGE_JSON,
            f"Invalid challenge JSON on line {at}: {exc.msg}",
            field="challenge",
            expected='{"challenge": {"type": ..., ...}}',
            line=at,
        ) from None


# --- checking an answer -------------------------------------------------------------------


@dataclass(frozen=True)
class Refusal:
    code: str
    message: str


#: What an answer's body of each type must hold: the field, its JSON type, the check.
_REQUIRED: dict[str, tuple[str, str, Callable[[Any], bool]]] = {
    "shell": ("exit_code", "integer", lambda v: isinstance(v, int) and not isinstance(v, bool)),
    "mcp": ("success", "boolean", lambda v: isinstance(v, bool)),
    "user_input": ("confirmation", "string", lambda v: isinstance(v, str | bool)),
    "comment": ("text", "string", lambda v: isinstance(v, str)),
}


def check_shape(challenge: Challenge, solution: Any, nonce: str, proof_hash: str) -> Refusal | None:
    """Structural checks, in the order an agent can act on them."""
    if not isinstance(solution, dict):
        return Refusal(texts.MISSING_FIELD,
                       "Missing required field: solution (an object with type, nonce, "
                       "proof_hash and the challenge's fields).")
    for key in ("nonce", "proof_hash"):
        if not isinstance(solution.get(key), str) or not solution.get(key):
            return Refusal(texts.MISSING_FIELD,
                           f"Missing required field: solution.{key} (string from the challenge).")
    if solution["nonce"] != nonce:
        return Refusal(texts.NONCE_MISMATCH, texts.MSG_NONCE_MISMATCH)
    if solution["proof_hash"] != proof_hash:
        return Refusal(texts.PROOF_HASH_MISMATCH, texts.MSG_PROOF_HASH_MISMATCH)
    kind = solution.get("type")
    if not isinstance(kind, str) or not kind:
        return Refusal(texts.MISSING_FIELD,
                       f"Missing required field: solution.type (expected '{challenge.type}').")
    if kind != challenge.type:
        return Refusal(texts.TYPE_MISMATCH,
                       f"Solution type '{kind}' does not match challenge type "
                       f"'{challenge.type}'.")
    body = solution.get(kind)
    if not isinstance(body, dict):
        return Refusal(texts.MISSING_FIELD,
                       f"Missing required field: solution.{kind} (object).")
    field, expected, valid = _REQUIRED[kind]
    if field not in body or not valid(body[field]):
        return Refusal(texts.MISSING_FIELD,
                       f"Missing required field: solution.{kind}.{field} ({expected}).")
    return None


def check_outcome(challenge: Challenge, solution: dict[str, Any]) -> Refusal | None:
    """Semantic checks once the shape is right (relevance is checked separately)."""
    body = solution[challenge.type]
    if challenge.type == "shell":
        if body["exit_code"] != 0:
            return Refusal(texts.COMMAND_FAILED,
                           f"Command failed with exit code {body['exit_code']}.")
    elif challenge.type == "mcp":
        tool = body.get("tool_name")
        expected_tool = challenge.params["tool_name"]
        if tool is not None and tool != expected_tool:
            return Refusal(texts.COMMAND_FAILED,
                           f"MCP tool mismatch: expected '{expected_tool}', got '{tool}'.")
        if body["success"] is not True:
            return Refusal(texts.COMMAND_FAILED, f"MCP tool call '{expected_tool}' failed.")
        expected = challenge.params.get("expected_result")
        if expected is not None and body.get("result") != expected:
            return Refusal(texts.COMMAND_FAILED,
                           f"MCP tool '{expected_tool}' did not return the expected result.")
    elif challenge.type == "user_input":
        if not is_affirmative(body["confirmation"]):
            return Refusal(texts.USER_DECLINED, "The user declined the confirmation.")
    else:
        length = len(body["text"].strip())
        minimum = challenge.params["min_length"]
        if length < minimum:
            return Refusal(texts.COMMENT_TOO_SHORT,
                           f"Comment too short: {length} characters, minimum {minimum}.")
    return None


def is_affirmative(confirmation: str | bool) -> bool:
    if isinstance(confirmation, bool):
        return confirmation
    words = re.findall(r"[a-z]+", confirmation.lower())
    return bool(words) and words[0] in AFFIRMATIVE


def check_relevance(comment: str, step_prose: str) -> Refusal | None:
    """A comment must report its step (``domain.relevance``)."""
    if not relevance.refuses(comment, step_prose):
        return None
    return Refusal(texts.COMMENT_IRRELEVANT,
                   "Comment does not say what was done for this step. Describe what you did "
                   "and what came of it (names, numbers, findings).")


#: What issuing adds to a step's declared challenge when it is shown to the agent.
ISSUED = ("nonce", "proof_hash")


def from_issued(issued: dict[str, Any]) -> Challenge:
    """The Challenge behind a challenge dict as it was shown to the agent."""
    kind = issued["type"]
    return Challenge(kind, dict(issued[kind]), issued["description"])
