"""A run's signed bundle (``domain.bundle``, format in ``docs/bundle.md``): the run as the
store holds it, the protocol version it ran, its proofs and its latest attestation,
signed once with the server's key. Active runs export too: their head is the chain so
far."""

from __future__ import annotations

from ..domain import markdown
from ..domain.bundle import (
    AttestationFacts,
    Bundle,
    RunFacts,
    StepFacts,
    VersionFacts,
    build_bundle,
)
from ..domain.caller import Caller
from ..domain.canonical import KAIROS_JSON_1
from ..domain.errors import CONFLICT, ConflictError
from ..domain.uris import to_uri
from ..search.documents import draft_of
from ..store import reads
from ..store.db import Store
from ..store.repo import Repo, Row
from .reads import own_run, proof_records
from .signing import Signing

#: The number a protocol's text counts as while protocols keep one text each.
CURRENT_VERSION = 1


def version_of(repo: Repo, run: Row) -> tuple[VersionFacts, str]:
    """The protocol version ``run`` ran and the rule its chain was hashed with: here the
    protocol's current markdown as version 1, and ``kairos-json-1``, the rule every run's
    chain is hashed with today. The one place that chooses them."""
    proto = repo.protocol(run["protocol_id"])
    steps = repo.steps_of(run["protocol_id"]) if proto is not None else []
    if proto is None or not steps:
        raise ConflictError(CONFLICT, f"The protocol of run {run['id']} was deleted: "
                            "there is no text to bundle with its proofs.", field="run_id")
    text = markdown.render(draft_of(proto, steps))
    facts = [StepFacts(to_uri(s["id"]), dict(s["challenge"])) for s in steps]
    return VersionFacts(proto["id"], CURRENT_VERSION, text, facts), KAIROS_JSON_1


class BundleService:
    def __init__(self, store: Store, signing: Signing) -> None:
        self.store = store
        self.signing = signing

    def export(self, run_id: str, caller: Caller) -> Bundle:
        """The caller's run ``run_id`` as a signed bundle; another space's run answers as an
        unknown one (``own_run``)."""
        with self.store.read() as repo:
            run = own_run(repo, run_id, caller)
            version, rule = version_of(repo, run)
            proofs = proof_records(repo, run["id"])
            latest = repo.all(reads.latest_attestation(run["id"]))
        facts = RunFacts(run["id"], run["status"], run["outcome"], bool(run["proven"]),
                         run["created_at"], run["updated_at"], rule)
        attestation = AttestationFacts(**latest[0]) if latest else None
        return build_bundle(facts, version, proofs, attestation, self.signing.key)


__all__ = ["CURRENT_VERSION", "BundleService", "version_of"]
