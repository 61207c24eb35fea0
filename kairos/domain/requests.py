"""Every request shape of KAIROS, defined once.

The REST API takes these models as its bodies (so ``/openapi.json`` documents them), the MCP
tools publish their JSON Schemas as input schemas, and the service layer validates its
input through ``parse``. A wrong JSON type, an unknown field, a missing field or a value
out of range becomes one ``ValidationError`` naming the field, on every surface.

Models are strict (``0`` is not ``false``, ``"5"`` is not ``5``) and closed (an unknown
field is named, so a typo never passes silently). Rules no schema can state — a document's
grammar, a URI naming a stored step, a category of the caller's space, a challenge's answer
(judged by the run engine with its own error codes and retry counts) — stay in the service.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from . import limits
from .caller import SESSION_PATTERN
from .engine import RunStatus
from .limits import QUERY_CHARS, SEARCH_LIMIT, SNIPPET_MAX, SNIPPET_MIN
from .responses import Outcome

UUID_PATTERN = "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
URI_PATTERN = f"^kairos://mem/{UUID_PATTERN}$"
STARTER_CATEGORIES = (
    ("general", "General", "Anything that fits no other category"),
    ("coding", "Coding", "Writing and changing code"),
    ("debugging", "Debugging", "Finding and fixing faults"),
    ("testing", "Testing", "Tests, fixtures and test strategy"),
    ("deployment", "Deployment", "Building, releasing and shipping"),
    ("operations", "Operations", "Running services: monitoring, incidents, maintenance"),
    ("security", "Security", "Secrets, access, vulnerabilities"),
    ("data", "Data", "Databases, migrations and data handling"),
    ("tooling", "Tooling", "Editors, CLIs, build tools and their setup"),
    ("documentation", "Documentation", "Writing and keeping docs"),
)
"""The categories every space starts with (code, name, description)."""
CATEGORY_CODES: list[Any] = sorted(code for code, _, _ in STARTER_CATEGORIES)
ENTRY_TYPES = ("experience", "manual")
SECTIONS = ("useful", "harmful", "contextual")
FIELDS: dict[str, tuple[str, ...]] = {
    "experience": ("entity_id", "entity_type", "category", "title", "playbook", "context",
                   "section", "author", "created_at", "updated_at", "preview"),
    "manual": ("entity_id", "entity_type", "category", "title", "content", "summary",
               "author", "created_at", "updated_at", "preview"),
    "protocol": ("entity_id", "entity_type", "title", "content", "tags", "updated_at",
                 "preview"),
}
"""The fields of each kind of record, as search results and reads name them."""
ALL_FIELDS = sorted({f for names in FIELDS.values() for f in names})
ENTRY_FIELDS = sorted({*FIELDS["experience"], *FIELDS["manual"]})


class Request(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


def _whole(value: Any) -> Any:
    """JSON Schema's integers include 2.0: a whole float counts as its integer."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


WHOLE = BeforeValidator(_whole)
"""After the integer's Field: then its range stays in the JSON Schema (minimum, maximum)."""


# --- fields ------------------------------------------------------------------------------

Uri = Annotated[str, Field(description="A step URI, kairos://mem/<uuid>.",
                           json_schema_extra={"pattern": URI_PATTERN})]
"""The form is checked by the service (code INVALID_URI); the pattern documents it."""

Uris = Annotated[str | Annotated[list[str], Field(min_length=1)],
                 Field(description="One step URI or a list of them (kairos://mem/<uuid>). "
                                   "A batch: each URI gets its own result, a malformed or "
                                   "unknown one a result with status error.")]
VersionNumber = Annotated[int, Field(ge=1, description="A protocol version, from 1."), WHOLE]
Query = Annotated[str, Field(min_length=1, max_length=QUERY_CHARS, pattern=r"\S",
                             description="What you are looking for, in a few words.")]
Limit = Annotated[int, Field(ge=1, le=SEARCH_LIMIT,
                             description=f"Maximum number of results, 1 to {SEARCH_LIMIT} "
                                         f"(default {limits.SEARCH_DEFAULT})."), WHOLE]
ModelId = Annotated[str, Field(max_length=limits.MODEL_ID_CHARS,
                               description="The model that wrote or ran the protocol.")]
SessionId = Annotated[str, Field(max_length=limits.SESSION_ID_CHARS,
                                 description="A search session: letters, digits, . _ : - "
                                             "(the X-CHL-Session header wins over it; an id "
                                             "of another form is ignored).")]
SnippetLen = Annotated[int, Field(ge=SNIPPET_MIN, le=SNIPPET_MAX,
                                  description=f"Snippet length, {SNIPPET_MIN} to {SNIPPET_MAX} "
                                              f"(default {limits.SNIPPET_DEFAULT})."), WHOLE]
FieldNames = Annotated[list[str], Field(
    description="Field names to return in full.",
    json_schema_extra={"items": {"type": "string", "enum": ALL_FIELDS}})]
EntryFieldNames = Annotated[list[str], Field(
    json_schema_extra={"items": {"type": "string", "enum": ENTRY_FIELDS}})]
Solution = Annotated[Any, Field(
    description=(
        "The answer to the challenge you were shown. Always copy `type`, `nonce` and "
        "`proof_hash` from that challenge, then add the body for its type:\n"
        '- shell: {"shell": {"exit_code": 0, "stdout": "...", "stderr": "", '
        '"duration_seconds": 0.2}}\n'
        '- mcp: {"mcp": {"tool_name": "...", "arguments": {...}, "result": {...}, '
        '"success": true}}\n'
        '- user_input: {"user_input": {"confirmation": "yes", "timestamp": "<ISO-8601>"}}\n'
        '- comment: {"comment": {"text": "<at least min_length characters>"}}\n'
        "Report what really happened: a failed command is reported with its real exit code."),
    json_schema_extra={
        "type": "object",
        "properties": {
            "type": {"type": "string", "enum": ["shell", "mcp", "user_input", "comment"]},
            "nonce": {"type": "string", "description": "challenge.nonce, unchanged."},
            "proof_hash": {"type": "string",
                           "description": "challenge.proof_hash, unchanged."},
            "shell": {"type": "object"}, "mcp": {"type": "object"},
            "user_input": {"type": "object"}, "comment": {"type": "object"}},
        "required": ["type"]})]
"""Any JSON value on purpose: a wrong answer, even one that is not an object, is judged by
the run engine (contract §4: an error code, a fresh challenge and a retry count), not refused
as a malformed request."""


# --- protocols and runs ------------------------------------------------------------------

class Search(Request):
    query: Query
    limit: Limit | None = None


class Mint(Request):
    markdown_doc: str = Field(description="Markdown: one `# Title`, one `## Step` per step, "
                                          "each step with a `PROOF OF WORK:` line.")
    llm_model_id: ModelId | None = None
    force_update: bool = Field(False, description="Replace a protocol with the same title.")


class StepChange(Request):
    label: str | None = Field(None, description="The step's new label.")
    content: str | None = Field(None, description="The step's new body.")


class Update(Request):
    uris: Uris
    markdown_doc: str | list[str] | None = Field(
        None, description="The new step body (optionally starting with `## New label`): one "
                          "string for all uris or a list with one per uri.")
    updates: StepChange | None = None

    model_config = ConfigDict(json_schema_extra={
        "anyOf": [{"required": ["markdown_doc"]}, {"required": ["updates"]}]})
    """One of the two is needed; the service names markdown_doc when both are missing."""


class Delete(Request):
    uris: Uris
    protocol: bool = Field(False, description="Delete the whole protocol each uri belongs to.")


class Dump(Request):
    uri: Uri
    protocol: bool = Field(False, description="Return the whole protocol's markdown.")
    version: VersionNumber | None = None  # default: the current version


class Begin(Request):
    uri: Uri = Field(description="Step 1 of a protocol (other steps redirect to step 1).")


class Next(Request):
    uri: Uri = Field(description="The step to show next, as named by the last next_action.")
    solution: Solution


class Attest(Request):
    uri: Uri
    outcome: Outcome
    message: str = Field(description="What happened, for the record (at most "
                                     f"{limits.Limits.message_chars:,} characters by default).")
    quality_bonus: float = Field(0.0, ge=-1, le=1, allow_inf_nan=False,
                                 description="Optional bonus for an excellent run, -1 to 1.")
    llm_model_id: ModelId | None = None
    solution: Solution | None = Field(None, description="The last step's answer, when its "
                                                        "challenge is still open.")


# --- entries and the unified search (contract §5) -----------------------------------------

class EntryFilters(Request):
    author: str | None = None
    section: Literal["useful", "harmful", "contextual"] | None = None


class SearchEntries(Request):
    query: Query
    types: Annotated[list[Literal["experience", "manual", "protocol"]],
                     Field(min_length=1)] | None = Field(
        None, description='Default ["experience", "manual"].')
    category: str | None = Field(None, description="A code from list_categories.")
    limit: Limit | None = None
    offset: Annotated[int, Field(ge=0, le=limits.OFFSET_MAX), WHOLE] | None = Field(
        None, description="Skip this many results (default 0).")
    min_score: float | None = Field(None, ge=0, le=1, allow_inf_nan=False,
                                    description="0 to 1; default 0.50 with vectors, 0.35 "
                                                "with text alone.")
    filters: EntryFilters | None = Field(None, description="Exact match on author, section.")
    snippet_len: SnippetLen | None = None
    fields: FieldNames | None = None
    hide_viewed: bool | None = Field(None, description="Drop entries this session saw.")
    downrank_viewed: bool | None = Field(None, description="Down-rank entries this session "
                                                           "saw (default true).")
    session_id: SessionId | None = None
    explain: bool | None = Field(None, description="Also explain the best candidates: each "
                                 "one's evidence and why it is or is not a result.")


class ReadEntries(Request):
    ids: list[str] = Field(min_length=1,
                           description="Entry ids (entity_id from search_entries).")
    fields: EntryFieldNames | None = Field(None, description='Omitted: full bodies; ["preview"]: '
                                                        "previews only; else an allow-list.")
    snippet_len: SnippetLen | None = None
    session_id: SessionId | None = None


class _EntryBody(Request):
    playbook: str | None = Field(None, description="experience: what to do.")
    context: str | None = Field(None, description="experience: when it applies.")
    section: Literal["useful", "harmful", "contextual"] | None = None
    content: str | None = Field(None, description="manual: the document.")
    summary: str | None = Field(None, description="manual: a short summary.")
    author: str | None = None


class EntryFields(_EntryBody):
    """The fields of an experience (title, playbook, context, section) or a manual (title,
    content, summary), with category and author."""

    model_config = ConfigDict(json_schema_extra={"minProperties": 1})
    """At least one field; the service says so when there is none."""

    category: str | None = Field(None, description="A code from list_categories.",
                                 json_schema_extra={"enum": [*CATEGORY_CODES, None]})
    title: str | None = None


class WriteEntry(_EntryBody):
    entity_type: Literal["experience", "manual"] = "experience"
    category: str = Field(description="A code from list_categories.",
                          json_schema_extra={"enum": CATEGORY_CODES})
    title: str


class UpdateEntry(Request):
    entity_id: str
    updates: EntryFields


class Cite(Request):
    session_id: str = Field(pattern=SESSION_PATTERN, description="The search session.")
    ids: list[str] = Field(description="Entry ids the answer cited.")


class ListCategories(Request):
    pass


class Validate(Request):
    markdown_doc: str = Field(description="The markdown a mint would receive.")


# --- reads: pages of records, one record -------------------------------------------------

class ReadRequest(Request):
    """A read named in a query string: its numbers and flags arrive as text."""

    model_config = ConfigDict(extra="forbid", strict=False)


PageLimit = Annotated[int, Field(ge=1, le=limits.PAGE_MAX,
                                 description=f"Page size, 1 to {limits.PAGE_MAX}.")]
PageOffset = Annotated[int, Field(ge=0, le=limits.OFFSET_MAX, description="Items to skip.")]


class ListProtocols(ReadRequest):
    """A page of the space's protocols with their statistics, most recently changed
    first (``sort``: or by title, or by runs)."""

    limit: PageLimit = 20
    offset: PageOffset = 0
    title: str | None = Field(None, max_length=limits.Limits.title_chars,
                              description="Only protocols whose title holds this text "
                                          "(any case).")
    tag: str | None = Field(None, max_length=limits.Limits.title_chars,
                            description="Only protocols with this tag.")
    builtin: bool = Field(False, description="Include the built-in protocols.")
    sort: Literal["updated", "title", "runs"] = "updated"


class ListRuns(ReadRequest):
    """A page of the space's runs, most recently changed first."""

    limit: PageLimit = 20
    offset: PageOffset = 0
    status: RunStatus | None = Field(None, description="Only runs in this state.")
    protocol: Uri | None = Field(None, description="Only runs of this protocol (any of its "
                                                   "step URIs).")


class ListEntries(ReadRequest):
    """A page of experiences or manuals, most recently changed first."""

    type: Literal["experience", "manual"] = "experience"
    category: str | None = Field(None, max_length=64, json_schema_extra={
        "enum": [*CATEGORY_CODES, None]}, description="Only entries of this category.")
    limit: PageLimit = 20
    offset: PageOffset = 0


RunIdText = Annotated[str, Field(min_length=1, max_length=limits.SESSION_ID_CHARS,
                                 description="A run's id (run_id).")]


class RunRef(Request):
    """One run, by its id."""

    run_id: RunIdText


class ProtocolRef(Request):
    """One protocol, by any of its step URIs."""

    uri: Uri


class AbortRun(Request):
    run_id: RunIdText
    message: str | None = Field(None, description="Why, for the record.")


class AbandonRun(Request):
    run_id: RunIdText
    reason: str = Field(description="Why nobody is left to answer it.")


class ForgetTriggers(Request):
    uri: Uri
    trigger_ids: list[str] | None = Field(None, min_length=1, description="Learned triggers "
                                          "to remove; none given: every one.")


class NonceRef(Request):
    """The run that issued a challenge's nonce."""

    nonce: str = Field(min_length=1, max_length=64)


class SessionRef(Request):
    session_id: SessionId | None = Field(None, description="None names no session (404).")


class ShortId(Request):
    """A step URI or run id as a person types it: whole, or its first characters."""

    text: str
    kind: Literal["step", "run"]


class MintMany(Request):
    markdown_docs: list[str]
    force_update: bool = False


__all__ = ["WHOLE", "Attest", "Begin", "Cite", "Delete", "Dump", "EntryFields", "EntryFilters",
           "ListCategories", "Mint", "Next", "ReadEntries", "Request", "Search",
           "SearchEntries", "StepChange", "Update", "UpdateEntry", "Validate", "WriteEntry"]
