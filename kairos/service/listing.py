"""Listing protocols and runs a page at a time, and aborting a run.

An aborted run is finished with outcome ``failure`` at the step it was waiting on, exactly
as if the caller had attested that step as failed (kairos_attest's documented way to
abort): the failure counts in the protocol's metrics, the attestation is recorded with the
reason, and the run's pending nonce can no longer be answered.
"""

from __future__ import annotations

import re
from typing import Any

from ..domain import engine, limits
from ..domain.caller import Caller
from ..domain.errors import NotFoundError, ValidationError
from ..domain.uris import to_uri
from ..store.browse import ids_starting
from ..store.db import Store
from ..store.repo import Repo, Row
from .protocols import BUILTIN_SPACE
from .runs import RunService

MAX_PAGE = 500
#: A short id: the first characters (4 or more) of a uuid, as tables show them.
SHORT_ID = re.compile(r"^(?:kairos://mem/)?([0-9a-f][0-9a-f-]{3,35})$")
UUID_CHARS = 36
ID_KINDS = {"step": ("uri", "protocol step"), "run": ("run_id", "run")}


def _count(value: Any, field: str, lowest: int, highest: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not lowest <= value <= highest:
        raise ValidationError(field, f"an integer from {lowest} to {highest}")
    return value


class Listing:
    def __init__(self, store: Store, runs: RunService) -> None:
        self.store = store
        self.runs = runs

    def protocols(self, caller: Caller, *, limit: Any = 50, offset: Any = 0,
                  title: str | None = None, tag: str | None = None,
                  builtin: bool = False) -> dict[str, Any]:
        """The caller's protocols, most recently changed first; ``title`` keeps those whose
        title contains it (case-insensitive), ``tag`` those with that tag, ``builtin`` adds
        the built-in ones."""
        limit = _count(limit, "limit", 1, MAX_PAGE)
        offset = _count(offset, "offset", 0, limits.OFFSET_MAX)
        needle = re.sub(r"\s+", " ", title).strip() if title else None
        with self.store.read() as repo:
            rows, total = repo.protocol_page(caller.space, builtin=builtin, title=needle,
                                             tag=tag or None, limit=limit, offset=offset)
            ids = [r["id"] for r in rows]
            first = repo.protocols_with_first_step(ids)
            counts = repo.step_counts(ids)
            metrics = repo.metrics_for(ids, caller.space)
        items = []
        for r in rows:
            m = metrics.get(r["id"])
            items.append({
                "uri": to_uri(first[r["id"]]["step_id"]) if r["id"] in first else None,
                "chain_label": r["title"],
                "step_count": counts.get(r["id"], 0),
                "tags": list(r["tags"]),
                "builtin": bool(r["builtin"]),
                "runs": m["runs"] if m else 0,
                "successes": m["successes"] if m else 0,
                "failures": m["failures"] if m else 0,
                "last_run_at": m["last_run_at"] if m else None,
                "created_at": r["created_at"],
                "updated_at": r["updated_at"],
            })
        return {"items": items, "total": total, "limit": limit, "offset": offset,
                "has_more": offset + len(items) < total}

    def runs_list(self, caller: Caller, *, limit: Any = 20,
                  status: str | None = None) -> dict[str, Any]:
        """Recent runs; ``step`` is the step a run waits on, or its last step once
        finished (never beyond ``step_count``)."""
        limit = _count(limit, "limit", 1, MAX_PAGE)
        if status is not None and status not in engine.RUN_STATUSES:
            raise ValidationError("status", ", ".join(engine.RUN_STATUSES[:-1]) + " or "
                                  + engine.RUN_STATUSES[-1])
        with self.store.read() as repo:
            rows = repo.runs_page(caller.space, limit=limit, status=status)
            pids = list(dict.fromkeys(r["protocol_id"] for r in rows))
            counts = repo.step_counts(pids)
            titles = {p: (row["title"] if (row := repo.protocol(p)) else None) for p in pids}
        return {"items": [self._run_item(r, titles[r["protocol_id"]],
                                         counts.get(r["protocol_id"], 0)) for r in rows]}

    @staticmethod
    def _run_item(r: Row, title: str | None, step_count: int) -> dict[str, Any]:
        step = r["step_index"] + 1
        return {"run_id": r["id"], "chain_label": title, "status": r["status"],
                "outcome": r["outcome"],
                "step": min(step, step_count) if step_count else step,
                "step_count": step_count, "proven": bool(r["proven"]),
                "retry_count": r["retry_count"],
                "caller": r["caller"], "message": r["message"],
                "created_at": r["created_at"], "updated_at": r["updated_at"]}

    def run_of_nonce(self, nonce: Any, caller: Caller) -> dict[str, Any]:
        """The run a challenge's nonce belongs to (so a terminal can name the run it is
        walking)."""
        if not isinstance(nonce, str) or not nonce:
            raise ValidationError("nonce", "a nonce string")
        with self.store.read() as repo:
            run = repo.run_by_nonce(nonce)
            if run is None or run["space"] != caller.space:
                raise NotFoundError(f"No run issued the nonce {nonce}.", field="nonce")
            counts = repo.step_counts([run["protocol_id"]])
            proto = repo.protocol(run["protocol_id"])
        return self._run_item(run, proto["title"] if proto else None,
                              counts.get(run["protocol_id"], 0))

    def abort(self, run_id: Any, caller: Caller, message: Any = None) -> dict[str, Any]:
        """Finish an active or completed run with outcome failure at its pending step."""
        if message is not None and not isinstance(message, str):
            raise ValidationError("message", "a string")
        reason = (message or "").strip() or "Aborted."
        done = self.runs.abort(run_id, caller, reason)
        return {**done, "status": engine.FINISHED, "aborted": True,
                "next_action": "Run aborted."}

    def own_run(self, run_id: Any, caller: Caller) -> Row:
        """The caller's run ``run_id`` (404 when another space's or unknown)."""
        with self.store.read() as repo:
            return self._own(repo, run_id, caller)

    def expand_id(self, text: Any, kind: str, caller: Caller) -> Any:
        """The full step URI or run id that a short id (its first characters) names in the
        caller's space; other text is returned as given, for the use case to judge."""
        field, what = ID_KINDS[kind]
        found = SHORT_ID.match(text.strip().lower()) if isinstance(text, str) else None
        if found is None:
            if isinstance(text, str) and "://" not in text:
                raise ValidationError(field, f"a {what} id", message=(
                    f"{text!r} is not a {what} id: expected "
                    + ("kairos://mem/<uuid> or " if kind == "step" else "")
                    + "its first 8 characters, as tables show them."))
            return text
        prefix = found.group(1)
        if len(prefix) == UUID_CHARS:  # a whole id: the use case checks it
            return to_uri(prefix) if kind == "step" else prefix
        with self.store.read() as repo:
            spaces = [caller.space, BUILTIN_SPACE] if kind == "step" else [caller.space]
            ids = ids_starting(repo, kind, prefix, spaces)
        if not ids:
            raise NotFoundError(f"No {what} id starts with {prefix}.", field=field)
        if len(ids) > 1:
            raise ValidationError(field, f"more characters of the {what} id", message=(
                f"{prefix} starts {len(ids)} {what} ids; give more characters of the one "
                "you mean."))
        return to_uri(ids[0]) if kind == "step" else ids[0]

    @staticmethod
    def _own(repo: Repo, run_id: Any, caller: Caller) -> Row:
        if not isinstance(run_id, str) or not run_id:
            raise ValidationError("run_id", "a run id string")
        run = repo.run(run_id)
        if run is None or run["space"] != caller.space:
            raise NotFoundError(f"No run {run_id}.", field="run_id")
        return run


__all__ = ["Listing"]
