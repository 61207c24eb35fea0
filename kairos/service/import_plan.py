"""Where each checked record of an import goes: its id in the space (kept, new, or moved
off an id another space holds), the references that follow it, and the rows written."""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from ..domain import engine, markdown
from ..domain.errors import CONFLICT, DUPLICATE_CHAIN, ConflictError
from ..domain.markdown import title_key
from ..domain.versions import content_hash, step_entries
from ..search.documents import DocSpec, entry_doc, protocol_doc
from ..store import listing, space_rows
from .import_rows import Row

if TYPE_CHECKING:
    from ..store.repo import Repo

__all__ = ["ENTRY_TABLES", "Checked", "Plan"]

#: Checked rows per table: each row with the values a write stores.
Checked = dict[str, list[tuple[Row, dict[str, Any]]]]
#: The tables of knowledge entries, and the kind of entry each holds.
ENTRY_TABLES = {"experiences": "experience", "manuals": "manual"}


def moved(space: str, old: str) -> str:
    """The id a record held by another space gets in ``space``: the same on every import."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"kairos-import:{space}:{old}"))


class _Places:
    """Each id of one table: its id in the space, and whether the space already holds it
    (then the stored record is kept and the file's row skipped)."""

    def __init__(self, repo: Repo, table: str, ids: Iterable[str], space: str) -> None:
        ids = list(ids)
        held = space_rows.spaces_of(repo.conn, table, ids)
        away = {i: moved(space, i) for i in ids if held.get(i, space) != space}
        held_away = space_rows.spaces_of(repo.conn, table, away.values())
        self.ids = {i: away.get(i, i) for i in ids}
        self.kept = {i for i in ids if held.get(i) == space
                     or held_away.get(away.get(i, ""), "") == space}
        clash = next((i for i, new in away.items() if held_away.get(new, space) != space), None)
        if clash is not None:
            raise ConflictError(CONFLICT, f"The id {clash} cannot be given a free id in space "
                                f"'{space}'; nothing was imported.", field="id")


class Plan:
    def __init__(self, repo: Repo, checked: Checked, drafts: dict[str, markdown.ProtocolDraft],
                 space: str) -> None:
        self.space, self.checked, self.drafts = space, checked, drafts
        protos = {v["id"]: (row, v) for row, v in checked["protocols"]}
        self.protocols = _Places(repo, "protocols", protos, space)
        self._titles(repo, protos)
        self.step_ids = self._step_ids(repo)
        self.versions = self._versions(repo)
        for row, run in checked["runs"]:
            if run["protocol_id"] not in self.versions:
                raise row.refuse("protocol_id", "the id of a protocol in this file or of a "
                                 "built-in protocol", run["protocol_id"])
            known = self.versions[run["protocol_id"]].get(run["protocol_version"])
            if known is None:
                raise row.refuse("protocol_version", "a version of its protocol in this file "
                                 "(or of the built-in protocol in this store)",
                                 run["protocol_version"])
            if run["step_index"] > len(known):
                raise row.refuse("step_index", f"at most {len(known)} (its version's steps)",
                                 run["step_index"])
            if run["failed_step_id"] not in (None, *known):
                raise row.refuse("failed_step_id", "a step of its protocol version, or null",
                                 run["failed_step_id"])
        self.runs = _Places(repo, "runs", (v["id"] for _, v in checked["runs"]), space)
        self.learned = _Places(repo, "learned_triggers",
                               (v["id"] for _, v in checked["learned_triggers"]), space)
        self.entries = {table: _Places(repo, table, (v["id"] for _, v in checked[table]), space)
                        for table in ENTRY_TABLES}
        self.codes = {r["code"] for r in repo.categories(space)}
        # Each table's rows go in unless the space holds what this column names (a step,
        # a learned trigger or a version comes with its protocol, a proof or an
        # attestation with its run).
        self._kept_by = {
            "categories": ("code", self.codes), "protocols": ("id", self.protocols.kept),
            "steps": ("protocol_id", self.protocols.kept),
            "learned_triggers": ("protocol_id", self.protocols.kept),
            "protocol_versions": ("protocol_id", self.protocols.kept),
            "runs": ("id", self.runs.kept), "proofs": ("run_id", self.runs.kept),
            "attestations": ("run_id", self.runs.kept),
            **{table: ("id", places.kept) for table, places in self.entries.items()}}

    def _versions(self, repo: Repo) -> dict[str, dict[int, list[str]]]:
        """The step ids of every version a run of the file may follow: the file's versions
        (a protocol of the file without any has its text as version 1), and the built-in
        protocols' versions in this store."""
        out: dict[str, dict[int, list[str]]] = defaultdict(dict)
        for pid in (r["id"] for r in repo.all(listing.builtin_protocols())):
            for held in repo.versions_of(pid):
                out[pid][held["version"]] = [s["id"] for s in held["steps"]]
        for _, v in self.checked["protocol_versions"]:
            out[v["protocol_id"]][v["version"]] = [s["id"] for s in v["steps"]]
        steps = sorted((v for _, v in self.checked["steps"]), key=lambda v: v["position"])
        for _, proto in self.checked["protocols"]:
            if proto["id"] not in out:
                out[proto["id"]][1] = [v["id"] for v in steps
                                       if v["protocol_id"] == proto["id"]]
        self.held_versions = space_rows.held_versions(repo.conn, out)
        return dict(out)

    def _titles(self, repo: Repo, protos: dict[str, tuple[Row, dict[str, Any]]]) -> None:
        """A new protocol's title is free in the space (and used once in the file)."""
        seen: dict[str, int] = {}
        for pid, (row, v) in protos.items():
            key = title_key(v["title"])
            if key in seen:
                raise ConflictError(DUPLICATE_CHAIN, f"Line {row.line}: the file has two "
                                    f"protocols titled {v['title']!r} (the other on line "
                                    f"{seen[key]}). Nothing was imported.",
                                    field="protocols.title", line=row.line)
            seen[key] = row.line
            if pid in self.protocols.kept:
                continue
            other = repo.protocol_by_title(self.space, key)
            if other is not None and other["id"] != self.protocols.ids[pid]:
                raise ConflictError(DUPLICATE_CHAIN, f"Line {row.line}: space '{self.space}' "
                                    f"already has a protocol titled {v['title']!r}; rename "
                                    "one of them. Nothing was imported.",
                                    field="protocols.title", line=row.line)

    def _step_ids(self, repo: Repo) -> dict[str, str]:
        """A step's id in the space: as its protocol's when that is kept; for a new
        protocol, its own unless the store holds it (in any protocol), then moved."""
        ids = {v["id"]: v["protocol_id"] for _, v in self.checked["steps"]}
        held = space_rows.spaces_of(repo.conn, "steps", ids)
        out = {}
        for i, pid in ids.items():
            if pid in self.protocols.kept:
                out[i] = i if self.protocols.ids[pid] == pid else moved(self.space, i)
            else:
                out[i] = moved(self.space, i) if i in held else i
        fresh = [out[i] for i, pid in ids.items() if pid not in self.protocols.kept
                 and out[i] != i]
        if space_rows.spaces_of(repo.conn, "steps", fresh):
            raise ConflictError(CONFLICT, "A step id cannot be given a free id in space "
                                f"'{self.space}'; nothing was imported.", field="steps.id")
        return out

    # --- what is written -------------------------------------------------------------------

    def _new(self, table: str) -> list[dict[str, Any]]:
        """The rows of ``table`` that the space does not hold yet, with their new ids."""
        column, kept = self._kept_by[table]
        rows = [v for _, v in self.checked[table] if v[column] not in kept]
        if table == "protocol_versions":  # a deleted protocol's, anew
            return [v for v in rows if (self._protocol(v["protocol_id"]), v["version"])
                    not in self.held_versions]
        return rows

    @property
    def skipped(self) -> dict[str, int]:
        counts = {table: len(self.checked[table]) - len(self._new(table))
                  for table in self.checked}
        return {table: n for table, n in counts.items() if n}

    @property
    def new_ids(self) -> dict[str, int]:
        places = {"protocols": self.protocols, "runs": self.runs,
                  "learned_triggers": self.learned, **self.entries}
        counts = {table: sum(1 for old, new in p.ids.items() if old != new
                             and old not in p.kept) for table, p in places.items()}
        counts["steps"] = sum(1 for v in self._new("steps")
                              if self.step_ids[v["id"]] != v["id"])
        return {table: n for table, n in counts.items() if n}

    def _protocol(self, pid: str) -> str:
        return self.protocols.ids.get(pid, pid)  # a built-in keeps its id

    def specs(self) -> list[DocSpec]:
        """The search documents of the new protocols and entries."""
        out = [protocol_doc(self.protocols.ids[v["id"]], self.space, self.drafts[v["id"]],
                            v["updated_at"]) for v in self._new("protocols")]
        for table, kind in ENTRY_TABLES.items():
            ids = self.entries[table].ids
            out += [entry_doc(kind, {**v, "id": ids[v["id"]], "space": self.space})
                    for v in self._new(table)]
        return out

    def write(self, repo: Repo) -> dict[str, int]:
        """Insert every new row in the caller's transaction; the counts per table."""
        space = self.space
        rows: dict[str, list[dict[str, Any]]] = {
            "categories": [{**v, "space": space} for v in self._new("categories")],
            "protocols": [{**v, "id": self.protocols.ids[v["id"]], "space": space,
                           "title_key": title_key(v["title"]), "builtin": False,
                           "source_hash": None, "tags": self.drafts[v["id"]].tags}
                          for v in self._new("protocols")],
            "steps": [{**v, "id": self.step_ids[v["id"]], "space": space,
                       "protocol_id": self._protocol(v["protocol_id"])}
                      for v in self._new("steps")],
            "runs": [{**v, "id": self.runs.ids[v["id"]], "space": space,
                      "protocol_id": self._protocol(v["protocol_id"]),
                      "failed_step_id": self.step_ids.get(v["failed_step_id"],
                                                          v["failed_step_id"]),
                      "status": engine.IMPORTED, "nonce": None, "proven": False}
                     for v in self._new("runs")],
            "proofs": [{**v, "run_id": self.runs.ids[v["run_id"]]} for v in self._new("proofs")],
            "attestations": [{**v, "run_id": self.runs.ids[v["run_id"]], "space": space,
                              "protocol_id": self._protocol(v["protocol_id"]), "proven": False}
                             for v in self._new("attestations")],
            "learned_triggers": [{**v, "id": self.learned.ids[v["id"]], "space": space,
                                  "protocol_id": self._protocol(v["protocol_id"]),
                                  "vector": None, "model_id": None}
                                 for v in self._new("learned_triggers")],
        }
        for table in ENTRY_TABLES:
            ids = self.entries[table].ids
            rows[table] = [{**v, "id": ids[v["id"]], "space": space} for v in self._new(table)]
        rows["protocol_versions"] = self._version_rows(rows["protocols"], rows["steps"])
        for table, new in rows.items():
            if new:
                space_rows.insert_rows(repo.conn, table, new)
        for proto in rows["protocols"]:
            repo.create_metrics(proto["id"], space, [s["id"] for s in rows["steps"]
                                                     if s["protocol_id"] == proto["id"]])
        return {table: len(r) for table, r in rows.items() if r}

    def _version_rows(self, protocols: list[dict[str, Any]], steps: list[dict[str, Any]]
                      ) -> list[dict[str, Any]]:
        """The file's new versions (their steps' ids as the space gives them), and version
        1 of each new protocol that came without any."""
        out = [{**v, "protocol_id": self._protocol(v["protocol_id"]), "space": self.space,
                "steps": [{**s, "id": self.step_ids.get(s["id"], s["id"])}
                          for s in v["steps"]]} for v in self._new("protocol_versions")]
        have = {v["protocol_id"] for v in out}
        by_new_id = {self.protocols.ids[v["id"]]: v["id"] for v in self._new("protocols")}
        for proto in protocols:
            if proto["id"] in have:
                continue
            mine = sorted((s for s in steps if s["protocol_id"] == proto["id"]),
                          key=lambda s: s["position"])
            text = markdown.render(self.drafts[by_new_id[proto["id"]]])
            out.append({"protocol_id": proto["id"], "version": 1, "space": self.space,
                        "title": proto["title"], "markdown": text,
                        "content_hash": content_hash(text), "steps": step_entries(mine),
                        "created_at": proto["updated_at"]})
        return out
