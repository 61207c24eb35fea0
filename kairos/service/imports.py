"""``kairos import``: an export read back into a space, as untrusted input.

The file may come from anywhere, so nothing in it is taken on trust:

* every line is JSON within the limits of a request (size, nesting, text a store can keep);
  every row is checked column by column (``service.import_rows``); a protocol is minted
  again from its rows — title, intro, step labels and contents through the same parser and
  limits as ``kairos_mint`` — and its stored challenges, tags and title key must be what
  that mint gives; experiences and manuals pass the checks of ``write_entry``;
* a record whose id the store already holds in another space (or among the built-ins)
  gets a new id, the same one on every import into that space (a uuid5 of the space and
  the old id), and every reference to it in the file follows; one the space itself
  already holds is kept as it is (importing a file twice changes nothing);
* runs are history: each run's proof chain is verified as ``kairos verify`` does, and a
  chain that does not verify refuses the file; a run that verifies is stored with status
  ``imported`` and ``proven: false`` (it was not answered here, and a chain can be
  recomputed by anyone), so it never counts in a protocol's outcomes, never takes an
  answer and cannot be attested; nonces and metrics are not read (an imported protocol's
  counts start at zero);
* the file is imported whole or not at all, and a refusal names the line and the field.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Callable, Container, Iterable, Sequence
from dataclasses import replace
from itertools import accumulate
from typing import TYPE_CHECKING, Any

from ..domain import limits, markdown
from ..domain.bundle_format import content_hash
from ..domain.caller import Caller
from ..domain.errors import CONFLICT, ConflictError, KairosError, ValidationError
from ..domain.limits import Limits
from ..domain.proof import verify_chain
from ..domain.responses import Imported
from ..domain.texts import GENESIS_HASH
from ..store.faults import Refused
from . import import_rows as rows_
from .entries import validated_entry
from .import_plan import ENTRY_TABLES, Checked, Plan
from .import_rows import Row, refused
from .transfer import FORMAT, NOT_EXPORTED, VERSION, tables

if TYPE_CHECKING:
    from .app import Kairos

__all__ = ["import_lines"]

#: A checked row: the row as read, with the values a write stores.
_Checked = tuple[Row, dict[str, Any]]


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _read(lines: Iterable[bytes | str], lim: Limits
          ) -> tuple[dict[str, Any], dict[str, list[Row]], Counter[str]]:
    """The header and the rows of a JSON Lines export; a line that is not a JSON object
    within a request's limits (``lim``) refuses the file."""
    longest = 2 * lim.body_bytes  # a row holds at most what one request wrote
    known = {table.name: table for table in tables()}
    header: dict[str, Any] | None = None
    found: dict[str, list[Row]] = defaultdict(list)
    ignored: Counter[str] = Counter()
    for n, raw in enumerate(lines, 1):
        if len(raw) > longest:
            raise refused(n, "file", f"lines of at most {longest} bytes",
                          f"the line is {len(raw)} bytes; the limit is {longest}")
        try:
            text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
        except UnicodeDecodeError as exc:
            raise refused(n, "file", "UTF-8 text", f"not UTF-8 (byte {exc.start})") from None
        text = text.removeprefix("\ufeff") if n == 1 else text
        if not text.strip():
            continue
        try:
            limits.check_json_text(text, "file", lim.json_depth)
            record = json.loads(text, parse_constant=_no_constant)
            limits.check_value(record, lim.json_depth)
        except ValidationError as exc:
            raise refused(n, exc.field or "file", exc.expected or "valid JSON",
                          exc.message.rstrip(".")) from None
        except (ValueError, RecursionError) as exc:
            reason = getattr(exc, "msg", None) or str(exc).split("\n")[0]
            raise refused(n, "file", "one JSON object per line",
                          f"not JSON ({reason})") from None
        if header is None:
            header = _header(n, record)
            continue
        name = record.get("table") if isinstance(record, dict) else None
        values = record.get("row") if isinstance(record, dict) else None
        if name in NOT_EXPORTED:
            ignored[name] += 1
            continue
        if name not in known or not isinstance(values, dict):
            raise refused(n, "table", '{"table": <an exported table>, "row": {...}}',
                          f"expected {{\"table\": one of {', '.join(known)}, \"row\": "
                          "{...}}")
        extra = sorted(set(values) - set(known[name].c.keys()))
        if extra:
            raise refused(n, f"{name}.{extra[0]}", f"a column of {name}",
                          f"{name} has no column {extra[0]!r}")
        found[name].append(Row(name, n, values, lim))
    if header is None:
        raise refused(1, "header", f'a first line {{"format": "{FORMAT}", ...}}',
                      "the file is empty")
    return header, found, ignored


def _header(line: int, record: Any) -> dict[str, Any]:
    if not isinstance(record, dict) or record.get("format") != FORMAT:
        raise ValidationError("header", f'a first record {{"format": "{FORMAT}", ...}}',
                              line=line, message="Not a KAIROS export: the first record "
                                                 "must be its header.")
    if record.get("version") != VERSION:
        raise ValidationError("version", f"export version {VERSION}", line=line,
                              message=f"Unsupported export version {record.get('version')!r}.")
    return record


def _unique(checked: Iterable[_Checked], key: Callable[[dict[str, Any]], Any],
            what: str) -> dict[Any, _Checked]:
    seen: dict[Any, _Checked] = {}
    for row, values in checked:
        k = key(values)
        if k in seen:
            raise refused(row.line, f"{row.table}.{what}", f"a {what} given once",
                          f"{row.table} {what} {k!r} is given again (first on line "
                          f"{seen[k][0].line})")
        seen[k] = (row, values)
    return seen


def _owned(checked: Iterable[_Checked], column: str, owners: Container[str], owner: str
           ) -> dict[str, list[_Checked]]:
    """The rows by the id in ``column``: each the id of an ``owner`` in this file."""
    out: dict[str, list[_Checked]] = defaultdict(list)
    for row, values in checked:
        if values[column] not in owners:
            raise row.refuse(column, f"the id of a {owner} in this file", values[column])
        out[values[column]].append((row, values))
    return out


def _numbered(checked: Iterable[_Checked], column: str, rule: str) -> list[_Checked]:
    """The rows in the order of ``column``, which must number them 0, 1, 2 ... (``rule``
    says so in a refusal)."""
    ordered = sorted(checked, key=lambda c: c[1][column])
    for n, (row, values) in enumerate(ordered):
        if values[column] != n:
            raise row.refuse(column, f"{n} ({rule})", values[column])
    return ordered


def _check(found: dict[str, list[Row]], categories: set[str],
           parse: Callable[[str], list[markdown.ProtocolDraft]]
           ) -> tuple[Checked, dict[str, markdown.ProtocolDraft]]:
    """Every row checked; the drafts of the protocols minted again from their rows."""
    checks = {"protocols": rows_.check_protocol, "steps": rows_.check_step,
              "runs": rows_.check_run, "proofs": rows_.check_proof,
              "attestations": rows_.check_attestation, "categories": rows_.check_category,
              "learned_triggers": rows_.check_learned_trigger,
              "protocol_versions": rows_.check_version}
    checked: Checked = {name: [(row, check(row)) for row in found.get(name, [])]
                        for name, check in checks.items()}
    codes = categories | {v["code"] for _, v in checked["categories"]}
    _unique(checked["categories"], lambda v: v["code"], "code")
    for table, kind in ENTRY_TABLES.items():
        checked[table] = [(row, _entry(row, kind, codes)) for row in found.get(table, [])]
        _unique(checked[table], lambda v: v["id"], "id")
    protocols = _unique(checked["protocols"], lambda v: v["id"], "id")
    _unique(checked["steps"], lambda v: v["id"], "id")
    by_protocol = _owned(checked["steps"], "protocol_id", protocols, "protocol")
    drafts = {}
    for pid, (row, proto) in protocols.items():
        by_protocol[pid] = steps = _numbered(by_protocol[pid], "position", "positions of a "
                                             "protocol's steps run 0, 1, 2, ... without gaps")
        if not steps:
            raise row.refuse("id", "a protocol with at least one step in this file", pid)
        drafts[pid] = replace(_mint_again(row, proto, steps, parse),
                              triggers=tuple(proto["triggers"]))
    _versions(checked, protocols, by_protocol, drafts, parse)
    learned = _unique(checked["learned_triggers"], lambda v: v["id"], "id")
    _owned(learned.values(), "protocol_id", protocols, "protocol")
    _unique(checked["learned_triggers"], lambda v: (v["protocol_id"], v["text_key"]), "text")
    return checked, drafts


def _versions(checked: Checked, protocols: dict[str, _Checked],
              steps_of: dict[str, list[_Checked]],
              drafts: dict[str, markdown.ProtocolDraft],
              parse: Callable[[str], list[markdown.ProtocolDraft]]) -> None:
    """Each version's text mints as its steps say; a protocol of the file that has versions
    names one of them as current, and that one is its text and its steps."""
    versions = _unique(checked["protocol_versions"],
                       lambda v: (v["protocol_id"], v["version"]), "version")
    for row, v in versions.values():
        try:
            parsed = parse(v["markdown"])
        except KairosError as exc:
            raise row.refuse("markdown", "markdown that mints", exc.message) from None
        got = [{"label": s.label, "content": s.content, "challenge": s.challenge.to_dict()}
               for s in parsed[0].steps] if len(parsed) == 1 else None
        if got is None or parsed[0].title != v["title"]:
            raise row.refuse("markdown", f"one protocol titled {v['title']!r}",
                             v["markdown"][:80])
        if got != [{k: s[k] for k in ("label", "content", "challenge")} for s in v["steps"]]:
            raise row.refuse("steps", "the steps its markdown mints", v["steps"])
    for pid, (row, proto) in protocols.items():
        mine = {n: v for (p, n), (_, v) in versions.items() if p == pid}
        if not mine and proto["version"] == 1:
            continue  # an export made before versions: its text becomes version 1
        current = mine.get(proto["version"])
        ids = [s["id"] for _, s in steps_of[pid]]
        if current is None or current["content_hash"] != content_hash(
                markdown.render(drafts[pid])) or [s["id"] for s in current["steps"]] != ids:
            raise row.refuse("version", "a version of this protocol in the file whose text "
                             "and steps are the protocol's", proto["version"])


def _entry(row: Row, kind: str, codes: set[str]) -> dict[str, Any]:
    fields = {k: v for k, v in row.values.items()
              if k not in ("id", "space", "created_at", "updated_at")}
    try:
        values = validated_entry(kind, fields, codes)
    except ValidationError as exc:
        raise refused(row.line, f"{row.table}.{exc.field}", exc.expected or "",
                      f"{row.table}.{exc.field}: {exc.message.rstrip('.')}") from None
    return {"id": row.id(), **values, "created_at": row.stamp("created_at"),
            "updated_at": row.stamp("updated_at")}


def _mint_again(row: Row, proto: dict[str, Any], steps: Sequence[_Checked],
                parse: Callable[[str], list[markdown.ProtocolDraft]]
                ) -> markdown.ProtocolDraft:
    """The protocol minted from its rows, as ``markdown.render`` writes it; a row that would
    not mint back to itself is named with its line."""
    parts: list[tuple[str, Row, str]] = [(f"# {proto['title']}", row, "title")]
    if proto["intro"]:
        parts.append((proto["intro"], row, "intro"))
    for step_row, step in steps:
        parts.append((f"## {step['label']}", step_row, "label"))
        if step["content"]:
            parts.append((step["content"], step_row, "content"))
    # The line each part starts on: parts are joined by a blank line.
    starts = list(accumulate((text.count("\n") + 2 for text, _, _ in parts[:-1]), initial=1))

    def part_at(line: int | None) -> tuple[Row, str]:
        i = max((k for k, s in enumerate(starts) if s <= (line or 1)), default=0)
        return parts[i][1], parts[i][2]

    try:
        parsed = parse("\n\n".join(text for text, _, _ in parts) + "\n")
    except KairosError as exc:
        where, column = part_at(exc.line)
        raise refused(where.line, f"{where.table}.{column}", exc.expected or "markdown that "
                      "mints", f"{where.table}.{column} does not mint: {exc.message}") from None
    if len(parsed) != 1:
        where, column = part_at(parsed[1].line)
        raise where.refuse(column, "text without a '# ' heading (it would start another "
                           "protocol)", where.values.get(column))
    draft = parsed[0]
    if (draft.title, draft.intro) != (proto["title"], proto["intro"]):
        column = "title" if draft.title != proto["title"] else "intro"
        raise row.refuse(column, f"text that mints as itself ({draft.title!r} / "
                         f"{draft.intro[:40]!r})", proto[column])
    for i, (step_row, step) in enumerate(steps):
        got = draft.steps[i] if i < len(draft.steps) else None
        if got is None or (got.label, got.content) != (step["label"], step["content"]):
            column = "label" if got is not None and got.label != step["label"] else "content"
            raise step_row.refuse(column, "text that mints as itself (no '## ' heading "
                                  "outside code)", step[column])
        if got.challenge.to_dict() != step["challenge"]:
            raise step_row.refuse("challenge", f"the challenge its content declares, "
                                  f"{got.challenge.to_dict()}", step["challenge"])
    if len(draft.steps) != len(steps):
        step_row, step = steps[-1]
        raise step_row.refuse("content", "text without a '## ' heading outside code (it "
                              "would start another step)", step["content"])
    return draft


def _chains(checked: Checked) -> None:
    """Each run's proofs: of a run in this file, numbered 0, 1, 2 ..., and a chain that
    verifies as ``kairos verify`` checks it, up to the run's head."""
    runs = _unique(checked["runs"], lambda v: v["id"], "id")
    _unique(checked["proofs"], lambda v: (v["run_id"], v["seq"]), "seq")
    _unique(checked["attestations"],
            lambda v: (v["run_id"], v["step_uri"], v["outcome"], v["created_at"]), "created_at")
    by_run = _owned(checked["proofs"], "run_id", runs, "run")
    for row, att in checked["attestations"]:
        owner = runs.get(att["run_id"])
        if owner is None:
            raise row.refuse("run_id", "the id of a run in this file", att["run_id"])
        if att["protocol_id"] != owner[1]["protocol_id"]:
            raise row.refuse("protocol_id", f"its run's protocol {owner[1]['protocol_id']}",
                             att["protocol_id"])
    for run_id, (run_row, run) in runs.items():
        proofs = _numbered(by_run[run_id], "seq", "a run's proofs are numbered 0, 1, 2 ...")
        head, _, broken = verify_chain((dict(p["record"], proof_hash=p["proof_hash"])
                                        for _, p in proofs), run["chain_rule"])
        if broken is not None:
            row = proofs[broken.index][0]
            raise row.refuse("proof_hash", f"a proof chain that verifies ({broken.reason})",
                             proofs[broken.index][1]["proof_hash"])
        if head != run["head"]:
            raise run_row.refuse("head", f"the hash of its last proof ({head})"
                                 if proofs else f"the genesis hash {GENESIS_HASH}", run["head"])


def import_lines(kairos: Kairos, lines: Iterable[bytes | str], caller: Caller) -> Imported:
    """Import the JSON Lines export ``lines`` into ``caller.space``: all of it, or nothing
    and a ValidationError naming the line and the field."""
    space = caller.space
    header, found, ignored = _read(lines, kairos.limits)
    with kairos.store.read() as repo:
        categories = {r["code"] for r in repo.categories(space)}
    checked, drafts = _check(found, categories, kairos.protocols.parser.parse)
    _chains(checked)
    with kairos.store.read() as repo:
        plan = Plan(repo, checked, drafts, space)
    specs = plan.specs()
    engine_ = kairos.search_engine
    vectors = engine_.indexing.embed_each(specs) if specs else []
    try:
        with kairos.store.write() as repo:
            inserted = plan.write(repo)
            for spec, vector in zip(specs, vectors, strict=True):
                engine_.indexing.index(repo, [spec], vector)
    except Refused:
        raise ConflictError(CONFLICT, f"Space '{space}' changed while importing (another "
                            "writer stored a record this file holds); nothing was imported. "
                            "Import again.", field="file") from None
    if inserted.get("learned_triggers"):
        engine_.learning.embed_pending()  # their vectors, by this store's model
    return {"status": "imported", "space": space, "from_space": header.get("space"),
            "inserted": inserted, "skipped": plan.skipped, "new_ids": plan.new_ids,
            "ignored": dict(ignored), "indexed": len(specs),
            "runs": "imported runs keep their proofs and are marked status imported, "
                    "proven false: they were not answered here"}

