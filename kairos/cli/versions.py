"""The version commands: ``versions`` (a protocol's versions with their runs) and ``diff``
(two versions, unified; coloured on a terminal, plain in a pipe)."""

from __future__ import annotations

from typing import Annotated

import typer

from ..domain.requests import ProtocolRef
from ..domain.versions import VersionDiff
from . import output as out
from .base import JsonFlag, UriArg, command, opened, request
from .table import Col, when

#: What versions prints per version: number (* the current one), content hash, created,
#: steps, runs, successes, failures.
VERSIONS = (Col("version", right=True), Col("hash"), Col("created", when),
            Col("steps", right=True), Col("runs", right=True), Col("ok", right=True),
            Col("failed", right=True))
#: ANSI colours of a diff's lines on a terminal.
_COLOURS = {"+": "\x1b[32m", "-": "\x1b[31m", "@": "\x1b[36m"}
_RESET = "\x1b[0m"


@command()
def versions(uri: UriArg, as_json: JsonFlag = False) -> None:
    """List a protocol's versions: number (* marks the current one), content hash, when it
    was made, steps, and the runs on it."""
    with opened() as local:
        result = local.service.versions(request(ProtocolRef, uri=local.expand(uri, "step")),
                                        local.caller)
    if as_json:
        out.as_json(result)
        return
    out.table(VERSIONS, [[f"{v['version']}{'*' if v['current'] else ''}",
                          v["content_hash"][:12] if out.is_terminal() else v["content_hash"],
                          v["created_at"], v["step_count"], v["runs"], v["successes"],
                          v["failures"]] for v in result["versions"]])


@command()
def diff(
    uri: UriArg,
    old: Annotated[int, typer.Argument(metavar="A", help="The version to compare from.")],
    new: Annotated[int, typer.Argument(metavar="B", help="The version to compare to.")],
    as_json: JsonFlag = False,
) -> None:
    """Show what changed between versions A and B of a protocol, as a unified diff."""
    with opened() as local:
        result = local.service.diff_versions(
            request(VersionDiff, uri=local.expand(uri, "step"), from_version=old,
                    to_version=new), local.caller)
    if as_json:
        out.as_json(result)
        return
    text = result["diff"]
    if out.is_terminal():
        text = "".join(_COLOURS[line[0]] + line + _RESET
                       if line[:1] in _COLOURS and not line.startswith(("+++", "---"))
                       else line for line in text.splitlines(keepends=True))
    out.write(text)
