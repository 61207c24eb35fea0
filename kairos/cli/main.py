"""``kairos``: thin commands over the service (parse, call, render).

Imports are lazy: ``kairos mcp`` must answer an agent host's handshake within moments of
starting, so nothing heavy (database layer, web stack, embedding model) is imported
before a command needs it.

The surfaces are put together in ``kairos.server`` (the composition root): ``serve`` runs
the REST app with the MCP server inside it, ``mcp`` runs the MCP server on stdio.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer
from rich.console import Console

from ..domain.errors import KairosError

if TYPE_CHECKING:
    from ..config import Settings
    from ..service import Caller, Kairos

app = typer.Typer(help="KAIROS: a memory server for AI agents.", no_args_is_help=True,
                  add_completion=False)
console = Console()
err = Console(stderr=True)

SAMPLE = """# Sample: create a project skeleton

A three-step protocol that shows the execution loop.

## Create the source directory

PROOF OF WORK: timeout 10s mkdir -p src

## Write the configuration

PROOF OF WORK: echo config > src/config.json

## Review

Review what the two steps created: the src directory and src/config.json.

PROOF OF WORK: comment min_length=20
"""
MANY_FILES = 3  # from this many files on, mint shows a progress bar
MINT_BATCH = 32  # files minted per pass of the embedding model
SECRET_SETTINGS = {"openai_api_key", "api_tokens"}


def _settings(**overrides: Any) -> Settings:
    from ..config import load_settings

    return load_settings(**overrides)


def _service(settings: Settings | None = None, *, background: bool = False) -> Kairos:
    """The service. One-shot commands run it without the background backfill: a process
    that exits while that thread is inside the embedding model is aborted by it."""
    from ..service import Kairos

    return Kairos(settings or _settings(), background=background)


def _wait_for_model(k: Kairos, timeout: float) -> None:
    """Give the embedding model up to ``timeout`` seconds to load (text search otherwise)."""
    wait = getattr(k.embedder, "wait", None)
    if callable(wait) and timeout > 0:
        with err.status("Loading the embedding model..."):
            wait(timeout)


def _caller(k: Kairos, space: str | None = None) -> Caller:
    from ..service import Caller

    return Caller(space=space or str(k.settings.space), id="local")


@contextmanager
def _using(settings: Settings | None = None) -> Iterator[Kairos]:
    """The service for one command: a KairosError is printed as its JSON body (exit 1),
    and the service is always closed."""
    k = _service(settings)
    try:
        yield k
    except KairosError as exc:
        _fail(exc)
    finally:
        k.close()


def _print(data: Any) -> None:
    console.print_json(json.dumps(data, ensure_ascii=False))


def _fail(exc: KairosError) -> NoReturn:
    err.print_json(json.dumps(exc.to_dict(), ensure_ascii=False))
    raise typer.Exit(1)


# --- servers -----------------------------------------------------------------------------

@app.command()
def serve(
    host: Annotated[str | None, typer.Option(
        help="Address to listen on [default: KAIROS_HOST or 127.0.0.1].")] = None,
    port: Annotated[int | None, typer.Option(
        help="Port to listen on [default: KAIROS_PORT or 8765].")] = None,
    stateless: Annotated[bool, typer.Option(
        "--stateless", help="Serve MCP without transport sessions (replicas behind a load "
                            "balancer without sticky sessions).")] = False,
    log_level: Annotated[str, typer.Option(help="uvicorn log level.")] = "info",
) -> None:
    """Serve MCP (streamable HTTP at /mcp) and REST (/api/v1) in one process."""


    from ..server import ServeError, serve_http

    settings = _settings(host=host, port=port)
    try:
        serve_http(settings, lambda: _service(settings, background=True), stateless=stateless,
                   log_level=log_level, say=err.print)
    except ServeError as exc:
        err.print(f"[red]{exc}[/red]")
        raise typer.Exit(2) from None


@app.command("mcp")
def mcp_stdio(
    server: Annotated[str | None, typer.Option(
        "--server", help="Forward every call to a `kairos serve` at this URL "
                         "(e.g. http://host:8765/mcp) instead of opening a local store.")] = None,
) -> None:
    """Serve MCP on stdin/stdout for one agent host (stdout carries only MCP messages).

    One session id is made at start (override: KAIROS_SESSION_ID or CHL_SESSION_ID). With
    --server it is sent as X-CHL-Session on every call, with Authorization: Bearer
    $KAIROS_TOKEN when that is set."""
    from ..server import serve_stdio

    serve_stdio(_settings(), server)


# --- protocols ---------------------------------------------------------------------------

@app.command()
def demo() -> None:
    """Mint a sample protocol and run it to completion, showing every response."""
    with _using() as k:
        minted = k.mint(SAMPLE, force_update=True)
        steps = [s["uri"] for s in minted["items"][0]["steps"]]
        response = k.begin(steps[0])
        _print(response)
        answers = [{"shell": {"exit_code": 0, "stdout": "", "stderr": ""}},
                   {"shell": {"exit_code": 0, "stdout": "", "stderr": ""}}]
        for uri, body in zip(steps[1:], answers, strict=True):
            ch = response["challenge"]
            response = k.next(uri, {"type": ch["type"], "nonce": ch["nonce"],
                                    "proof_hash": ch["proof_hash"], **body})
            _print(response)
        ch = response["challenge"]
        done = k.attest(steps[-1], "success", "Sample run finished.", solution={
            "type": "comment", "nonce": ch["nonce"], "proof_hash": ch["proof_hash"],
            "comment": {"text": "Reviewed what the steps created: the src directory and "
                                "src/config.json both exist."}})
        _print(done)
        if "run_id" not in done:  # the answer was refused: the response says why
            raise typer.Exit(1)
        _print(k.verify_run(done["run_id"]))


def _answer(challenge: dict[str, Any], step: dict[str, Any], assume_yes: bool
            ) -> dict[str, Any]:
    """A solution for the challenge shown: asked at the terminal, or (``--yes``) the
    answer of a step that went well. KAIROS never runs the command itself."""
    kind = challenge["type"]
    base = {"type": kind, "nonce": challenge["nonce"], "proof_hash": challenge["proof_hash"]}
    if kind == "shell":
        code = 0 if assume_yes else typer.prompt(
            f"Run `{challenge['shell']['cmd']}` yourself; its exit code", type=int, default=0)
        return {**base, "shell": {"exit_code": code, "stdout": "", "stderr": ""}}
    if kind == "mcp":
        ok = assume_yes or typer.confirm(
            f"Did the MCP tool {challenge['mcp']['tool_name']} succeed?", default=True)
        return {**base, "mcp": {"tool_name": challenge["mcp"]["tool_name"], "success": ok,
                                "arguments": {}, "result": None}}
    if kind == "user_input":
        answer = "yes" if assume_yes else typer.prompt(challenge["user_input"]["prompt"])
        return {**base, "user_input": {"confirmation": answer}}
    first = " ".join(step["content"].split())[:300] or "the step"
    text = (f"Done as described: {first}" if assume_yes
            else typer.prompt(challenge["description"]))
    return {**base, "comment": {"text": text}}


@app.command()
def run(
    uri: Annotated[str, typer.Argument(help="Step 1 of a protocol (kairos://mem/<uuid>).")],
    yes: Annotated[bool, typer.Option("--yes", help="Answer every challenge as a step "
                                                    "that went well (no prompts).")] = False,
) -> None:
    """Walk a protocol in the terminal: each step, its challenge, your answer."""
    with _using() as k:
        response = k.begin(uri)
        steps = [s["uri"] for s in k.dump(uri, protocol=True)["steps"]]
        while True:
            step, challenge = response["current_step"], response["challenge"]
            console.rule(step["uri"])
            console.print(step["content"], markup=False, highlight=False)
            console.print(f"[bold]{challenge['description']}[/bold]")
            if response.get("error_code"):
                console.print(f"[red]{response['error_code']}: {response['message']}[/red]")
            solution = _answer(challenge, step, yes)
            index = steps.index(step["uri"])
            if index == len(steps) - 1:
                break
            response = k.next(steps[index + 1], solution)
            if response.get("must_obey") is False:
                console.print(f"[red]{response['message']}[/red] {response['next_action']}")
                raise typer.Exit(1)
        done = k.attest(step["uri"], "success", "Run from the command line.",
                        solution=solution)
        if "run_id" not in done:
            _print(done)
            raise typer.Exit(1)
        console.print(f"Run {done['run_id']}: {done['proofs']} proofs, chain "
                      f"{'valid' if k.verify_run(done['run_id'])['valid'] else 'BROKEN'}.")


@app.command()
def mint(
    path: Annotated[Path, typer.Argument(help="A markdown file, or a directory of them.")],
    force: Annotated[bool, typer.Option("--force", help="Replace same titles.")] = False,
) -> None:
    """Mint a markdown file (or every .md file in a directory) as protocols."""
    if not path.exists():
        err.print(f"[red]{path}: no such file or directory[/red]")
        raise typer.Exit(2)
    files = sorted(path.glob("**/*.md")) if path.is_dir() else [path]
    k = _service()
    failed = 0

    def report(file: Path, result: dict[str, Any] | KairosError) -> None:
        nonlocal failed
        if isinstance(result, KairosError):
            failed += 1
            where = f":{result.line}" if result.line else ""
            err.print(f"[red]{file}{where}[/red]: {result.message}", highlight=False)
            return
        for item in result["items"]:
            state = "updated" if item.get("updated") else "stored"
            console.print(f"{item['uri']}  {item['chain_label']}  ({item['step_count']} "
                          f"steps, {state})", highlight=False)

    def batch(chunk: list[Path]) -> None:
        """Mint a batch of files, their vectors from one pass of the model."""
        nonlocal failed
        readable: list[tuple[Path, str]] = []
        for file in chunk:
            try:
                readable.append((file, file.read_text("utf-8")))
            except (OSError, UnicodeDecodeError) as exc:
                failed += 1
                err.print(f"[red]{file}[/red]: cannot read ({exc})", highlight=False)
        results = k.mint_many([doc for _, doc in readable], _caller(k), force_update=force)
        for (file, _), result in zip(readable, results, strict=True):
            report(file, result)

    chunks = [files[i:i + MINT_BATCH] for i in range(0, len(files), MINT_BATCH)]
    try:
        if len(files) >= MANY_FILES:
            from rich.progress import Progress

            with Progress(console=err, transient=True) as progress:
                task = progress.add_task("Minting", total=len(files))
                for chunk in chunks:
                    batch(chunk)
                    progress.advance(task, len(chunk))
        else:
            for chunk in chunks:
                batch(chunk)
    finally:
        k.close()
    err.print(f"{len(files) - failed} of {len(files)} file(s) minted.")
    if failed:
        raise typer.Exit(1)


@app.command()
def search(
    query: Annotated[str, typer.Argument(help="What you want done, in a few words.")],
    limit: Annotated[int | None, typer.Option(help="Maximum number of matches.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the raw response.")] = False,
    model_timeout: Annotated[float, typer.Option(
        help="Seconds to wait for the embedding model (0: search text only if not loaded).")
    ] = 30.0,
) -> None:
    """Find protocols for a request (kairos_search)."""
    from rich.table import Table

    with _using() as k:
        _wait_for_model(k, model_timeout)
        result = k.search(query, _caller(k), limit=limit)
    if as_json:
        _print(result)
        return
    console.print(result["message"], highlight=False)
    table = Table("role", "score", "protocol")
    table.add_column("uri", min_width=49, no_wrap=True)
    for choice in result["choices"]:
        score = "" if choice["score"] is None else f"{choice['score']:.2f}"
        table.add_row(choice["role"], score, choice["chain_label"] or choice["label"],
                      choice["uri"])
    console.print(table)


@app.command()
def dump(
    uri: Annotated[str, typer.Argument(help="A step URI, kairos://mem/<uuid>.")],
    protocol: Annotated[bool, typer.Option("--protocol", help="The whole protocol.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the raw response.")] = False,
) -> None:
    """Show one step, or the whole protocol as markdown."""
    with _using() as k:
        result = k.dump(uri, _caller(k), protocol=protocol)
    if as_json:
        _print(result)
    else:
        console.print(result["markdown_doc"], markup=False, highlight=False)


# --- runs --------------------------------------------------------------------------------

@app.command()
def verify(run_id: Annotated[str, typer.Argument(help="The run id.")]) -> None:
    """Recompute a run's proof chain and report the first broken link."""
    with _using() as k:
        result = k.verify_run(run_id, _caller(k))
    _print(result)
    if not result["valid"]:
        raise typer.Exit(1)


@app.command()
def runs(limit: Annotated[int, typer.Option(help="How many runs.")] = 20) -> None:
    """Recent runs with their outcome."""
    from rich.table import Column, Table

    k = _service()
    try:
        items = k.run_history(_caller(k), limit)
    finally:
        k.close()
    table = Table(Column("run", min_width=36, no_wrap=True), "protocol", "status", "outcome",
                  "step", "updated")
    for r in items:
        table.add_row(r["run_id"], r["chain_label"] or "?", r["status"], r["outcome"] or "",
                      str(r["step"]), r["updated_at"])
    console.print(table)


# --- data --------------------------------------------------------------------------------

@app.command()
def export(
    out: Annotated[Path | None, typer.Option("--out", help="File to write [default: "
                                                           "stdout].")] = None,
    space: Annotated[str | None, typer.Option(help="Space to export [default: "
                                                   "KAIROS_SPACE].")] = None,
) -> None:
    """Write every record of a space to one JSON Lines file."""
    from ..service.transfer import export_records

    k = _service()
    counts: dict[str, int] = {}
    try:
        stream = out.open("w", encoding="utf-8") if out else sys.stdout
        try:
            for record in export_records(k, _caller(k, space)):
                if "table" in record:
                    counts[record["table"]] = counts.get(record["table"], 0) + 1
                stream.write(json.dumps(record, ensure_ascii=False, separators=(",", ":")))
                stream.write("\n")
        finally:
            if out:
                stream.close()
    finally:
        k.close()
    summary = ", ".join(f"{n} {name}" for name, n in counts.items()) or "no records"
    err.print(f"Exported {summary}.", highlight=False)


def _records(path: Path) -> Iterator[Any]:
    with path.open(encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                yield json.loads(line)
            except json.JSONDecodeError as exc:
                from ..domain.errors import ValidationError

                raise ValidationError("file", "one JSON object per line", line=n,
                                      message=f"{path}:{n}: not JSON ({exc.msg}).") from None


@app.command("import")
def import_(
    file: Annotated[Path, typer.Argument(help="A file written by `kairos export`.")],
    space: Annotated[str | None, typer.Option(help="Space to import into [default: "
                                                   "KAIROS_SPACE].")] = None,
) -> None:
    """Read a JSON Lines export into a space (all or nothing; existing records are kept)."""
    from ..service.transfer import import_records

    if not file.is_file():
        err.print(f"[red]{file}: no such file[/red]")
        raise typer.Exit(2)
    with _using() as k:
        result = import_records(k, _records(file), _caller(k, space))
    _print(result)


@app.command()
def reindex(
    model_timeout: Annotated[float, typer.Option(
        help="Seconds to wait for the embedding model to load.")] = 300.0,
) -> None:
    """Re-embed every searchable record with the current embedding model."""
    from rich.progress import Progress

    k = _service()
    try:
        _wait_for_model(k, model_timeout)
        with Progress(console=err, transient=True) as progress:
            task = progress.add_task("Embedding", total=None)

            def report(done: int, total: int) -> None:
                progress.update(task, completed=done, total=total)

            result = k.reindex(progress=report)
    finally:
        k.close()
    _print(result)


@app.command()
def doctor(
    model_timeout: Annotated[float, typer.Option(
        help="Seconds to wait for the embedding model to load (0: report its state now).")
    ] = 60.0,
) -> None:
    """Check the configuration (with each value's source), data, model and index."""
    from rich.table import Table

    settings = _settings()
    table = Table("setting", "value", "source", title="Configuration")
    for key, value in settings.values.items():
        shown = ("***" if value else "") if key in SECRET_SETTINGS else str(value)
        table.add_row(key, shown, settings.sources.get(key, "default"))
    console.print(table)
    home = settings.home_path
    console.print(f"data directory: {home} "
                  f"({'exists' if home.is_dir() else 'will be created'})", highlight=False)
    problems = []
    from ..server import ServeError, tokens_of

    try:
        tokens = tokens_of(settings)
        spaces = ", ".join(sorted(set(tokens.values())))
        console.print(f"API tokens: {len(tokens)}" + (f" (spaces: {spaces})" if tokens else
                      " (serve listens on 127.0.0.1 only)"), highlight=False)
    except ServeError as exc:
        problems.append(str(exc))
    try:
        k = _service(settings)
    except Exception as exc:  # doctor reports what is wrong instead of failing
        console.print(f"[red]database: cannot open ({type(exc).__name__}: {exc})[/red]")
        raise typer.Exit(1) from None
    try:
        _wait_for_model(k, model_timeout)
        report = k.health()
    except Exception as exc:
        report = {"status": "error", "error": f"{type(exc).__name__}: {exc}"}
    finally:
        k.close()
    for part in ("store", "embedder", "index"):
        if part in report:
            details = ", ".join(f"{a}={b}" for a, b in report[part].items())
            console.print(f"{part}: {details}", highlight=False)
    if report.get("status") != "ok":
        problems.append(f"health: {report.get('status')} {report.get('error', '')}".strip())
    for problem in problems:
        console.print(f"[red]problem: {problem}[/red]", highlight=False)
    if problems:
        raise typer.Exit(1)
    console.print("[green]status: ok[/green]")


if __name__ == "__main__":  # pragma: no cover
    app()
