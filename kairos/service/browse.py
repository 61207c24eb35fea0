"""Read-only use cases for people browsing a space: protocol listings with their stats,
one protocol's overview, outcomes over time, one run with its proof chain checked link by
link, markdown validation without storing, and entry listings."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from ..domain import engine, errors, limits, markdown
from ..domain.caller import Caller
from ..domain.errors import NotFoundError, ValidationError
from ..domain.plain import plain_text, step_body
from ..domain.proof import chain_hash, verify_chain
from ..domain.requests import CATEGORY_CODES
from ..domain.texts import GENESIS_HASH
from ..domain.uris import to_uri
from ..search.documents import protocol_doc
from ..search.service import DUPLICATE_SEQ, SearchService
from ..search.snippets import truncate
from ..store import browse as q
from ..store.db import Store
from ..store.repo import Repo, Row
from .clock import now
from .protocols import SIMILAR_THRESHOLD, ProtocolService, title_key

MAX_LIMIT = 100
HOME_ITEMS = 5  # protocols and runs on the home page
ENTRY_KINDS = ("experience", "manual")
PREVIEW_LEN = 240


def _page(limit: Any, offset: Any) -> tuple[int, int]:
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise ValidationError("limit", f"an integer from 1 to {MAX_LIMIT}")
    if (isinstance(offset, bool) or not isinstance(offset, int)
            or not 0 <= offset <= limits.OFFSET_MAX):
        raise ValidationError("offset", f"an integer from 0 to {limits.OFFSET_MAX}")
    return limit, offset


def _rate(successes: int, failures: int) -> float | None:
    done = successes + failures
    return round(successes / done, 4) if done else None


def _proven_counts(runs: list[Row], steps: dict[str, int]) -> dict[str, dict[str, int]]:
    """Per protocol: runs with an outcome whose chain covers every step (proven), and
    those without (unproven)."""
    out: dict[str, dict[str, int]] = defaultdict(lambda: {"proven": 0, "unproven": 0})
    for r in runs:
        if r["outcome"] is None:
            continue
        proven = r["proofs"] >= steps.get(r["protocol_id"], 0) > 0
        out[r["protocol_id"]]["proven" if proven else "unproven"] += 1
    return out


def _stats(row: Row | dict[str, Any], proven: dict[str, int]) -> dict[str, Any]:
    return {"runs": int(row["runs"]), "successes": int(row["successes"]),
            "failures": int(row["failures"]),
            "success_rate": _rate(int(row["successes"]), int(row["failures"])),
            "proven_runs": proven["proven"], "unproven_runs": proven["unproven"],
            "last_outcome": row["last_outcome"], "last_run_at": row["last_run_at"]}


class BrowseService:
    def __init__(self, store: Store, protocols: ProtocolService,
                 search: SearchService | None) -> None:
        self.store = store
        self.protocols = protocols
        self.search = search

    # --- protocols -------------------------------------------------------------------------

    def list_protocols(self, caller: Caller, *, limit: Any = 20, offset: Any = 0,
                       q_text: Any = None, sort: Any = "updated") -> dict[str, Any]:
        """A page of the space's protocols with their run statistics."""
        limit, offset = _page(limit, offset)
        if q_text is not None and not isinstance(q_text, str):
            raise ValidationError("q", "a string")
        if sort not in q.PROTOCOL_SORTS:
            raise ValidationError("sort", " or ".join(q.PROTOCOL_SORTS))
        with self.store.read() as repo:
            rows, total = q.protocol_page(repo, caller.space, q=(q_text or "").strip() or None,
                                          sort=sort, limit=limit, offset=offset)
            ids = [r["id"] for r in rows]
            proven = _proven_counts(q.run_proof_counts(repo, ids, caller.space),
                                    {r["id"]: int(r["step_count"]) for r in rows})
        items = [{"uri": to_uri(r["step_id"]), "chain_label": r["title"], "tags": r["tags"],
                  "step_count": int(r["step_count"]), "created_at": r["created_at"],
                  "updated_at": r["updated_at"], "stats": _stats(r, proven[r["id"]])}
                 for r in rows]
        return {"items": items, "total": total, "limit": limit, "offset": offset,
                "has_more": offset + len(items) < total}

    def _resolve(self, repo: Repo, uri: Any, caller: Caller) -> tuple[Row, list[Row]]:
        _, proto, steps = self.protocols.resolve(repo, uri, caller)
        return proto, steps

    def protocol_overview(self, uri: Any, caller: Caller) -> dict[str, Any]:
        """Steps in order with their challenges, and the protocol's statistics."""
        with self.store.read() as repo:
            proto, steps = self._resolve(repo, uri, caller)
            m = repo.protocol_metrics(proto["id"], caller.space)
            proven = _proven_counts(q.run_proof_counts(repo, [proto["id"]], caller.space),
                                    {proto["id"]: len(steps)})
        base = dict(m) if m is not None else {"runs": 0, "successes": 0, "failures": 0,
                                              "last_outcome": None, "last_run_at": None}
        return {
            "uri": to_uri(steps[0]["id"]), "chain_label": proto["title"],
            "intro": proto["intro"], "tags": proto["tags"], "builtin": bool(proto["builtin"]),
            "step_count": len(steps), "created_at": proto["created_at"],
            "updated_at": proto["updated_at"],
            "steps": [{"uri": to_uri(s["id"]), "position": s["position"] + 1,
                       "label": s["label"], "content": s["content"],
                       "body": step_body(s["content"]),
                       "challenge": dict(s["challenge"])} for s in steps],
            "stats": _stats(base, proven[proto["id"]]),
        }

    def quality(self, uri: Any, caller: Caller) -> dict[str, Any]:
        """Runs, successes, failures and success rate per day, and cumulatively."""
        with self.store.read() as repo:
            proto, steps = self._resolve(repo, uri, caller)
            rows = q.outcome_series(repo, proto["id"], caller.space)
        series, runs, ok, bad = [], 0, 0, 0
        for r in rows:
            s, f = int(r["successes"] or 0), int(r["failures"] or 0)
            runs, ok, bad = runs + int(r["runs"]), ok + s, bad + f
            series.append({"date": r["day"], "runs": int(r["runs"]), "successes": s,
                           "failures": f, "success_rate": _rate(s, f),
                           "cumulative_runs": runs, "cumulative_success_rate": _rate(ok, bad)})
        return {"uri": to_uri(steps[0]["id"]), "chain_label": proto["title"],
                "bucket": "day", "series": series}

    def validate(self, markdown_doc: Any, caller: Caller) -> dict[str, Any]:
        """Parse as a mint would, store nothing: the errors with their line, and for each
        protocol the title clash and similar protocols a mint would report."""
        if not isinstance(markdown_doc, str):
            raise ValidationError("markdown_doc", "a markdown string")
        if not markdown_doc.strip():
            return {"valid": False, "errors": [{"error_code": errors.NO_HEADING, "line": 1,
                                                "message": "The document is empty."}],
                    "protocols": []}
        drafts, found = self.protocols.parser.problems(markdown_doc)
        if found:
            return {"valid": False, "protocols": [], "errors": [
                {"error_code": exc.code, "line": exc.line, "message": exc.message}
                for exc in found]}
        problems: list[dict[str, Any]] = []
        seen: dict[str, int] = {}
        out = []
        with self.store.read() as repo:
            for d in drafts:
                key = title_key(d.title)
                if key in seen:
                    problems.append({"error_code": errors.DUPLICATE_CHAIN, "line": d.line,
                                     "message": f"The document has two protocols titled "
                                                f"'{d.title}' (lines {seen[key]} and "
                                                f"{d.line}): give each its own title."})
                seen.setdefault(key, d.line)
                out.append(self._check_draft(repo, d, caller.space))
        return {"valid": not problems, "errors": problems, "protocols": out}

    def _check_draft(self, repo: Repo, draft: markdown.ProtocolDraft,
                     space: str) -> dict[str, Any]:
        existing = repo.protocol_by_title(space, title_key(draft.title))
        existing_uri = None
        if existing is not None:
            first = repo.steps_of(existing["id"])
            existing_uri = to_uri(first[0]["id"]) if first else None
        check: dict[str, Any] = {"duplicates": [], "warnings": []}
        if self.search is not None:
            spec = protocol_doc("", space, draft, now())
            vectors = self.search.embed_docs([spec])
            check = self.search.duplicate_check(
                "protocol", space, spec.title, spec.body,
                existing["id"] if existing is not None else None,
                query_vector=None if vectors is None else vectors[DUPLICATE_SEQ])
            for dup in check["duplicates"]:
                first = repo.steps_of(dup.pop("entity_id"))
                dup["uri"] = to_uri(first[0]["id"]) if first else None
                dup["chain_label"] = dup.pop("title")
                dup["blocks_mint"] = dup["score"] >= SIMILAR_THRESHOLD
                dup.pop("entity_type", None)
        warnings = list(check.get("warnings", []))
        if existing_uri is not None:
            warnings.append(f"A protocol titled '{draft.title}' already exists; a mint "
                            "replaces it only when forced.")
        top = check["duplicates"][0] if check["duplicates"] else None
        if top is not None and top["blocks_mint"]:
            warnings.append(f"This protocol is {top['score']:.0%} similar to "
                            f"'{top['chain_label']}'; a mint adds it only when forced.")
        return {"chain_label": draft.title, "line": draft.line, "tags": draft.tags,
                "step_count": len(draft.steps), "existing_uri": existing_uri,
                "steps": [{"label": s.label, "challenge": s.challenge.to_dict()}
                          for s in draft.steps],
                "duplicates": check["duplicates"], "warnings": warnings}

    # --- runs ------------------------------------------------------------------------------

    def list_runs(self, caller: Caller, *, limit: Any = 20, offset: Any = 0,
                  protocol_uri: Any = None, status: Any = None) -> dict[str, Any]:
        """A page of the space's runs with status, outcome and whether every step is
        proven."""
        limit, offset = _page(limit, offset)
        if status is not None and status not in engine.RUN_STATUSES:
            raise ValidationError("status", " or ".join(engine.RUN_STATUSES))
        with self.store.read() as repo:
            protocol_id = None
            if protocol_uri is not None:
                _, proto, _ = self.protocols.resolve(repo, protocol_uri, caller,
                                                     field="protocol")
                protocol_id = proto["id"]
            rows, total = q.run_page(repo, caller.space, limit=limit, offset=offset,
                                     protocol_id=protocol_id, status=status)
            counts = q.step_counts(repo, list({r["protocol_id"] for r in rows}))
        items = [{"run_id": r["id"], "chain_label": r["title"], "status": r["status"],
                  "outcome": r["outcome"], "step": r["step_index"] + 1,
                  "step_count": counts.get(r["protocol_id"], 0), "proofs": int(r["proofs"]),
                  "proven": int(r["proofs"]) >= counts.get(r["protocol_id"], 0) > 0,
                  "retry_count": r["retry_count"], "caller": r["caller"],
                  "created_at": r["created_at"], "updated_at": r["updated_at"]}
                 for r in rows]
        return {"items": items, "total": total, "limit": limit, "offset": offset,
                "has_more": offset + len(items) < total}

    def run(self, run_id: Any, caller: Caller) -> dict[str, Any]:
        """One run: its protocol, steps, and proof chain with every link checked."""
        if not isinstance(run_id, str) or not run_id.strip():
            raise ValidationError("run_id", "a run id string")
        with self.store.read() as repo:
            run = repo.run(run_id)
            if run is None or run["space"] != caller.space:
                raise NotFoundError(f"No run {run_id}.", field="run_id")
            proto = repo.protocol(run["protocol_id"])
            steps = repo.steps_of(run["protocol_id"]) if proto is not None else []
            proofs = repo.proofs(run["id"])
        records = [dict(p["record"], proof_hash=p["proof_hash"]) for p in proofs]
        head, _, broken = verify_chain(records)
        links, previous, failed = [], GENESIS_HASH, False
        for i, rec in enumerate(records):
            if failed:
                state, reason = "unchecked", "after the first broken link"
            elif broken is not None and broken.index == i:
                state, reason, failed = "broken", broken.reason, True
            else:
                state, reason = "valid", None
            try:
                expected: str | None = chain_hash(previous, rec)
            except (KeyError, TypeError, ValueError):
                expected = None
            links.append({"index": i, "step_uri": rec.get("step_uri"),
                          "step_index": rec.get("step_index"), "state": state,
                          "reason": reason, "expected_hash": expected, "record": rec})
            stored = rec.get("proof_hash")
            previous = stored if isinstance(stored, str) else ""
        first_broken = (None if broken is None else
                        {"index": broken.index, "step_uri": broken.step_uri,
                         "reason": broken.reason})
        if broken is None and head != run["head"]:
            first_broken = {"index": len(records), "step_uri": None,
                            "reason": "the run's head does not match its last proof"}
        proven_at = {rec.get("step_index") for rec in records}
        return {
            "run_id": run["id"], "status": run["status"], "outcome": run["outcome"],
            "message": run["message"], "caller": run["caller"],
            "step": run["step_index"] + 1, "retry_count": run["retry_count"],
            "created_at": run["created_at"], "updated_at": run["updated_at"],
            "protocol": None if proto is None else {
                "uri": to_uri(steps[0]["id"]) if steps else None,
                "chain_label": proto["title"]},
            "steps": [{"uri": to_uri(s["id"]), "position": s["position"] + 1,
                       "label": s["label"], "proven": s["position"] in proven_at}
                      for s in steps],
            "proven": bool(steps) and len(records) >= len(steps),
            "head": run["head"],
            "verification": {"valid": first_broken is None, "proofs": len(records),
                             "first_broken": first_broken},
            "links": links,
        }

    def home(self, caller: Caller) -> dict[str, Any]:
        """The newest protocols with their statistics and the newest runs, with totals."""
        protocols = self.list_protocols(caller, limit=HOME_ITEMS)
        runs = self.list_runs(caller, limit=HOME_ITEMS)
        with self.store.read() as repo:
            active = q.run_page(repo, caller.space, limit=1, offset=0,
                                status=engine.ACTIVE)[1]
        return {"protocols": {"total": protocols["total"], "recent": protocols["items"]},
                "runs": {"total": runs["total"], "active": active, "recent": runs["items"]}}

    # --- entries ---------------------------------------------------------------------------

    def list_entries(self, caller: Caller, *, kind: Any = "experience",
                     category: Any = None, limit: Any = 20, offset: Any = 0) -> dict[str, Any]:
        """A page of experiences or manuals, optionally of one category, with previews."""
        limit, offset = _page(limit, offset)
        if kind not in ENTRY_KINDS:
            raise ValidationError("type", " or ".join(ENTRY_KINDS))
        if category is not None and category not in CATEGORY_CODES:
            raise ValidationError("category", "one of: " + ", ".join(CATEGORY_CODES))
        with self.store.read() as repo:
            rows, total = q.entry_page(repo, caller.space, kind, category=category or None,
                                       limit=limit, offset=offset)
        body = "playbook" if kind == "experience" else "content"
        items = [{"entity_id": r["id"], "entity_type": kind, "category": r["category"],
                  "title": r["title"], "section": r.get("section"), "author": r["author"],
                  "updated_at": r["updated_at"],
                  "preview": truncate(plain_text(r[body]), PREVIEW_LEN)} for r in rows]
        return {"items": items, "total": total, "limit": limit, "offset": offset,
                "has_more": offset + len(items) < total}


__all__ = ["BrowseService"]
