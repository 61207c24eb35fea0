"""The search document of every kind of record, built in one place: from a protocol's
draft or stored rows, or from a knowledge entry's row, through ``domain.doctext.document``.
The search engine rebuilds a stored record's document from here (after a model or recipe
change), and the services build the document of what they are about to write."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..domain import doctext, markdown
from ..domain.versions import draft_of
from ..store.repo import Repo
from ..store.text_index import token_count

ENTRY_KINDS = ("experience", "manual")


@dataclass(frozen=True)
class DocSpec:
    """A searchable record: the three full-text columns (title, step labels, body) and
    the texts whose vectors stand for it, in ``seq`` order (``domain.doctext.document``)."""

    kind: str
    entity_id: str
    space: str
    title: str
    body: str
    vector_texts: tuple[str, ...]
    updated_at: str
    labels: str = ""
    category: str | None = None
    section: str | None = None
    author: str | None = None
    #: What each of ``vector_texts`` is: "doc" (the record's own text) or "trigger" (an
    #: author trigger); empty: all "doc".
    roles: tuple[str, ...] = ()

    @property
    def ntokens(self) -> int:
        return token_count(self.title, self.labels, self.body)


def protocol_doc(protocol_id: str, space: str, draft: markdown.ProtocolDraft,
                 updated_at: str) -> DocSpec:
    """A protocol; a challenge's command, tool or prompt joins its step's body when the
    body does not show it. Each author trigger is a vector of its own, searched as a query
    is (``doctext.embedding_query``), and joins the step labels in the full-text index."""
    steps = []
    for step in draft.steps:
        params = step.challenge.params
        detail = str(params.get("cmd") or params.get("tool_name") or params.get("prompt") or "")
        body = step.content if detail in step.content else f"{step.content}\n`{detail}`"
        steps.append((step.label, body))
    doc = doctext.document(draft.title, draft.intro, steps)
    triggers = tuple(doctext.embedding_query(t) for t in draft.triggers)
    return DocSpec(kind="protocol", entity_id=protocol_id, space=space, title=draft.title,
                   labels=" ".join(filter(None, (doc.labels, *triggers))), body=doc.body,
                   vector_texts=doc.vectors + triggers, updated_at=updated_at,
                   roles=("doc",) * len(doc.vectors) + ("trigger",) * len(triggers))


def entry_doc(kind: str, row: Mapping[str, Any]) -> DocSpec:
    """An experience (playbook and context) or a manual (summary and content)."""
    if kind == "experience":
        body = row["playbook"] + (f"\n\n{row['context']}" if row.get("context") else "")
    else:
        body = (f"{row['summary']}\n\n" if row.get("summary") else "") + row["content"]
    doc = doctext.document(row["title"], body)
    return DocSpec(kind=kind, entity_id=row["id"], space=row["space"], title=row["title"],
                   body=body, vector_texts=doc.vectors, updated_at=row["updated_at"],
                   category=row["category"], section=row.get("section"),
                   author=row.get("author"))


def stored_doc(repo: Repo, kind: str, entity_id: str) -> DocSpec | None:
    """The document of a stored record, or None when it is gone (or built in: built-in
    protocols are not searched as records)."""
    if kind == "protocol":
        proto = repo.protocol(entity_id)
        if proto is None or proto["builtin"]:
            return None
        return protocol_doc(entity_id, proto["space"], draft_of(proto, repo.steps_of(entity_id)),
                            proto["updated_at"])
    if kind not in ENTRY_KINDS:
        return None
    row = repo.entry(kind, entity_id)
    return None if row is None else entry_doc(kind, dict(row))
