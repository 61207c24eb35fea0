"""The MCP tool table: one row per tool, with its request model (``domain.requests``, which
also gives the tool its input schema), the text that teaches an agent how to use it, and a
handler that maps the validated request onto one service call.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from ..domain.caller import Caller
from ..domain.requests import (
    Attest,
    Begin,
    Delete,
    Dump,
    ListCategories,
    Mint,
    Next,
    ReadEntries,
    Request,
    Search,
    SearchEntries,
    Update,
    UpdateEntry,
    WriteEntry,
)
from ..domain.validation import json_schema

if TYPE_CHECKING:  # the service pulls in the database layer; import it only when called
    from ..service import Kairos

JSON = dict[str, Any]


@dataclass(frozen=True)
class Call:
    """Who is calling, and the search session (contract §5 R10) their calls belong to."""

    caller: Caller
    session_id: str | None


R = TypeVar("R", bound=Request)
Handler = Callable[["Kairos", R, Call], Mapping[str, Any]]
"""Maps a tool's validated request onto one service call."""


@dataclass(frozen=True)
class ToolSpec(Generic[R]):
    name: str
    title: str
    description: str
    model: type[R]
    handler: Handler[R]
    read_only: bool = False

    @cached_property
    def input_schema(self) -> JSON:
        """Generated from the request model: the schema agents see is the one enforced."""
        return json_schema(self.model)


# --- the table ---------------------------------------------------------------------------

TOOLS: tuple[ToolSpec[Any], ...] = (
    ToolSpec(
        "kairos_search", "Find a protocol",
        "Find the protocol that fits the user's request. Start here whenever a task might "
        "have a known procedure. Pass a short query built from the user's intent. The "
        "response lists `choices`: matches (role `match`, with a score in [0, 1]), then a "
        "`refine` choice (help writing a better query) and a `create` choice (write a new "
        "protocol). Pick one and do exactly what its `next_action` says — usually "
        "kairos_begin with its uri. `degraded: true` in the response means the matches "
        "were ranked by text alone (`provider_hint` says why): try other words if none fits.",
        Search,
        lambda service, request, call: service.search(request, call.caller, notice=True),
        read_only=True),
    ToolSpec(
        "kairos_begin", "Start a protocol run",
        "Start running a protocol at its first step (a step-1 uri from kairos_search; any "
        "other step uri redirects to step 1). The response has `current_step` (what to do), "
        "a `challenge` (how to prove you did it, with a single-use `nonce` and the "
        "`proof_hash` to echo) and `next_action`. Do the step, then follow next_action: "
        "call kairos_next with the uri it names and your solution.",
        Begin,
        lambda service, request, call: service.begin(request, call.caller)),
    ToolSpec(
        "kairos_next", "Answer a challenge and get the next step",
        "Submit the solution to the challenge you were shown and receive the next step. "
        "`uri` is the step named in the previous response's next_action (the step to show "
        "next); `solution` answers the challenge of the step you just did. If the answer is "
        "refused the response has `error_code` and a fresh challenge: retry with the nonce "
        "and proof_hash from THAT response. When the response says the protocol is "
        "completed, call kairos_attest as its next_action says.",
        Next,
        lambda service, request, call: service.next(request, call.caller)),
    ToolSpec(
        "kairos_attest", "Finish a run",
        "Finish a run and record whether the protocol worked. Call it on the last step's "
        "uri with outcome `success` or `failure` and a short message saying what happened; "
        "when the last step shows a challenge, include its `solution` here (same shape as in "
        "kairos_next). Outcomes teach search which protocols work. To abort a run, attest "
        "the refused step with outcome failure.",
        Attest,
        lambda service, request, call: service.attest(request, call.caller)),
    ToolSpec(
        "kairos_mint", "Store a protocol",
        "Store a markdown document as a protocol: one `# Title`, one `## Step` per step, and "
        "in each step a line `PROOF OF WORK: <challenge>` — `timeout 30s <shell command>`, "
        "`mcp <tool_name>`, `user_input \"<prompt>\"` or `comment min_length=<n>`; a "
        "command that holds markdown characters (`*`, `_`, `\\`, `<`) goes in a code span, "
        "e.g. PROOF OF WORK: timeout 30s `pytest tests/__init__.py`. Returns "
        "the protocol's step URIs. A title that already exists is refused "
        "(DUPLICATE_CHAIN) unless force_update is true.",
        Mint,
        lambda service, request, call: service.mint(request, call.caller)),
    ToolSpec(
        "kairos_update", "Change protocol steps",
        "Fix one or more steps for future runs: pass their uris and either `markdown_doc` "
        "(the new step body, optionally starting with `## New label`; one string for all "
        "uris or a list with one per uri) or `updates` {label, content}. The step's "
        "challenge is re-read from the new text. Built-in protocols are read-only.",
        Update,
        lambda service, request, call: service.update(request, call.caller)),
    ToolSpec(
        "kairos_delete", "Delete protocol steps",
        "Delete steps by uri (the remaining steps close up), or whole protocols with "
        "protocol=true. Deleting the only step of a protocol deletes the protocol. Each uri "
        "gets its own result, so one bad uri does not stop the others.",
        Delete,
        lambda service, request, call: service.delete(request, call.caller)),
    ToolSpec(
        "kairos_dump", "Read a protocol as markdown",
        "Show one step (its content, challenge and markdown) or, with protocol=true, the "
        "whole protocol as the markdown kairos_mint accepts — edit it and mint it back with "
        "force_update to change several steps at once.",
        Dump,
        lambda service, request, call: service.dump(request, call.caller), read_only=True),
    ToolSpec(
        "search_entries", "Search experiences and manuals",
        "Search lessons learned (experiences) and reference documents (manuals) in one "
        "call. Results carry a heading, a snippet and a score in [0, 1]; low-confidence "
        "hits are dropped (min_score) and `warnings`/`provider_hint` say when the search "
        "was degraded. Entries this conversation already saw are down-ranked "
        "(downrank_viewed, default true) or dropped (hide_viewed). Ask for full bodies "
        "with `fields` (e.g. [\"playbook\"]) or fetch them with read_entries.",
        SearchEntries,
        lambda service, request, call: service.search_entries(
            request, call.caller, session_id=call.session_id), read_only=True),
    ToolSpec(
        "read_entries", "Read experiences or manuals",
        "Fetch entries by id (entity_id from search_entries). Without `fields` you get full "
        "bodies; fields=[\"preview\"] returns previews only; any other list is an "
        "allow-list of fields. An unknown field is an error naming it. Ids not found are "
        "listed in `missing`.",
        ReadEntries,
        lambda service, request, call: service.read_entries(
            request, call.caller, session_id=call.session_id), read_only=True),
    ToolSpec(
        "write_entry", "Record an experience or a manual",
        "Store a lesson learned (entity_type experience: title, playbook, optional context, "
        "section useful/harmful/contextual — contextual needs a context) or a reference "
        "document (entity_type manual: title, content, optional summary), filed under a "
        "category code from list_categories. A duplicate check runs on every write: similar "
        "entries come back in the response, and recommendation \"review_first\" means a "
        "near-duplicate exists — review it and prefer update_entry.",
        WriteEntry,
        lambda service, request, call: service.write_entry(request, call.caller)),
    ToolSpec(
        "update_entry", "Change an experience or a manual",
        "Change fields of an existing entry: `entity_id` and `updates` with the fields to "
        "change (experience: title, playbook, context, section, category, author; manual: "
        "title, content, summary, category, author). The duplicate check runs again.",
        UpdateEntry,
        lambda service, request, call: service.update_entry(request, call.caller)),
    ToolSpec(
        "list_categories", "List categories",
        "List the categories (code, name, description) that experiences and manuals are "
        "filed under. Call it before write_entry or a category-scoped read_entries.",
        ListCategories,
        lambda service, request, call: service.list_categories(request, call.caller),
        read_only=True),
)

REGISTRY: Mapping[str, ToolSpec[Any]] = {tool.name: tool for tool in TOOLS}

INSTRUCTIONS = """\
KAIROS keeps procedures (protocols) that you run step by step with proof, plus lessons
(experiences) and reference manuals.
To do a task: kairos_search(query) -> pick a choice and follow its next_action (usually
kairos_begin with its uri) -> do the step shown in current_step -> prove it by answering
the challenge with kairos_next(uri from next_action, solution that copies the challenge's
type, nonce and proof_hash) -> repeat until the response says the protocol is completed ->
kairos_attest(last uri, outcome, message, and the last solution when asked).
Always obey `must_obey: true` responses and follow `next_action` literally.
For lessons and manuals use search_entries, read_entries and write_entry."""

__all__ = ["INSTRUCTIONS", "REGISTRY", "TOOLS", "Call", "ToolSpec"]
