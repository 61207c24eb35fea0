"""Runs as training data (``domain.datasets``), read from the store in batches: a batch of
finished runs of the caller's space, then their proofs, attestations, protocols and steps,
each in one query for the whole batch."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from itertools import groupby
from operator import itemgetter

from ..domain.caller import Caller
from ..domain.dataset_filters import Filters
from ..domain.datasets import Record, export
from ..domain.run_data import ProtocolData, RunData, protocol_data
from ..domain.uris import parse_uri
from ..store import listing
from ..store.db import Store
from ..store.repo import Row

BATCH = 200  # runs read at once


def _run(row: Row, protocol: ProtocolData, proofs: list[Row], attested: Row | None
         ) -> RunData:
    step_uris = [s.uri for s in protocol.steps]
    at = attested["step_uri"] if attested is not None else None
    return RunData(
        run_id=row["id"], space=row["space"], caller=row["caller"], status=row["status"],
        outcome=row["outcome"], proven=bool(row["proven"]), created_at=row["created_at"],
        updated_at=row["updated_at"], protocol=protocol,
        proofs=tuple(dict(p["record"], proof_hash=p["proof_hash"]) for p in proofs),
        head=row["head"], message=row["message"], quality_bonus=row["quality_bonus"],
        llm_model_id=(attested["llm_model_id"] if attested is not None else None)
        or row["outcome_model"],
        attested_step=step_uris.index(at) if at in step_uris else None)


def dataset_runs(store: Store, filters: Filters, caller: Caller) -> Iterator[RunData]:
    """The caller's finished runs (of ``filters.protocol`` and ``filters.outcome`` when
    set), oldest first, each with the protocol version it followed (kept while a run
    follows it, so a deleted protocol's runs are here too)."""
    protocol_id = None
    if filters.protocol is not None:
        with store.read() as repo:
            step = repo.step(parse_uri(filters.protocol, "protocol"))
        if step is None or not caller.sees(step["space"]):
            return
        protocol_id = step["protocol_id"]
    after: tuple[str, str] | None = None
    while True:
        with store.read() as repo:
            rows = repo.all(listing.finished_runs(caller.space, after, BATCH,
                                                  protocol_id=protocol_id,
                                                  outcome=filters.outcome))
            if not rows:
                return
            ids = [r["id"] for r in rows]
            followed = sorted({(r["protocol_id"], r["protocol_version"]) for r in rows})
            proofs = {run_id: list(group) for run_id, group in
                      groupby(repo.all(listing.proofs_of(ids)), itemgetter("run_id"))}
            attested = {a["run_id"]: a for a in repo.all(listing.attestations_of(ids))}
            texts = {(v["protocol_id"], v["version"]): protocol_data(v)
                     for v in repo.all(listing.versions_in(followed)) if v["steps"]}
        for row in rows:
            text = texts.get((row["protocol_id"], row["protocol_version"]))
            if text is not None:
                yield _run(row, text, proofs.get(row["id"], []), attested.get(row["id"]))
        after = (rows[-1]["created_at"], rows[-1]["id"])


def export_dataset(store: Store, fmt: str, filters: Filters, caller: Caller
                   ) -> Iterator[Record]:
    """The records of ``fmt`` (checked before the first read) from the caller's runs."""
    scoped = replace(filters, space=caller.space)
    return export(fmt, dataset_runs(store, scoped, caller), scoped)


__all__ = ["BATCH", "dataset_runs", "export_dataset"]
