"""The protocol commands: ``mint``, ``search`` (with ``--explain``), ``dump``, ``list``,
``update``, ``delete`` and ``triggers``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

from ..domain.errors import KairosError
from ..domain.limits import PAGE_MAX
from ..domain.requests import (
    Delete,
    Dump,
    ForgetTriggers,
    ListProtocols,
    MintMany,
    ProtocolRef,
    Search,
    Update,
)
from ..domain.responses import DeleteResult, ItemResult, MintResult, UpdateResult
from . import output as out
from .base import JsonFlag, UriArg, command, opened, read_file, request
from .output import CliError
from .table import Col, day, short_id, when

MANY_FILES = 3  # from this many files on, mint shows a progress bar
MINT_BATCH = 32  # files minted per pass of the embedding model


#: What mint prints per protocol: its URI (short at a terminal), stored or updated, step
#: count, title.
MINTED = (Col("id", short_id), Col("result"), Col("steps", right=True),
          Col("protocol", flex=True))
STDIN = Path("-")


@command()
def mint(
    path: Annotated[Path, typer.Argument(
        metavar="FILE|DIR", help="A markdown file, a directory of them, or - for stdin.")],
    force: Annotated[bool, typer.Option("--force", help="Replace same titles.")] = False,
    as_json: JsonFlag = False,
) -> None:
    """Mint a markdown file (or every .md file in a directory, or stdin) as protocols.

    Prints one line per protocol: URI, stored or updated, step count, title."""
    if path != STDIN and not path.exists():
        raise CliError(f"{path}: no such file or directory", 2)
    files = sorted(path.glob("**/*.md")) if path.is_dir() else [path]
    results: list[dict[str, Any]] = []  # one per file: its result, or its "error"
    shown: list[list[Any]] = []

    def report(file: Path, result: MintResult | KairosError) -> None:
        name = "<stdin>" if file == STDIN else str(file)
        if isinstance(result, KairosError):
            results.append({"file": name, "error": result.to_dict()})
            where = f":{result.line}" if result.line else ""
            message = result.message.replace("Pass force_update=true", "Pass --force")
            out.error(f"{name}{where}: {message} [{result.code}]")
            return
        results.append({"file": name, **result})
        for item in result["items"]:
            cells = [item["uri"], "updated" if item.get("updated") else "stored",
                     f"{item['step_count']} steps", item["chain_label"]]
            if as_json:
                continue
            if out.is_terminal():
                shown.append(cells)  # one table once all are minted
            else:
                out.row(*cells)  # a line as soon as it is stored

    with opened() as local:

        def batch(chunk: list[Path]) -> None:
            """Mint a batch of files, their vectors from one pass of the model."""
            readable: list[tuple[Path, str]] = []
            for file in chunk:
                try:
                    readable.append((file, read_file(file)))
                except CliError as exc:
                    results.append({"file": str(file), "error": {"message": exc.message}})
                    out.error(exc.message)
            minted = local.service.mint_many(request(
                MintMany, markdown_docs=[doc for _, doc in readable], force_update=force),
                local.caller)
            for (file, _), result in zip(readable, minted, strict=True):
                report(file, result)

        chunks = [files[i:i + MINT_BATCH] for i in range(0, len(files), MINT_BATCH)]
        with out.progress("Minting", len(files), show=len(files) >= MANY_FILES) as update:
            for chunk in chunks:
                batch(chunk)
                update(advance=len(chunk))
    if shown:
        out.table(MINTED, shown)
    failed = sum("error" in result for result in results)
    if as_json:
        out.as_json({"results": results, "minted": len(files) - failed, "failed": failed})
    out.note(f"{len(files) - failed} of {len(files)} file(s) minted.")
    if failed:
        raise typer.Exit(1)


#: What search prints per choice: role, score, URI (short at a terminal), title.
CHOICES = (Col("role"), Col("score", right=True), Col("id", short_id),
           Col("protocol", flex=True))


@command()
def search(
    query: Annotated[str, typer.Argument(metavar="QUERY",
                                         help="What you want done, in a few words.")],
    limit: Annotated[int | None, typer.Option(metavar="N",
                                              help="Maximum number of matches.")] = None,
    explain: Annotated[bool, typer.Option(
        "--explain", help="Show each candidate's evidence and why it is a match or not.")
    ] = False,
    as_json: JsonFlag = False,
) -> None:
    """Find protocols for a request (kairos_search).

    Prints one line per choice: role, score, URI, title; the message goes to stderr."""
    if explain:
        from .explain import show_explain

        with opened() as local:
            explained = local.service.explain_search(
                request(Search, query=query, limit=limit), local.caller)
        if as_json:
            out.as_json(explained)
        else:
            show_explain(explained)
        return
    with opened() as local:
        result = local.service.search(request(Search, query=query, limit=limit),
                                      local.caller, notice=True)
    if as_json:
        out.as_json(result)
        return
    out.note(result["message"])
    if result.get("degraded"):
        out.note(f"note: {result['provider_hint']}")
    out.table(CHOICES, [[c["role"], "" if c["score"] is None else f"{c['score']:.2f}",
                         c["uri"], c["chain_label"] or c["label"]] for c in result["choices"]])


@command()
def dump(
    uri: UriArg,
    protocol: Annotated[bool, typer.Option("--protocol", help="The whole protocol.")] = False,
    version: Annotated[int | None, typer.Option(
        "--version", metavar="N", help="As it was at version N (see `kairos versions`).")
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Show one step, or the whole protocol as markdown (what `mint --force` reads back)."""
    with opened() as local:
        result = local.service.dump(
            request(Dump, uri=local.expand(uri, "step"), protocol=protocol, version=version),
            local.caller)
    if as_json:
        out.as_json(result)
        return
    doc = result["markdown_doc"]
    out.write(doc if doc.endswith("\n") else doc + "\n")


#: What list prints per protocol: URI (short at a terminal), step count, runs,
#: successes, failures, last change, title.
PROTOCOLS = (Col("id", short_id), Col("steps", right=True), Col("runs", right=True),
             Col("ok", right=True), Col("failed", right=True), Col("updated", when, day),
             Col("protocol", flex=True))


@command("list")
def list_(
    title: Annotated[str | None, typer.Option(
        metavar="TEXT", help="Only protocols whose title contains this text.")] = None,
    tag: Annotated[str | None, typer.Option(
        metavar="TAG", help="Only protocols with this tag (see --json).")] = None,
    builtin: Annotated[bool, typer.Option("--builtin",
                                          help="Include the built-in protocols.")] = False,
    limit: Annotated[int, typer.Option(metavar="N", min=1, max=PAGE_MAX,
                                       help="Protocols per page.")] = 50,
    offset: Annotated[int, typer.Option(metavar="N", min=0,
                                        help="Skip this many protocols.")] = 0,
    as_json: JsonFlag = False,
) -> None:
    """List protocols, most recently changed first.

    Prints one line per protocol: URI, step count, runs, successes, failures, last change,
    title; stderr says when more pages follow."""
    with opened() as local:
        page = local.service.list_protocols(request(
            ListProtocols, limit=limit, offset=offset, title=title, tag=tag, builtin=builtin),
            local.caller)
    if as_json:
        out.as_json(page)
        return
    out.table(PROTOCOLS, [[p["uri"], p["step_count"], p["stats"]["runs"],
                           p["stats"]["successes"], p["stats"]["failures"], p["updated_at"],
                           p["chain_label"]] for p in page["items"]])
    out.paged(page, offset, "protocols")


@command()
def update(
    uri: UriArg,
    file: Annotated[Path, typer.Argument(
        metavar="FILE", help="The step's new markdown (- for stdin), optionally starting "
                             "with `## New label`; `kairos dump URI` writes the current one.")],
    as_json: JsonFlag = False,
) -> None:
    """Replace one step from a file (kairos_update); its challenge is re-read from it.

    To change a whole protocol, edit `kairos dump --protocol URI` and mint it with
    --force."""
    text = read_file(file)
    with opened() as local:
        result = local.service.update(
            request(Update, uris=local.expand(uri, "step"), markdown_doc=text), local.caller)
    _report_batch(result, as_json, "updated", (Col("challenge"), Col("step", flex=True)),
                  lambda r: (out.challenge({"type": r["challenge"]["type"], **r["challenge"]}),
                             r["label"]))


def _report_batch(result: UpdateResult | DeleteResult, as_json: bool, done: str,
                  cols: tuple[Col, ...], cells: Callable[[ItemResult], tuple[str, ...]]
                  ) -> None:
    """A batch's results (update, delete): a row per uri (``cols`` after the URI and the
    result), errors on stderr, exit 1 when any failed."""
    if as_json:
        out.as_json(result)
    rows = []
    for r in result["results"]:
        if r["status"] != done:
            out.error(f"{r['uri']}: {r['message']} [{r['error_code']}]")
        else:
            rows.append([r["uri"], done, *cells(r)])
    if rows and not as_json:
        out.table((Col("id", short_id), Col("result"), *cols), rows)
    if result["total_failed"]:
        raise typer.Exit(1)


@command()
def delete(
    uris: Annotated[list[str], typer.Argument(
        metavar="URI", help="Step URIs, or the ids a table shows.")],
    protocol: Annotated[bool, typer.Option(
        "--protocol", help="Delete the whole protocol each URI belongs to.")] = False,
    as_json: JsonFlag = False,
) -> None:
    """Delete steps (the others close up), or whole protocols with --protocol.

    Deleting the only step of a protocol deletes the protocol."""
    with opened() as local:
        result = local.service.delete(request(
            Delete, uris=[local.expand(u, "step") for u in uris], protocol=protocol),
            local.caller)
    _report_batch(result, as_json, "deleted", (Col("removed", flex=True),),
                  lambda r: (f"{len(r['removed'])} step(s) removed",))


@command()
def triggers(
    uri: Annotated[str, typer.Argument(metavar="URI", help="A step URI of the protocol.")],
    forget: Annotated[list[str] | None, typer.Option(
        "--forget", metavar="ID", help="Remove this learned trigger (repeatable).")] = None,
    forget_all: Annotated[bool, typer.Option(
        "--forget-all", help="Remove every learned trigger of the protocol.")] = False,
    as_json: JsonFlag = False,
) -> None:
    """A protocol's author triggers and learned triggers (queries that led to proven
    successful runs); --forget removes learned ones."""
    with opened() as local:
        uri = local.expand(uri, "step")
        if forget or forget_all:
            result = local.service.forget_triggers(request(
                ForgetTriggers, uri=uri, trigger_ids=None if forget_all else forget),
                local.caller)
        else:
            result = local.service.triggers(request(ProtocolRef, uri=uri), local.caller)
    if as_json:
        out.as_json(result)
        return
    if result.get("removed") is not None:
        out.note(f"removed {result['removed']} learned trigger(s)")
    out.note(f"{result['chain_label']}: {len(result['triggers'])} author trigger(s), "
             f"{len(result['learned'])} of at most {result['learned_limit']} learned")
    out.table([Col("kind"), Col("id", short_id), Col("runs", right=True),
               Col("last used", when, day), Col("trigger", flex=True)],
              [["author", "", "", "", text] for text in result["triggers"]]
              + [["learned", t["id"], t["runs"], t["last_seen"], t["text"]]
                 for t in result["learned"]])
