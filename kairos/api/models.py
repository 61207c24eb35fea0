"""Request bodies of the REST API. They give OpenAPI its shapes and reject wrong JSON
types with a 422 naming the field; value rules (URI form, limits, known fields, challenge
answers) stay in the service, which reports them in the same error shape."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..domain.limits import MODEL_ID_CHARS


class _Closed(BaseModel):
    """Unknown fields are a 422 naming them: a typo never passes silently."""

    model_config = ConfigDict(extra="forbid")


# --- protocols and runs ------------------------------------------------------------------

class MintRequest(_Closed):
    markdown_doc: str = Field(description="Markdown: one H1 title, one H2 per step, each step "
                                          "with a `PROOF OF WORK:` line.")
    llm_model_id: str | None = Field(None, max_length=MODEL_ID_CHARS)
    force_update: bool = Field(False, description="Replace a protocol with the same title.")


class ProtocolSearchRequest(_Closed):
    query: str = Field(description="What the user wants done, in a few words.")
    limit: int | None = Field(None, description="Maximum number of matches (1–25).")


class UpdateRequest(_Closed):
    uris: str | list[str] = Field(description="Step URIs, kairos://mem/<uuid>.")
    markdown_doc: str | list[str] | None = Field(
        None, description="New step body (optionally starting with `## Label`); one string "
                          "for all uris or one per uri.")
    updates: dict[str, Any] | None = Field(None, description="{label, content}")


class DeleteRequest(_Closed):
    uris: str | list[str]
    protocol: bool = Field(False, description="Delete the whole protocol of each uri.")


class BeginRequest(_Closed):
    uri: str = Field(description="Step 1 of a protocol (other steps redirect to step 1).")


class NextRequest(_Closed):
    uri: str = Field(description="The step to show next, as named by the last next_action.")
    solution: dict[str, Any] = Field(
        description="Answer to the challenge last shown: type, nonce and proof_hash copied "
                    "from it, plus the body for its type (shell, mcp, user_input, comment).")


class AttestRequest(_Closed):
    uri: str
    outcome: Literal["success", "failure"]
    message: str
    quality_bonus: float = 0.0
    llm_model_id: str | None = Field(None, max_length=MODEL_ID_CHARS)
    solution: dict[str, Any] | None = Field(
        None, description="The last step's answer, when its challenge is still open.")


# --- entries and the unified search (seed 002) -------------------------------------------

class UnifiedSearchRequest(_Closed):
    query: str
    types: list[str] | None = Field(None, description='Default ["experience", "manual"]; '
                                                      '"protocol" is also allowed.')
    category: str | None = None
    limit: int | None = Field(None, description="1–25, default 10.")
    offset: int | None = Field(None, description="Default 0.")
    min_score: float | None = Field(None, description="Default 0.50 with vectors, 0.35 text.")
    filters: dict[str, Any] | None = Field(None, description="Exact match: author, section.")
    snippet_len: int | None = Field(None, description="80–640, default 320.")
    fields: list[str] | None = Field(None, description="Extra full fields, e.g. playbook.")
    hide_viewed: bool | None = None
    downrank_viewed: bool | None = None
    session_id: str | None = Field(None, description="The X-CHL-Session header wins over it.")


class ReadEntriesRequest(_Closed):
    ids: list[str]
    fields: list[str] | None = Field(None, description='Omitted: full bodies; ["preview"]: '
                                                       "previews only; else an allow-list.")
    snippet_len: int | None = None
    session_id: str | None = Field(None, description="The X-CHL-Session header wins over it.")


class EntryFields(_Closed):
    category: str | None = None
    title: str | None = None
    playbook: str | None = None
    context: str | None = None
    section: str | None = None
    content: str | None = None
    summary: str | None = None
    author: str | None = None


class WriteEntryRequest(EntryFields):
    entity_type: Literal["experience", "manual"] = "experience"


class UpdateEntryRequest(_Closed):
    entity_id: str
    updates: dict[str, Any]


class CiteRequest(_Closed):
    session_id: str
    ids: list[str]


__all__ = ["AttestRequest", "BeginRequest", "CiteRequest", "DeleteRequest", "EntryFields",
           "MintRequest", "NextRequest", "ProtocolSearchRequest", "ReadEntriesRequest",
           "UnifiedSearchRequest", "UpdateEntryRequest", "UpdateRequest",
           "WriteEntryRequest"]
