"""The read model, for every surface: pages of protocols (with their statistics and proven
rates), of runs (status, outcome, proven, the step of the step count) and of entries; one
protocol's overview, quality and metrics; one run with its proof chain checked link by
link; the home view; and the one check that a run is the caller's."""

from __future__ import annotations

import re
from typing import Any

from ..domain import engine, views
from ..domain.caller import Caller
from ..domain.errors import NotFoundError, ValidationError
from ..domain.limits import BAD_CHAR
from ..domain.plain import plain_text, step_body
from ..domain.proof import chain_hash, verify_chain
from ..domain.requests import UUID_PATTERN, ListEntries, ListProtocols, ListRuns, ShortId
from ..domain.texts import GENESIS_HASH
from ..domain.uris import to_uri
from ..search.snippets import truncate
from ..store import reads
from ..store.db import Store
from ..store.repo import Repo, Row
from .protocols import ProtocolService
from .versions import followed_version

HOME_ITEMS = 5  # protocols and runs on the home page
PREVIEW_LEN = 240
_RUN_ID = re.compile(f"^{UUID_PATTERN}$")
#: A short id: the first characters (4 or more) of a uuid, as tables show them.
SHORT_ID = re.compile(r"^(?:kairos://mem/)?([0-9a-f][0-9a-f-]{3,35})$")
UUID_CHARS = 36
ID_KINDS = {"step": ("uri", "protocol step"), "run": ("run_id", "run")}
_NO_COUNTS = {"accepted": 0, "refused": 0, "failures": 0}  # a step's statistics, not yet run


def own_run(repo: Repo, run_id: str, caller: Caller) -> Row:
    """The caller's run ``run_id``: another space's run, an unknown id and text that is no
    run id (no id holds a NUL or a surrogate; PostgreSQL cannot even compare one) all
    answer the same 404."""
    if BAD_CHAR.search(run_id):
        raise NotFoundError(f"No run {run_id!r}.", field="run_id")
    run = repo.run(run_id) if _RUN_ID.match(run_id) else None
    if run is None or run["space"] != caller.space:
        raise NotFoundError(f"No run {run_id}.", field="run_id")
    return run


def proof_records(repo: Repo, run_id: str) -> list[dict[str, Any]]:
    """A run's proof records in order, each with its ``proof_hash``."""
    return [dict(p["record"], proof_hash=p["proof_hash"]) for p in repo.proofs(run_id)]


def _rate(successes: int, failures: int) -> float | None:
    done = successes + failures
    return round(successes / done, 4) if done else None


def _stats(row: Row) -> views.Stats:
    successes, failures = int(row["successes"]), int(row["failures"])
    return {"runs": int(row["runs"]), "successes": successes, "failures": failures,
            "success_rate": _rate(successes, failures),
            "proven_runs": int(row["proven_runs"]), "unproven_runs": int(row["unproven_runs"]),
            "last_outcome": row["last_outcome"], "last_run_at": row["last_run_at"]}


def _protocol_item(row: Row) -> views.ProtocolItem:
    return {"uri": to_uri(row["step_id"]), "chain_label": row["title"],
            "tags": list(row["tags"]), "step_count": int(row["step_count"]),
            "builtin": bool(row["builtin"]), "created_at": row["created_at"],
            "updated_at": row["updated_at"], "stats": _stats(row)}


def _run_item(row: Row) -> views.RunItem:
    steps, step = int(row["step_count"]), row["step_index"] + 1
    return {"run_id": row["id"], "chain_label": row["title"], "status": row["status"],
            "outcome": row["outcome"], "step": min(step, steps) if steps else step,
            "step_count": steps, "proofs": int(row["proofs"]), "proven": bool(row["proven"]),
            "retry_count": row["retry_count"], "caller": row["caller"],
            "message": row["message"], "created_at": row["created_at"],
            "updated_at": row["updated_at"]}


def _broken(index: int, step_uri: str | None, reason: str) -> views.Broken:
    return {"index": index, "step_uri": step_uri, "reason": reason}


def _chain(run: Row, records: list[dict[str, Any]]) -> tuple[int, views.Broken | None]:
    """How many links of a run's proof chain recompute, and the first that does not (or,
    when the chain is whole, the run's head that does not match its last proof)."""
    head, checked, broken = verify_chain(records, run["chain_rule"])
    if broken is not None:
        return checked, _broken(broken.index, broken.step_uri, broken.reason)
    if head != run["head"]:
        return checked, _broken(len(records), None,
                                "the run's head does not match its last proof")
    return checked, None


def _page(req: ListProtocols | ListRuns | ListEntries, items: list[Any], total: int,
          read: int) -> Any:
    """A page of ``items``, of the ``read`` rows the page's query gave."""
    return {"items": items, "total": total, "limit": req.limit, "offset": req.offset,
            "has_more": req.offset + read < total}


def _verification(run: Row, checked: int, broken: views.Broken | None) -> views.Verification:
    return {"run_id": run["id"], "valid": broken is None, "proofs": checked,
            "proven": bool(run["proven"]), "head": run["head"], "first_broken": broken}


class ReadService:
    def __init__(self, store: Store, protocols: ProtocolService, *, home: str | None,
                 run_idle_minutes: int) -> None:
        self.store = store
        self.protocols = protocols
        self.home_dir = home
        self.run_idle_minutes = run_idle_minutes

    # --- protocols -------------------------------------------------------------------------

    def protocols_page(self, req: ListProtocols, caller: Caller) -> views.ProtocolPage:
        with self.store.read() as repo:
            rows, total = repo.page(reads.protocol_page(
                caller.space, limit=req.limit, offset=req.offset, title=req.title,
                tag=req.tag, builtin=req.builtin, sort=req.sort))
        # A protocol always has steps: one caught mid-delete is left out.
        return _page(req, [_protocol_item(r) for r in rows if r["step_id"] is not None],
                     total, len(rows))

    def protocol_overview(self, uri: str, caller: Caller) -> views.ProtocolOverview:
        """Steps in order with their challenges, and the protocol's statistics."""
        with self.store.read() as repo:
            _, proto, steps = self.protocols.resolve(repo, uri, caller)
            rows, _ = repo.page(reads.protocol_page(caller.space, limit=1, offset=0,
                                                    builtin=True, protocol_id=proto["id"]))
        return {
            "uri": to_uri(steps[0]["id"]), "chain_label": proto["title"],
            "intro": proto["intro"], "tags": proto["tags"], "builtin": bool(proto["builtin"]),
            "step_count": len(steps), "created_at": proto["created_at"],
            "updated_at": proto["updated_at"],
            "steps": [{"uri": to_uri(s["id"]), "position": s["position"] + 1,
                       "label": s["label"], "content": s["content"],
                       "body": step_body(s["content"]),
                       "challenge": dict(s["challenge"])} for s in steps],
            "stats": _stats(rows[0]),
        }

    def quality(self, uri: str, caller: Caller) -> views.Quality:
        """Runs, successes, failures and success rate per day, and cumulatively."""
        with self.store.read() as repo:
            _, proto, steps = self.protocols.resolve(repo, uri, caller)
            rows = repo.all(reads.outcome_series(proto["id"], caller.space))
        series: list[views.QualityPoint] = []
        runs = ok = bad = 0
        for r in rows:
            s, f = int(r["successes"] or 0), int(r["failures"] or 0)
            runs, ok, bad = runs + int(r["runs"]), ok + s, bad + f
            series.append({"date": r["day"], "runs": int(r["runs"]), "successes": s,
                           "failures": f, "success_rate": _rate(s, f),
                           "cumulative_runs": runs, "cumulative_success_rate": _rate(ok, bad)})
        return {"uri": to_uri(steps[0]["id"]), "chain_label": proto["title"],
                "bucket": "day", "series": series}

    def metrics(self, uri: str, caller: Caller) -> views.Metrics:
        """Quality metrics of the protocol that ``uri`` belongs to, as run in the caller's
        space (a built-in protocol's are kept per space)."""
        with self.store.read() as repo:
            _, proto, rows = self.protocols.resolve(repo, uri, caller)
            found = repo.protocol_metrics(proto["id"], caller.space)
            per_step = repo.step_metrics_of(proto["id"], caller.space)
        # A protocol or step not yet run in the space has no statistics row: all zero.
        unrun: dict[str, Any] = {"runs": 0, "successes": 0, "failures": 0, "quality_bonus": 0.0,
                                 "last_outcome": None, "last_run_at": None, "per_model": {}}
        stats = found or unrun
        steps = []
        for r in rows:
            counts = per_step.get(r["id"], _NO_COUNTS)
            steps.append({"uri": to_uri(r["id"]), "label": r["label"],
                          **{name: counts[name] for name in _NO_COUNTS}})
        return {**{name: stats[name] for name in unrun},  # type: ignore[typeddict-item]
                "steps": steps}

    # --- runs ------------------------------------------------------------------------------

    def runs_page(self, req: ListRuns, caller: Caller) -> views.RunPage:
        with self.store.read() as repo:
            protocol_id = None
            if req.protocol is not None:
                _, proto, _ = self.protocols.resolve(repo, req.protocol, caller,
                                                     field="protocol")
                protocol_id = proto["id"]
            rows, total = repo.page(reads.run_page(
                caller.space, limit=req.limit, offset=req.offset, status=req.status,
                protocol_id=protocol_id))
        return _page(req, [_run_item(r) for r in rows], total, len(rows))

    def run_of_nonce(self, nonce: str, caller: Caller) -> views.RunItem:
        """The run a challenge's nonce belongs to (so a terminal can name the run it is
        walking)."""
        with self.store.read() as repo:
            run = repo.run_by_nonce(nonce)
            if run is None or run["space"] != caller.space:
                raise NotFoundError(f"No run issued the nonce {nonce}.", field="nonce")
            rows, _ = repo.page(reads.run_page(caller.space, limit=1, offset=0,
                                               run_id=run["id"]))
        return _run_item(rows[0])

    def _records(self, run_id: str, caller: Caller) -> tuple[Row, list[dict[str, Any]]]:
        with self.store.read() as repo:
            run = own_run(repo, run_id, caller)
            return run, proof_records(repo, run["id"])

    def verify(self, run_id: str, caller: Caller) -> views.Verification:
        run, records = self._records(run_id, caller)
        return _verification(run, *_chain(run, records))

    def proof_log(self, run_id: str, caller: Caller) -> views.ProofLog:
        run, records = self._records(run_id, caller)
        return {"run_id": run["id"], "proofs": records}

    def run(self, run_id: str, caller: Caller) -> tuple[views.RunDetail, views.Verification]:
        """One run: its protocol, steps, and proof chain with every link checked; and the
        chain's verdict as ``verify`` gives it, from the same read."""
        with self.store.read() as repo:
            run = own_run(repo, run_id, caller)
            version = followed_version(repo, run["protocol_id"], run["protocol_version"])
            records = proof_records(repo, run["id"])
        steps = version.steps if version is not None else ()
        checked, first_broken = _chain(run, records)
        links: list[views.Link] = []
        previous, failed = GENESIS_HASH, False
        for i, rec in enumerate(records):
            if failed:
                state, reason = "unchecked", "after the first broken link"
            elif first_broken is not None and first_broken["index"] == i:
                state, reason, failed = "broken", first_broken["reason"], True
            else:
                state, reason = "valid", None
            try:
                expected: str | None = chain_hash(previous, rec, run["chain_rule"])
            except (KeyError, TypeError, ValueError):
                expected = None
            links.append({"index": i, "step_uri": rec.get("step_uri"),
                          "step_index": rec.get("step_index"),
                          "state": state,  # type: ignore[typeddict-item]
                          "reason": reason, "expected_hash": expected, "record": rec})
            stored = rec.get("proof_hash")
            previous = stored if isinstance(stored, str) else ""
        proven_at = {rec.get("step_index") for rec in records}
        detail: views.RunDetail = {
            "run_id": run["id"], "status": run["status"], "outcome": run["outcome"],
            "message": run["message"], "caller": run["caller"],
            "step": run["step_index"] + 1, "retry_count": run["retry_count"],
            "created_at": run["created_at"], "updated_at": run["updated_at"],
            "protocol": None if version is None else {
                "uri": steps[0].uri if steps else None, "chain_label": version.title},
            "steps": [{"uri": s.uri, "position": i + 1, "label": s.label, "proven": i in proven_at}
                      for i, s in enumerate(steps)],
            "proven": bool(run["proven"]),
            "head": run["head"],
            "verification": {"valid": first_broken is None, "proofs": len(records),
                             "first_broken": first_broken},
            "links": links,
            "protocol_version": run["protocol_version"], "chain_rule": run["chain_rule"],
        }
        return detail, _verification(run, checked, first_broken)

    # --- entries ---------------------------------------------------------------------------

    def entries_page(self, req: ListEntries, caller: Caller) -> views.EntryPage:
        """A page of experiences or manuals, optionally of one category, with previews."""
        with self.store.read() as repo:
            rows, total = repo.page(reads.entry_page(caller.space, req.type, limit=req.limit,
                                                     offset=req.offset, category=req.category))
        body = "playbook" if req.type == "experience" else "content"
        items: list[views.EntryItem] = [
            {"entity_id": r["id"], "entity_type": req.type, "category": r["category"],
             "title": r["title"], "section": r.get("section"), "author": r["author"],
             "updated_at": r["updated_at"],
             "preview": truncate(plain_text(r[body]), PREVIEW_LEN)} for r in rows]
        return _page(req, items, total, len(rows))

    # --- the home view and short ids ------------------------------------------------------

    def home(self, caller: Caller, backend: str) -> views.Home:
        protocols = self.protocols_page(ListProtocols(limit=HOME_ITEMS), caller)
        runs = self.runs_page(ListRuns(limit=HOME_ITEMS), caller)
        active = self.runs_page(ListRuns(limit=1, status=engine.ACTIVE), caller)["total"]
        return {"protocols": {"total": protocols["total"], "recent": protocols["items"]},
                "runs": {"total": runs["total"], "active": active, "recent": runs["items"]},
                "space": caller.space, "store": {"backend": backend, "home": self.home_dir},
                "run_idle_minutes": self.run_idle_minutes}

    def expand_id(self, req: ShortId, caller: Caller) -> str:
        """The full step URI or run id that a short id (its first characters) names in the
        caller's space; other text is returned as given, for the use case to judge."""
        text, kind = req.text, req.kind
        field, what = ID_KINDS[kind]
        found = SHORT_ID.match(text.strip().lower())
        if found is None:
            if "://" not in text:
                raise ValidationError(field, f"a {what} id", message=(
                    f"{text!r} is not a {what} id: expected "
                    + ("kairos://mem/<uuid> or " if kind == "step" else "")
                    + "its first 8 characters, as tables show them."))
            return text
        prefix = found.group(1)
        if len(prefix) == UUID_CHARS:  # a whole id: the use case checks it
            return to_uri(prefix) if kind == "step" else prefix
        spaces = caller.visible_spaces if kind == "step" else (caller.space,)
        with self.store.read() as repo:
            ids = [row["id"] for row in repo.all(reads.ids_starting(kind, prefix, spaces))]
        if not ids:
            raise NotFoundError(f"No {what} id starts with {prefix}.", field=field)
        if len(ids) > 1:
            raise ValidationError(field, f"more characters of the {what} id", message=(
                f"{prefix} starts {len(ids)} {what} ids; give more characters of the one "
                "you mean."))
        return to_uri(ids[0]) if kind == "step" else ids[0]


__all__ = ["ReadService", "own_run", "proof_records"]
