"""A run's signed bundle (``domain.bundle``, format in ``docs/bundle.md``): the run as the
store holds it, the protocol version it ran, its proofs and its latest attestation,
signed once with the server's key. Active runs export too: their head is the chain so
far."""

from __future__ import annotations

from ..domain.bundle import Bundle, build_bundle
from ..domain.caller import Caller
from ..domain.errors import CONFLICT, ConflictError
from ..store import reads
from ..store.db import Store
from .reads import own_run, proof_records
from .signing import Signing
from .versions import followed_version


def export_bundle(store: Store, signing: Signing, run_id: str, caller: Caller) -> Bundle:
    """The caller's run ``run_id`` as a signed bundle; another space's run answers as an
    unknown one (``own_run``)."""
    with store.read() as repo:
        run = own_run(repo, run_id, caller)
        version = followed_version(repo, run["protocol_id"], run["protocol_version"])
        if version is None:
            raise ConflictError(CONFLICT, f"Run {run['id']} follows version "
                                f"{run['protocol_version']} of its protocol, which this "
                                "store does not hold: there is no text to bundle with "
                                "its proofs.", field="run_id")
        proofs = proof_records(repo, run["id"])
        latest = repo.all(reads.latest_attestation(run["id"]))
    return build_bundle({**run, "proven": bool(run["proven"])}, version, proofs,
                        dict(latest[0]) if latest else None, signing.key)


__all__ = ["export_bundle"]
