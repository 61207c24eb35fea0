"""What every command of ``kairos`` shares: the application and its help and error rules,
the settings read once per command, the service it opens, and what a person types
turned into request models.

Imports are lazy: ``kairos mcp`` must answer an agent host's handshake within moments of
starting, so nothing heavy (database layer, web stack, embedding model) is imported
before a command needs it.

Every command follows the same rules (``output``): data on stdout, unwrapped when stdout
is not a terminal; ``--json`` wherever data is printed; an error is one line on stderr,
``error: …``, with exit code 2 for usage and configuration errors and 1 for failures.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeVar

import typer
from pydantic import BaseModel
from typer._click import exceptions as click_errors
from typer._click.formatting import join_options
from typer.core import TyperCommand, TyperGroup

from .. import version
from ..config import ConfigError
from ..domain.caller import Caller
from ..domain.errors import KairosError, ValidationError
from . import output as out
from .output import CliError

if TYPE_CHECKING:
    from typer._click import Context, HelpFormatter, Parameter

    from ..config import Settings
    from ..service import Kairos

M = TypeVar("M", bound=BaseModel)


def _param_name(param: Parameter) -> str:
    return str(param.metavar or (param.name or "").upper())


class Command(TyperCommand):
    """Plain help: ``URI`` rather than ``{uri}``, ``--port PORT`` rather than
    ``--port <int>``, flags without a placeholder, defaults written as ``[default: …]``."""

    def invoke(self, ctx: Context) -> Any:
        # A field a request names is a parameter's name, or its option's (--type: type).
        _state["params"] = {p.name for p in self.params if p.name} | {
            opt.lstrip("-").replace("-", "_") for p in self.params for opt in p.opts}
        # A command printing JSON (--json) prints its error body on stdout too.
        _state["json"] = bool(ctx.params.get("as_json"))
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


# --- what commands share ------------------------------------------------------------------

JsonFlag = Annotated[bool, typer.Option("--json", help="Print the result as JSON.")]
UriArg = Annotated[str, typer.Argument(
    metavar="URI",
    help="A step URI, kairos://mem/<uuid>, or the id a table shows (its first 8 characters).")]
RunIdArg = Annotated[str, typer.Argument(
    metavar="RUN_ID", help="The run id, or its first 8 characters as `kairos runs` shows them.")]


def load(*, warn: bool = True, **overrides: Any) -> Settings:
    """The configuration, validated (a bad key or value exits 2 naming it); a
    ``KAIROS_*`` variable that is no setting (a typo) is named on stderr, once."""
    from ..config import load_settings, unknown_variables

    settings = load_settings(**overrides)
    if warn and not _state["warned"]:
        _state["warned"] = True
        for warning in unknown_variables():
            out.note(f"warning: {warning}")
    return settings


def request(model: type[M], **values: Any) -> M:
    """The request model of what was typed (an option left out takes the model's
    default), validated as every surface validates a request."""
    from ..domain.validation import parse

    return parse(model, {k: v for k, v in values.items() if v is not None})


@dataclass(frozen=True)
class Local:
    """The service one command uses, and the caller it speaks for."""

    service: Kairos
    caller: Caller

    def expand(self, text: str, kind: Literal["step", "run"]) -> str:
        """A step URI or a run id from what a person typed: the whole of it, or the short
        id a table shows."""
        from ..domain.requests import ShortId

        return self.service.expand_id(request(ShortId, text=text, kind=kind), self.caller)


@contextmanager
def opened(settings: Settings | None = None, *, space: str | None = None
           ) -> Iterator[Local]:
    """The service for one command (without the background work of a server: a process
    that exits while that thread is inside the embedding model is aborted by it), always
    closed; ``space``: speak for that space instead of the configured one."""
    from ..service.wiring import open_service

    settings = settings or load()
    service = open_service(settings, background=False)
    try:
        yield Local(service, Caller(space=space or str(settings.space), id="local"))
    finally:
        service.close()


def read_file(path: Path) -> str:
    """A file's text (``-``: stdin); one that cannot be read is a usage error."""
    try:
        return sys.stdin.read() if str(path) == "-" else path.read_text("utf-8")
    except FileNotFoundError:
        raise CliError(f"{path}: no such file", 2) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise CliError(f"{path}: cannot read ({exc})", 2) from None


__all__ = ["JsonFlag", "Local", "RunIdArg", "UriArg", "app", "command",
           "load", "opened", "read_file", "request"]
