"""``kairos``: thin commands over the service (parse, call, render)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer
from rich.console import Console

from ..domain.errors import KairosError
from ..service import Caller, Kairos

app = typer.Typer(help="KAIROS: a memory server for AI agents.", no_args_is_help=True,
                  add_completion=False)
console = Console()

SAMPLE = """# Sample: create a project skeleton

A three-step protocol that shows the execution loop.

## Create the source directory

PROOF OF WORK: timeout 10s mkdir -p src

## Write the configuration

PROOF OF WORK: echo config > src/config.json

## Review

PROOF OF WORK: comment min_length=20
"""


def _service() -> Kairos:
    return Kairos()


def _print(data: Any) -> None:
    console.print_json(json.dumps(data, ensure_ascii=False))


def _fail(exc: KairosError) -> None:
    console.print_json(json.dumps(exc.to_dict(), ensure_ascii=False))
    raise typer.Exit(1)


@app.command()
def demo() -> None:
    """Mint a sample protocol and run it to completion, showing every response."""
    k = _service()
    try:
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
            "comment": {"text": "Created src and its configuration file."}})
        _print(done)
        _print(k.verify_run(done["run_id"]))
    except KairosError as exc:
        _fail(exc)


@app.command()
def mint(path: Path, force: bool = typer.Option(False, "--force", help="Replace same titles.")
         ) -> None:
    """Mint a markdown file (or every .md file in a directory) as protocols."""
    k = _service()
    files = sorted(path.glob("**/*.md")) if path.is_dir() else [path]
    for file in files:
        try:
            result = k.mint(file.read_text("utf-8"), force_update=force)
            for item in result["items"]:
                console.print(f"{item['uri']}  {item['chain_label']}")
        except KairosError as exc:
            console.print(f"[red]{file}[/red]: {exc.message}")


@app.command()
def dump(uri: str, protocol: bool = typer.Option(False, "--protocol")) -> None:
    """Show one step, or the whole protocol as markdown."""
    try:
        result = _service().dump(uri, protocol=protocol)
    except KairosError as exc:
        _fail(exc)
    console.print(result["markdown_doc"], markup=False, highlight=False)


@app.command()
def verify(run_id: str) -> None:
    """Recompute a run's proof chain and report the first broken link."""
    try:
        result = _service().verify_run(run_id)
    except KairosError as exc:
        _fail(exc)
    _print(result)
    if not result["valid"]:
        raise typer.Exit(1)


@app.command()
def runs(limit: int = 20) -> None:
    """Recent runs with their outcome."""
    from rich.table import Table

    table = Table("run", "protocol", "status", "outcome", "step", "updated")
    for r in _service().run_history(Caller(), limit):
        table.add_row(r["run_id"], r["chain_label"] or "?", r["status"], r["outcome"] or "",
                      str(r["step"]), r["updated_at"])
    console.print(table)


if __name__ == "__main__":  # pragma: no cover
    app()
