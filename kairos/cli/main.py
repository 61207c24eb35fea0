"""``kairos``: thin commands over the service (parse, call, render).

Imports are lazy: ``kairos mcp`` must answer an agent host's handshake within moments of
starting, so nothing heavy (database layer, web stack, embedding model) is imported
before a command needs it.

The surfaces are put together in ``kairos.server`` (the composition root): ``serve`` runs
the REST app with the MCP server inside it, ``mcp`` runs the MCP server on stdio.

Every command follows the same rules (``output``): data on stdout, unwrapped when stdout
is not a terminal; ``--json`` wherever data is printed; an error is one line on stderr,
``error: …``, with exit code 2 for usage and configuration errors and 1 for failures.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from typer._click import exceptions as click_errors
from typer._click.formatting import join_options
from typer.core import TyperCommand, TyperGroup

from .. import version
from ..config import ConfigError
from ..domain.errors import KairosError, ValidationError
from . import output as out
from . import prompts
from .output import CliError
from .table import Col, day, short_id, when

if TYPE_CHECKING:
    from typer._click import Context, HelpFormatter, Parameter

    from ..config import Settings
    from ..service import Caller, Kairos

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
LOG_LEVELS = ("critical", "error", "warning", "info", "debug", "trace")


# --- help and errors ---------------------------------------------------------------------

def _param_name(param: Parameter) -> str:
    return str(param.metavar or (param.name or "").upper())


class Command(TyperCommand):
    """Plain help: ``URI`` rather than ``{uri}``, ``--port PORT`` rather than
    ``--port <int>``, flags without a placeholder, defaults written as ``[default: …]``."""

    def invoke(self, ctx: Context) -> Any:
        _state["params"] = {p.name for p in self.params if p.name}
        return super().invoke(ctx)

    def collect_usage_pieces(self, ctx: Context) -> list[str]:
        pieces = [self.options_metavar] if self.options_metavar else []
        for param in self.get_params(ctx):
            if param.param_type_name == "argument":
                name = _param_name(param) + ("..." if param.nargs != 1 else "")
                pieces.append(name if param.required else f"[{name}]")
        return pieces

    def format_options(self, ctx: Context, formatter: HelpFormatter) -> None:
        args: list[tuple[str, str]] = []
        opts: list[tuple[str, str]] = []
        for param in self.get_params(ctx):
            if getattr(param, "hidden", False):
                continue
            text = getattr(param, "help", None) or ""
            if param.param_type_name == "argument":
                args.append((_param_name(param), text))
                continue
            names = join_options([*param.opts, *param.secondary_opts])[0]
            if not getattr(param, "is_flag", False):
                names += " " + _param_name(param)
            default = param.default
            if (default not in (None, False, "") and "[default:" not in text
                    and not callable(default)):
                text = f"{text} [default: {default}]".strip()
            opts.append((names, text))
        if args:
            with formatter.section("Arguments"):
                formatter.write_dl(args)
        if opts:
            with formatter.section("Options"):
                formatter.write_dl(opts)


class Group(TyperGroup):
    """Runs a command and turns every failure into one line on stderr."""

    def format_commands(self, ctx: Context, formatter: HelpFormatter) -> None:
        rows = []
        for name in self.list_commands(ctx):
            cmd = self.get_command(ctx, name)
            if cmd is not None and not cmd.hidden:
                rows.append((name, cmd.get_short_help_str(limit=200)))
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def main(self, args: Sequence[str] | None = None, prog_name: str | None = None,
             complete_var: str | None = None, standalone_mode: bool = True,
             windows_expand_args: bool = True, **extra: Any) -> Any:
        _state["json"], _state["params"] = False, set()
        try:
            code = super().main(args=args, prog_name=prog_name or "kairos",
                                complete_var=complete_var, standalone_mode=False,
                                windows_expand_args=windows_expand_args, **extra)
            code = code if isinstance(code, int) else 0
        except click_errors.NoArgsIsHelpError as exc:
            out.write(exc.ctx.get_help() + "\n")
            code = 0
        except click_errors.ClickException as exc:
            out.error(exc.format_message())
            code = exc.exit_code
        except typer.Abort:
            out.error("aborted")
            code = 1
        except ConfigError as exc:
            out.error(str(exc))
            code = 2
        except KairosError as exc:
            if _state["json"]:
                out.as_json(exc.to_dict())
            where = f" (line {exc.line})" if exc.line else ""
            out.error(f"{exc.message}{where} [{exc.code}]")
            code = 2 if _is_usage(exc) else 1
        except CliError as exc:
            out.error(exc.message)
            code = exc.code
        except BrokenPipeError:
            # The reader went away (`kairos list | head -1`): stop quietly.
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            code = 1
        except Exception as exc:
            if os.environ.get("KAIROS_TRACEBACK"):
                raise
            out.error(f"unexpected {type(exc).__name__}: {exc} (set KAIROS_TRACEBACK=1 "
                      "for the traceback)")
            code = 1
        if standalone_mode:
            sys.exit(code)
        return code


_state: dict[str, Any] = {"json": False, "warned": False, "params": set()}


def _is_usage(exc: KairosError) -> bool:
    """Whether the error is about what was typed: a value the command line gave (a URI,
    a run id, a status, a query) that the service refused as malformed. An error naming a
    line is about a file's content, not about what was typed."""
    field = (exc.field or "").split(".")[0].split("[")[0]
    return isinstance(exc, ValidationError) and exc.line is None and bool(
        {field, field + "s"} & set(_state["params"]))


def _json_mode(enabled: bool) -> bool:
    """Remember that this command prints JSON: its error body then goes to stdout too."""
    _state["json"] = enabled
    return enabled


def _show_version(value: bool) -> None:
    if value:
        out.line(f"kairos {version()}")
        raise typer.Exit()


app = typer.Typer(help="KAIROS: a memory server for AI agents.", no_args_is_help=True,
                  add_completion=False, rich_markup_mode=None, cls=Group,
                  context_settings={"help_option_names": ["-h", "--help"]})


@app.callback()
def _main(
    version: Annotated[bool, typer.Option(
        "--version", help="Print the version and exit.", is_eager=True,
        callback=_show_version)] = False,
) -> None:
    """KAIROS: a memory server for AI agents. `kairos COMMAND -h` shows a command's help."""


def command(name: str | None = None) -> Any:
    return app.command(name, cls=Command)


# --- shared ------------------------------------------------------------------------------

JsonFlag = Annotated[bool, typer.Option("--json", help="Print the result as JSON.")]
URI_HELP = "A step URI, kairos://mem/<uuid>, or the id a table shows (its first 8 characters)."
RUN_ID_HELP = "The run id, or its first 8 characters as `kairos runs` shows them."


def _settings(*, warn: bool = True, **overrides: Any) -> Settings:
    """The configuration, validated (a bad key or value exits 2 naming it); a
    ``KAIROS_*`` variable that is no setting (a typo) is named on stderr, once."""
    from ..config import load_settings, unknown_variables

    settings = load_settings(**overrides)
    if warn and not _state["warned"]:
        _state["warned"] = True
        for warning in unknown_variables():
            out.note(f"warning: {warning}")
    return settings


def _service(settings: Settings | None = None, *, background: bool = False) -> Kairos:
    """The service. One-shot commands run it without the background backfill: a process
    that exits while that thread is inside the embedding model is aborted by it."""
    from ..service import Kairos

    return Kairos(settings or _settings(), background=background)


def _caller(k: Kairos, space: str | None = None) -> Caller:
    from ..service import Caller

    return Caller(space=space or str(k.settings.space), id="local")


@contextmanager
def _using(settings: Settings | None = None) -> Iterator[Kairos]:
    """The service for one command, always closed."""
    k = _service(settings or _settings())
    try:
        yield k
    finally:
        k.close()


def _uri(k: Kairos, text: str) -> str:
    """A step URI from what a person typed: the URI, or the short id a table shows."""
    return str(k.expand_id(text, "step", _caller(k)))


def _run_id(k: Kairos, text: str) -> str:
    """A run id from the whole id or the short one a table shows."""
    return str(k.expand_id(text, "run", _caller(k)))


def _read(path: Path) -> str:
    try:
        return sys.stdin.read() if str(path) == "-" else path.read_text("utf-8")
    except FileNotFoundError:
        raise CliError(f"{path}: no such file", 2) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise CliError(f"{path}: cannot read ({exc})", 2) from None


# --- servers -----------------------------------------------------------------------------

@command()
def serve(
    host: Annotated[str | None, typer.Option(
        metavar="HOST", help="Address to listen on [default: KAIROS_HOST or 127.0.0.1].")] = None,
    port: Annotated[int | None, typer.Option(
        metavar="PORT", help="Port to listen on [default: KAIROS_PORT or 8765].")] = None,
    stateless: Annotated[bool, typer.Option(
        "--stateless", help="Serve MCP without transport sessions (replicas behind a load "
                            "balancer without sticky sessions).")] = False,
    workers: Annotated[int | None, typer.Option(
        metavar="N", help="Server processes sharing the address, each with its own copy of "
                          "the model [default: KAIROS_WORKERS or 1].")] = None,
    log_level: Annotated[str, typer.Option(
        metavar="LEVEL", help=f"uvicorn log level: {', '.join(LOG_LEVELS)}.")] = "info",
) -> None:
    """Serve MCP (streamable HTTP at /mcp) and REST (/api/v1) in one process or N."""
    from ..server import ServeError, serve_http

    if log_level not in LOG_LEVELS:
        raise typer.BadParameter(f"{log_level!r} is not one of {', '.join(LOG_LEVELS)}",
                                 param_hint="'--log-level'")
    settings = _settings(host=host, port=port, workers=workers)
    try:
        serve_http(settings, lambda: _service(settings, background=True), stateless=stateless,
                   log_level=log_level, say=out.note)
    except ServeError as exc:
        raise CliError(str(exc), exc.exit_code) from None


@command()
def migrate() -> None:
    """Bring the database schema to the newest version, then exit (run it once before
    starting replicas; `serve` does it too, one process at a time)."""
    from ..store.db import make_engine
    from ..store.db import migrate as upgrade

    settings = _settings()
    if not settings.database_url:
        settings.home_path.mkdir(parents=True, exist_ok=True)
    engine = make_engine(settings.url)
    try:
        revision = upgrade(engine)
    finally:
        engine.dispose()
    out.note(f"schema at revision {revision} ({settings.url.split('@')[-1]})")


@command("mcp")
def mcp_stdio(
    server: Annotated[str | None, typer.Option(
        "--server", metavar="URL",
        help="Forward every call to a `kairos serve` at this URL (e.g. http://host:8765/mcp) "
             "instead of opening a local store.")] = None,
) -> None:
    """Serve MCP on stdin/stdout for one agent host (stdout carries only MCP messages).

    One session id is made at start (override: KAIROS_SESSION_ID or CHL_SESSION_ID). With
    --server it is sent as X-CHL-Session on every call, with Authorization: Bearer
    $KAIROS_TOKEN when that is set."""
    from ..server import serve_stdio

    serve_stdio(_settings(), server)


# --- protocols ---------------------------------------------------------------------------

def _compact(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


def _challenge_text(challenge: dict[str, Any]) -> str:
    kind = challenge["type"]
    params = challenge.get(kind) or {}
    detail = {"shell": params.get("cmd"), "mcp": params.get("tool_name"),
              "user_input": params.get("prompt"),
              "comment": f"at least {params.get('min_length', 20)} characters"}.get(kind)
    return f"{kind}: {detail}" if detail else kind


@command()
def demo(as_json: JsonFlag = False) -> None:
    """Mint a sample protocol and run it to the end, showing every call and answer."""
    _json_mode(as_json)
    calls: list[dict[str, Any]] = []

    def show(call: str, arguments: dict[str, Any], response: dict[str, Any],
             summary: str) -> None:
        calls.append({"call": call, "arguments": arguments, "response": response})
        if not as_json:
            out.line(f"{call}({_compact(arguments)})")
            out.line(f"  -> {summary}")

    def shown(response: dict[str, Any]) -> str:
        if "error_code" in response:
            return f"refused: {response['error_code']}: {response['message']}"
        step = response["current_step"]["uri"]
        index = steps.index(step) + 1
        return (f"step {index}/{len(steps)} {step}, challenge "
                f"{_challenge_text(response['challenge'])}")

    with _using() as k:
        caller = _caller(k)
        minted = k.mint(SAMPLE, caller, force_update=True)
        item = minted["items"][0]
        steps = [s["uri"] for s in item["steps"]]
        show("kairos_mint", {"markdown_doc": "<the sample protocol>", "force_update": True},
             minted, f"stored '{item['chain_label']}' ({item['step_count']} steps), step 1 "
                     f"{steps[0]}")
        response = k.begin(steps[0], caller)
        show("kairos_begin", {"uri": steps[0]}, response, shown(response))
        for uri in steps[1:]:
            ch = response["challenge"]
            solution = {"type": ch["type"], "nonce": ch["nonce"], "proof_hash": ch["proof_hash"],
                        "shell": {"exit_code": 0, "stdout": "", "stderr": ""}}
            response = k.next(uri, solution, caller)
            show("kairos_next", {"uri": uri, "solution": solution}, response, shown(response))
            if "error_code" in response:
                raise CliError(f"the sample answer was refused: {response['message']}")
        ch = response["challenge"]
        solution = {"type": "comment", "nonce": ch["nonce"], "proof_hash": ch["proof_hash"],
                    "comment": {"text": "Reviewed what the steps created: the src directory "
                                        "and src/config.json both exist."}}
        arguments = {"uri": steps[-1], "outcome": "success",
                     "message": "Sample run finished.", "solution": solution}
        done = k.attest(steps[-1], "success", "Sample run finished.", caller,
                        solution=solution)
        if "run_id" not in done:
            show("kairos_attest", arguments, done, shown(done))
            raise CliError(f"the sample answer was refused: {done['message']}")
        show("kairos_attest", arguments, done,
             f"run {done['run_id']} finished: {done['outcome']}, {done['proofs']} proofs")
        verified = k.verify_run(done["run_id"], caller)
        show("verify", {"run_id": done["run_id"]}, verified,
             f"chain {'valid' if verified['valid'] else 'BROKEN'} "
             f"({verified['proofs']} proofs)")
    if as_json:
        out.as_json({"calls": calls})


def _answer(challenge: dict[str, Any], assume_yes: bool) -> dict[str, Any] | None:
    """A solution for the challenge shown, asked at the terminal or (``--yes``) the answer
    of a step that went well; None when the person declines a confirmation. KAIROS never
    runs the command itself. Raises ``prompts.NoInput`` when stdin has ended."""
    kind = challenge["type"]
    base = {"type": kind, "nonce": challenge["nonce"], "proof_hash": challenge["proof_hash"]}
    if kind == "shell":
        code = 0 if assume_yes else prompts.number(
            f"Run `{challenge['shell']['cmd']}` yourself; its exit code", 0)
        return {**base, "shell": {"exit_code": code, "stdout": "", "stderr": ""}}
    if kind == "mcp":
        ok = assume_yes or prompts.confirm(
            f"Did the MCP tool {challenge['mcp']['tool_name']} succeed?", True)
        return {**base, "mcp": {"tool_name": challenge["mcp"]["tool_name"], "success": ok,
                                "arguments": {}, "result": None}}
    if kind == "user_input":  # "no" ends the run: Enter alone asks again
        if not (assume_yes or prompts.confirm(challenge["user_input"]["prompt"], None)):
            return None
        return {**base, "user_input": {"confirmation": "yes"}}
    stamp = time.strftime("%Y-%m-%d %H:%M:%S")
    text = (f"Answered by kairos run --yes at {stamp}, without a person checking the step."
            if assume_yes else prompts.text(challenge["description"]))
    return {**base, "comment": {"text": text}}


def _refused_three_times(challenge: dict[str, Any], step_uri: str, message: str) -> str:
    """Why the run stopped after three refused answers, and what to do next: a command or
    a tool that kept failing is fixed where it runs; a refused comment or confirmation
    says more next time; the step itself is changed only when its challenge is wrong."""
    kind = challenge["type"]
    if kind == "shell":
        return (f"`{challenge['shell']['cmd']}` failed three times ({message}); fix what "
                "makes it fail, then start a new run")
    if kind == "mcp":
        return (f"the MCP tool {challenge['mcp']['tool_name']} failed three times "
                f"({message}); fix it, then start a new run")
    return (f"the answer was refused three times ({message}); if the step asks for the "
            f"wrong thing: kairos dump {step_uri} > step.md, edit it, kairos update "
            f"{step_uri} step.md")


@command()
def run(
    uri: Annotated[str, typer.Argument(metavar="URI",
                                       help="Step 1 of a protocol (kairos://mem/<uuid>), or "
                                            "its id as `kairos list` shows it.")],
    yes: Annotated[bool, typer.Option("--yes", help="Answer every challenge as a step "
                                                    "that went well (no prompts).")] = False,
    as_json: JsonFlag = False,
) -> None:
    """Walk a protocol in the terminal: each step, its challenge, your answer.

    Declining a confirmation aborts the run (Enter alone asks again). After three refused
    answers to a step you may try again or abort. When stdin ends before every step is
    answered, the run is recorded as abandoned. With --json the walk is shown on stderr
    and the outcome and its verification are printed as JSON."""
    from ..domain.texts import MAX_RETRIES_EXCEEDED

    _json_mode(as_json)
    say = out.note if as_json else out.line
    with _using() as k:
        caller = _caller(k)
        uri = _uri(k, uri)
        response = k.begin(uri, caller)
        whole = k.dump(uri, caller, protocol=True)
        steps = [s["uri"] for s in whole["steps"]]
        labels = [s["label"] for s in whole["steps"]]
        run_id = k.run_of_nonce(response["challenge"]["nonce"], caller)["run_id"]
        ids: Callable[[str], str] = short_id if out.is_terminal() else str
        say(f"Run {ids(run_id)}: {whole['chain_label']} ({len(steps)} steps)")
        index, last_refusal = 0, ""
        try:
            while True:
                step, challenge = response["current_step"], response["challenge"]
                index = steps.index(step["uri"])
                say("")
                say(f"Step {index + 1}/{len(steps)}: {labels[index]}  ({ids(step['uri'])})")
                say(step["content"].strip())
                if response.get("error_code") == MAX_RETRIES_EXCEEDED:
                    say(f"This step's answer was refused {response['retry_count']} times.")
                    if yes or not prompts.confirm("Try again?", None):
                        k.abort_run(run_id, caller,
                                    f"Aborted from the command line at step {index + 1} after "
                                    f"{response['retry_count']} refused answers.")
                        raise CliError(f"run {run_id} aborted at step {index + 1}: "
                                       + _refused_three_times(challenge, step["uri"],
                                                              last_refusal))
                elif response.get("error_code"):
                    last_refusal = response["message"]
                    say(f"Not accepted: {response['message']}")
                say(f"Challenge: {challenge['description']}")
                solution = _answer(challenge, yes)
                if solution is None:
                    k.abort_run(run_id, caller, f"Declined at step {index + 1}: "
                                                f"{challenge['user_input']['prompt']}")
                    raise CliError(f"run {run_id} aborted: you declined "
                                   f"\"{challenge['user_input']['prompt']}\"")
                if index < len(steps) - 1:
                    response = k.next(steps[index + 1], solution, caller)
                    continue
                done = k.attest(step["uri"], "success", "Run from the command line.", caller,
                                solution=solution)
                if "run_id" in done:
                    break
                response = done  # the last answer was refused: the same step, a fresh challenge
        except prompts.NoInput:
            closed = k.abandon_run(run_id, f"Abandoned: the terminal's input ended at step "
                                           f"{index + 1}.", caller)
            state = ("recorded as abandoned" if closed else
                     "left completed (its last step is not proven)")
            raise CliError(f"no input left to answer step {index + 1} (stdin ended): run "
                           f"{run_id} {state}; answer at a terminal, or pass --yes") from None
        except KeyboardInterrupt:
            raise CliError(f"interrupted; run {run_id} is still active (`kairos abort "
                           f"{short_id(run_id)}` ends it)", 130) from None
        verified = k.verify_run(done["run_id"], caller)
    if as_json:
        out.as_json({"attestation": done, "verification": verified})
    else:
        say("")
        say(f"Run {done['run_id']}: {done['proofs']} proofs, chain "
            f"{'valid' if verified['valid'] else 'BROKEN'}.")
    if not verified["valid"]:
        raise CliError(f"the proof chain of run {done['run_id']} is broken")


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
    _json_mode(as_json)
    if path != STDIN and not path.exists():
        raise CliError(f"{path}: no such file or directory", 2)
    files = sorted(path.glob("**/*.md")) if path.is_dir() else [path]
    failed = 0
    results: list[dict[str, Any]] = []
    shown: list[list[Any]] = []

    def report(file: Path, result: dict[str, Any] | KairosError) -> None:
        nonlocal failed
        name = "<stdin>" if file == STDIN else str(file)
        if isinstance(result, KairosError):
            failed += 1
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

    settings = _settings()
    with _using(settings) as k:
        caller = _caller(k)

        def batch(chunk: list[Path]) -> None:
            """Mint a batch of files, their vectors from one pass of the model."""
            nonlocal failed
            readable: list[tuple[Path, str]] = []
            for file in chunk:
                try:
                    readable.append((file, _read(file)))
                except CliError as exc:
                    failed += 1
                    results.append({"file": str(file), "error": {"message": exc.message}})
                    out.error(exc.message)
            minted = k.mint_many([doc for _, doc in readable], caller, force_update=force)
            for (file, _), result in zip(readable, minted, strict=True):
                report(file, result)

        chunks = [files[i:i + MINT_BATCH] for i in range(0, len(files), MINT_BATCH)]
        if len(files) >= MANY_FILES and sys.stderr.isatty():
            from rich.console import Console
            from rich.progress import Progress

            with Progress(console=Console(stderr=True), transient=True) as progress:
                task = progress.add_task("Minting", total=len(files))
                for chunk in chunks:
                    batch(chunk)
                    progress.advance(task, len(chunk))
        else:
            for chunk in chunks:
                batch(chunk)
    if shown:
        out.table(MINTED, shown)
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
    _json_mode(as_json)
    if explain:
        from .explain import show_explain

        with _using() as k:
            explained = k.explain_search(query, _caller(k), limit=limit)
        if as_json:
            out.as_json(explained)
        else:
            show_explain(explained)
        return
    with _using() as k:
        result = k.search(query, _caller(k), limit=limit, notice=True)
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
    uri: Annotated[str, typer.Argument(metavar="URI", help=URI_HELP)],
    protocol: Annotated[bool, typer.Option("--protocol", help="The whole protocol.")] = False,
    as_json: JsonFlag = False,
) -> None:
    """Show one step, or the whole protocol as markdown (what `mint --force` reads back)."""
    _json_mode(as_json)
    with _using() as k:
        result = k.dump(_uri(k, uri), _caller(k), protocol=protocol)
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
    limit: Annotated[int, typer.Option(metavar="N", min=1, max=500,
                                       help="Protocols per page.")] = 50,
    offset: Annotated[int, typer.Option(metavar="N", min=0,
                                        help="Skip this many protocols.")] = 0,
    as_json: JsonFlag = False,
) -> None:
    """List protocols, most recently changed first.

    Prints one line per protocol: URI, step count, runs, successes, failures, last change,
    title; stderr says when more pages follow."""
    _json_mode(as_json)
    with _using() as k:
        page = k.list_protocols(_caller(k), limit=limit, offset=offset, title=title, tag=tag,
                                builtin=builtin)
    if as_json:
        out.as_json(page)
        return
    out.table(PROTOCOLS, [[p["uri"], p["step_count"], p["runs"], p["successes"],
                           p["failures"], p["updated_at"], p["chain_label"]]
                          for p in page["items"]])
    shown = len(page["items"])
    if page["has_more"]:
        out.note(f"{offset + 1}–{offset + shown} of {page['total']}; next page: "
                 f"--offset {offset + shown}")
    elif not shown:
        out.note("No protocols." if not offset else f"No protocols after {offset}.")


@command()
def update(
    uri: Annotated[str, typer.Argument(metavar="URI", help=URI_HELP)],
    file: Annotated[Path, typer.Argument(
        metavar="FILE", help="The step's new markdown (- for stdin), optionally starting "
                             "with `## New label`; `kairos dump URI` writes the current one.")],
    as_json: JsonFlag = False,
) -> None:
    """Replace one step from a file (kairos_update); its challenge is re-read from it.

    To change a whole protocol, edit `kairos dump --protocol URI` and mint it with
    --force."""
    _json_mode(as_json)
    text = _read(file)
    with _using() as k:
        result = k.update(_uri(k, uri), _caller(k), markdown_doc=text)
    _report_batch(result, as_json, "updated", (Col("challenge"), Col("step", flex=True)),
                  lambda r: (_challenge_text({"type": r["challenge"]["type"],
                                              **r["challenge"]}), r["label"]))


def _report_batch(result: dict[str, Any], as_json: bool, done: str, cols: tuple[Col, ...],
                  cells: Callable[[dict[str, Any]], tuple[str, ...]]) -> None:
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
    _json_mode(as_json)
    with _using() as k:
        result = k.delete([_uri(k, u) for u in uris], _caller(k), protocol=protocol)
    _report_batch(result, as_json, "deleted", (Col("removed", flex=True),),
                  lambda r: (f"{len(r['removed'])} step(s) removed",))


# --- runs --------------------------------------------------------------------------------

@command()
def verify(run_id: Annotated[str, typer.Argument(metavar="RUN_ID", help=RUN_ID_HELP)],
           as_json: JsonFlag = False) -> None:
    """Recompute a run's proof chain and report the first broken link."""
    _json_mode(as_json)
    with _using() as k:
        result = k.verify_run(_run_id(k, run_id), _caller(k))
    if as_json:
        out.as_json(result)
    elif result["valid"]:
        out.line(f"Run {result['run_id']}: {result['proofs']} proofs, chain valid.")
    if not result["valid"]:
        broken = result["first_broken"]
        raise CliError(f"run {result['run_id']}: chain broken at proof {broken['index']} "
                       f"({broken['step_uri']}): {broken['reason']}")


#: What runs prints per run: run id (short at a terminal), status, outcome, proven, step
#: (of the step count), last change, protocol.
RUNS = (Col("run", short_id), Col("status"), Col("outcome"), Col("proven"),
        Col("step", right=True), Col("updated", when, day), Col("protocol", flex=True))


@command()
def runs(
    limit: Annotated[int, typer.Option(metavar="N", min=1, max=500,
                                       help="How many runs.")] = 20,
    status: Annotated[str | None, typer.Option(
        metavar="STATUS", help="Only runs in this state: active, completed, finished, "
                               "abandoned or imported.")] = None,
    as_json: JsonFlag = False,
) -> None:
    """Recent runs with their outcome and whether every step was proven.

    Prints one line per run: run id, status, outcome, proven (yes or no), step (of the
    step count), last change, protocol. Runs idle past KAIROS_RUN_IDLE_MINUTES are
    recorded as abandoned first."""
    _json_mode(as_json)
    with _using() as k:
        k.expire_runs()
        listed = k.list_runs(_caller(k), limit=limit, status=status)
    if as_json:
        out.as_json(listed)
        return
    out.table(RUNS, [[r["run_id"], r["status"], r["outcome"] or "-",
                      "yes" if r["proven"] else "no", f"{r['step']}/{r['step_count']}",
                      r["updated_at"], r["chain_label"] or "?"] for r in listed["items"]])


@command()
def abort(
    run_id: Annotated[str, typer.Argument(metavar="RUN_ID", help=RUN_ID_HELP)],
    message: Annotated[str | None, typer.Option(
        metavar="TEXT", help="Why, for the record.")] = None,
    as_json: JsonFlag = False,
) -> None:
    """Abort a run: it finishes with outcome failure at the step it was waiting on."""
    _json_mode(as_json)
    with _using() as k:
        done = k.abort_run(_run_id(k, run_id), _caller(k),
                           message or "Aborted from the command line.")
    if as_json:
        out.as_json(done)
    else:
        out.line(f"Run {done['run_id']} aborted at {done['uri']}: outcome failure.")


# --- data --------------------------------------------------------------------------------

@command()
def export(
    out_file: Annotated[Path | None, typer.Option(
        "--out", metavar="FILE", help="File to write [default: stdout].")] = None,
    space: Annotated[str | None, typer.Option(
        metavar="SPACE", help="Space to export [default: KAIROS_SPACE].")] = None,
) -> None:
    """Write every record of a space as JSON Lines (stdout, or --out FILE)."""
    from ..service.transfer import export_records

    counts: dict[str, int] = {}
    with _using() as k:
        try:
            stream = out_file.open("w", encoding="utf-8") if out_file else sys.stdout
        except OSError as exc:
            raise CliError(f"{out_file}: cannot write ({exc.strerror})", 2) from None
        try:
            for record in export_records(k, _caller(k, space)):
                if "table" in record:
                    counts[record["table"]] = counts.get(record["table"], 0) + 1
                stream.write(json.dumps(record, ensure_ascii=False, separators=(",", ":")))
                stream.write("\n")
        finally:
            if out_file:
                stream.close()
    summary = ", ".join(f"{n} {name}" for name, n in counts.items()) or "no records"
    out.note(f"Exported {summary}.")


@command("import")
def import_(
    file: Annotated[Path, typer.Argument(metavar="FILE",
                                         help="A file written by `kairos export`.")],
    space: Annotated[str | None, typer.Option(
        metavar="SPACE", help="Space to import into [default: KAIROS_SPACE].")] = None,
    as_json: JsonFlag = False,
) -> None:
    """Read a JSON Lines export into a space (all or nothing; existing records are kept).

    Every row is checked as a live write would be; ids another space holds get new ones;
    runs come in as history (status imported, not proven here)."""
    from ..service.imports import import_lines

    _json_mode(as_json)
    if not file.is_file():
        raise CliError(f"{file}: no such file", 2)
    with _using() as k:
        try:
            with file.open("rb") as lines:
                result = import_lines(k, lines, _caller(k, space))
        except KairosError as exc:
            if exc.line is None or as_json:
                raise
            # The file's content is at fault, not what was typed: a failure (exit 1).
            raise CliError(f"{file}:{exc.line}: " + exc.message.removeprefix(
                f"Line {exc.line}: ") + f" [{exc.code}]", 1) from None
        except OSError as exc:
            raise CliError(f"{file}: cannot read ({exc.strerror})", 2) from None
    if as_json:
        out.as_json(result)
        return

    def counted(counts: dict[str, int]) -> str:
        return ", ".join(f"{n} {name}" for name, n in counts.items()) or "nothing"

    moved = (f"; new ids for {counted(result['new_ids'])} held by another space"
             if result["new_ids"] else "")
    out.line(f"Imported into space {result['space']}: {counted(result['inserted'])}; "
             f"kept existing: {counted(result['skipped'])}{moved}; indexed "
             f"{result['indexed']} record(s) for search.")


@command()
def reindex(
    as_json: JsonFlag = False,
) -> None:
    """Re-embed every searchable record with the current embedding model."""
    _json_mode(as_json)
    with _using() as k:
        if sys.stderr.isatty():
            from rich.console import Console
            from rich.progress import Progress

            with Progress(console=Console(stderr=True), transient=True) as progress:
                task = progress.add_task("Embedding", total=None)

                def report(done: int, total: int) -> None:
                    progress.update(task, completed=done, total=total)

                result = k.reindex(progress=report)
        else:
            result = k.reindex()
        provider = k.search_engine.provider
    if as_json:
        out.as_json(result)
    elif result.get("model_id"):
        out.line(f"Re-embedded {result['embedded']} record(s) with {result['model_id']}.")
    if not result.get("model_id"):
        message = f"nothing re-embedded: {result.get('state')} (embedder {provider})"
        if provider == "none":
            out.note(message[0].upper() + message[1:] + ".")
        else:
            raise CliError(message)


@command()
def doctor(
    as_json: JsonFlag = False,
) -> None:
    """Check the configuration (each value and its source), data, model and index."""
    from ..config import config_path, unknown_variables

    _json_mode(as_json)
    path = config_path()
    warnings = unknown_variables()
    report: dict[str, Any] = {"config_file": str(path), "config_file_found": path.is_file(),
                              "warnings": warnings}
    try:
        settings = _settings(warn=False)  # the report names them
    except ConfigError as exc:
        if as_json:
            out.as_json({**report, "status": "misconfigured", "problems": exc.problems})
        else:
            out.line(f"config file: {path} ({'read' if path.is_file() else 'absent'})")
            for problem in exc.problems:
                out.line(f"problem: {problem}")
        raise
    report["settings"] = {
        key: {"value": (("***" if value else "") if key in SECRET_SETTINGS else value),
              "source": settings.sources.get(key, "default")}
        for key, value in settings.values.items()}
    home = settings.home_path
    report["data_directory"] = {"path": str(home), "exists": home.is_dir()}
    problems: list[str] = []
    from ..server import ServeError, tokens_of

    try:
        tokens = tokens_of(settings)
        report["api_tokens"] = {"count": len(tokens), "spaces": sorted(set(tokens.values()))}
    except ServeError as exc:
        problems.append(str(exc))
    try:
        k = _service(settings)
    except Exception as exc:  # doctor reports what is wrong instead of failing
        problems.append(f"store: cannot open {settings.url.split('@')[-1]} "
                        f"({type(exc).__name__}: {exc})")
        health: dict[str, Any] = {"status": "unhealthy"}
    else:
        try:
            health = k.health()
            verify = getattr(k.embedder, "verify", None)
            bad: list[str] = verify() if verify is not None else []
            if bad:
                problems.append(f"model: files differ from SHA256SUMS: {', '.join(bad)}")
        except Exception as exc:
            health = {"status": "unhealthy", "error": f"{type(exc).__name__}: {exc}"}
        finally:
            k.close()
        if health.get("status") != "healthy":
            problems.append(f"health: {health.get('status')} {health.get('error', '')}".strip())
    report.update(health=health, problems=problems,
                  status="healthy" if not problems else "unhealthy")
    if as_json:
        out.as_json(report)
    else:
        out.table((Col("setting"), Col("value", flex=True), Col("source", flex=True)),
                  [[key, item["value"], item["source"]]
                   for key, item in report["settings"].items()])
        out.line(f"config file: {path} ({'read' if path.is_file() else 'absent'})")
        out.line(f"data directory: {home} "
                 f"({'exists' if home.is_dir() else 'will be created'})")
        if "api_tokens" in report:
            tokens_seen = report["api_tokens"]
            out.line(f"API tokens: {tokens_seen['count']}" + (
                f" (spaces: {', '.join(tokens_seen['spaces'])})" if tokens_seen["count"]
                else " (serve listens on 127.0.0.1 only)"))
        for part in ("store", "embedder", "index"):
            if part in health:
                details = ", ".join(f"{a}={b}" for a, b in health[part].items())
                out.line(f"{part}: {details}")
        for warning in warnings:
            out.line(f"warning: {warning}")
        for problem in problems:
            out.line(f"problem: {problem}")
        out.line(f"status: {report['status']}")
    if problems:
        raise CliError(f"{len(problems)} problem(s): " + "; ".join(problems))


from . import explain as _explain  # noqa: E402, F401  (registers `kairos triggers`)

if __name__ == "__main__":  # pragma: no cover
    app()
