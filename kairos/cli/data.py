"""The data commands: ``export`` and ``import`` (a space's records as JSON Lines),
``reindex`` and ``doctor``."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Annotated, Any

import typer

from ..config import ConfigError
from ..domain.dataset_filters import Filters
from ..domain.datasets import FORMATS as DATASET_FORMATS
from ..domain.datasets import to_jsonl
from ..domain.errors import KairosError
from . import output as out
from .base import JsonFlag, command, load, opened
from .output import CliError
from .table import Col

SECRET_SETTINGS = {"openai_api_key", "api_tokens"}


RECORDS = "records"
EXPORT_FORMATS = (RECORDS, *DATASET_FORMATS)


def _write_lines(records: Iterator[Mapping[str, Any]], out_file: Path | None,
                 seen: Callable[[Mapping[str, Any]], None]) -> None:
    """One JSON object per line, to ``out_file`` or stdout; ``seen`` is told each record."""
    try:
        stream = out_file.open("w", encoding="utf-8") if out_file else sys.stdout
    except OSError as exc:
        raise CliError(f"{out_file}: cannot write ({exc.strerror})", 2) from None
    try:
        for record in records:
            seen(record)
            stream.write(to_jsonl(record) + "\n")
    finally:
        if out_file:
            stream.close()


@command()
def export(
    out_file: Annotated[Path | None, typer.Option(
        "--out", metavar="FILE", help="File to write [default: stdout].")] = None,
    space: Annotated[str | None, typer.Option(
        metavar="SPACE", help="Space to export [default: KAIROS_SPACE].")] = None,
    fmt: Annotated[str, typer.Option(
        "--format", metavar="FORMAT",
        help=f"{RECORDS} (every record, for `kairos import`), or runs as training data: "
             f"{', '.join(DATASET_FORMATS)} (docs/datasets.md).")] = RECORDS,
    protocol: Annotated[str | None, typer.Option(
        metavar="URI", help="Datasets: only the runs of this protocol (any step's URI).")
    ] = None,
    outcome: Annotated[str | None, typer.Option(
        metavar="OUTCOME", help="Datasets: only runs with this outcome (success, failure).")
    ] = None,
    include_unproven: Annotated[bool, typer.Option(
        "--include-unproven", help="Datasets: also successes that are not proven.")] = False,
    since: Annotated[str | None, typer.Option(
        metavar="WHEN", help="Datasets: runs begun on or after this date (YYYY-MM-DD) or "
                             "time.")] = None,
    until: Annotated[str | None, typer.Option(
        metavar="WHEN", help="Datasets: runs begun up to this date (the whole day) or "
                             "time.")] = None,
) -> None:
    """Write every record of a space as JSON Lines (stdout, or --out FILE); with --format,
    its finished runs as a training dataset (proven successes and failures)."""
    if fmt not in EXPORT_FORMATS:
        raise CliError(f"--format: expected one of {', '.join(EXPORT_FORMATS)}", 2)
    counts: dict[str, int] = {}

    def count(record: Mapping[str, Any]) -> None:
        name = str(record.get("table", "record")) if fmt == RECORDS else "record"
        counts[name] = counts.get(name, 0) + 1

    if fmt == RECORDS:
        given = [n for n, v in (("--protocol", protocol), ("--outcome", outcome),
                                ("--since", since), ("--until", until),
                                ("--include-unproven", include_unproven or None)) if v]
        if given:
            raise CliError(f"{given[0]} applies to the dataset formats "
                           f"({', '.join(DATASET_FORMATS)}); add --format", 2)
        with opened(space=space) as local:
            _write_lines(local.service.export_records(local.caller), out_file, count)
        summary = ", ".join(f"{n} {name}" for name, n in counts.items() if name != "record")
        out.note(f"Exported {summary or 'no records'}.")
        return
    filters = Filters.parse(protocol=protocol, outcome=outcome,
                            proven_only=not include_unproven, since=since, until=until)
    with opened(space=space) as local, out.progress(f"Exporting {fmt}") as update:
        records = local.service.export_dataset(fmt, filters, local.caller)

        def seen(record: Mapping[str, Any]) -> None:
            count(record)
            update(advance=1)

        _write_lines(records, out_file, seen)
    out.note(f"Exported {counts.get('record', 0)} {fmt} record(s).")


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
    if not file.is_file():
        raise CliError(f"{file}: no such file", 2)
    with opened(space=space) as local:
        try:
            with file.open("rb") as lines:
                result = local.service.import_records(lines, local.caller)
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
def reindex(as_json: JsonFlag = False) -> None:
    """Re-embed every searchable record with the current embedding model."""
    with opened() as local:
        with out.progress("Embedding") as update:
            result = local.service.reindex(
                progress=lambda done, total: update(completed=done, total=total))
        provider = local.service.embedder.name
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
def doctor(as_json: JsonFlag = False) -> None:
    """Check the configuration (each value and its source), data, model and index."""
    from ..config import config_path, unknown_variables

    path = config_path()
    warnings = unknown_variables()
    report: dict[str, Any] = {"config_file": str(path), "config_file_found": path.is_file(),
                              "warnings": warnings}
    try:
        settings = load(warn=False)  # the report names them
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
    from ..service.signing import open_signing
    from ..service.wiring import open_service

    try:
        signing = open_signing(settings)
        report["signing_key"] = {"path": str(settings.signing_key_path), "kid": signing.kid,
                                 "published": list(signing.trusted())}
        k = open_service(settings, background=False, signing=signing)
    except ConfigError as exc:  # the key: the store is not opened without it
        problems.append(f"signing key: {'; '.join(exc.problems)}")
        health: Mapping[str, Any] = {"status": "unhealthy"}
    except Exception as exc:  # doctor reports what is wrong instead of failing
        problems.append(f"store: cannot open {settings.url.split('@')[-1]} "
                        f"({type(exc).__name__}: {exc})")
        health = {"status": "unhealthy"}
    else:
        try:
            health = k.health()
            bad = k.embedder.verify()
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
        if "signing_key" in report:
            key = report["signing_key"]
            out.line(f"signing key: {key['kid']} ({key['path']}; {len(key['published'])} "
                     "published)")
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
