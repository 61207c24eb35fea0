"""The bundle commands: ``export-run`` (a run as a signed bundle) and ``verify-bundle``
(check one offline: no server, no database, no model). The format: ``docs/bundle.md``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ..domain import keys
from ..domain.errors import ValidationError
from ..domain.jsontext import pretty
from ..domain.requests import RunRef
from . import output as out
from .base import JsonFlag, RunIdArg, command, load, opened, read_file, request
from .output import CliError

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey


@command("export-run")
def export_run(
    run_id: RunIdArg,
    out_file: Annotated[Path | None, typer.Option(
        "--out", "-o", metavar="FILE", help="File to write [default: stdout].")] = None,
) -> None:
    """Write a run as a signed bundle (JSON) that anyone holding the server's public keys
    can verify offline; an active run's bundle holds its proofs so far."""
    with opened() as local:
        bundle = local.service.export_run(
            request(RunRef, run_id=local.expand(run_id, "run")), local.caller)
    # Numbers as Python writes them: a kairos-json-1 chain hashed 3.0 as "3.0".
    text = pretty(bundle) + "\n"
    if out_file is None:
        out.write(text)
        return
    try:
        out_file.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise CliError(f"{out_file}: cannot write ({exc.strerror})", 2) from None
    out.note(f"Wrote the bundle of run {bundle['run']['id']} ({len(bundle['proofs'])} "
             f"proofs, {bundle['run']['status']}) to {out_file}.")


def _trusted(key: Path | None) -> dict[str, Ed25519PublicKey]:
    """The keys to verify with: ``--key`` (a key set JSON, a JWK or a PEM public key), or
    those of the local server (its key file in the data directory, or KAIROS_SIGNING_KEY,
    and KAIROS_PUBLISHED_KEYS)."""
    if key is not None:
        try:
            return keys.public_keys(read_file(key))
        except ValidationError as exc:
            raise CliError(f"{key}: {exc.message}", 2) from None
    from ..service.signing import open_signing

    settings = load()
    try:
        return open_signing(settings, create=False).trusted()
    except FileNotFoundError:
        raise CliError(f"no key to verify with: {settings.signing_key_path} does not exist; "
                       f"pass --key KEYS.json (the server's {keys.KEYS_PATH})", 2) from None


@command("verify-bundle")
def verify_bundle(
    file: Annotated[Path, typer.Argument(metavar="FILE", help="The bundle (- for stdin).")],
    key: Annotated[Path | None, typer.Option(
        metavar="FILE", help="The trusted keys: a key set JSON (the server's "
                             f"{keys.KEYS_PATH}) or a PEM public key [default: the local "
                             "server's key].")] = None,
    as_json: JsonFlag = False,
) -> None:
    """Check a run bundle offline, link by link, and name the first broken one. Exits 0
    when it verifies, 1 when it does not, 2 when the file or the key cannot be used."""
    from ..domain.bundle import verify_text

    text = read_file(file)
    trusted = _trusted(key)
    try:
        verdict = verify_text(text, trusted)
    except ValueError as exc:
        raise CliError(f"{file}: not a JSON document ({exc})", 2) from None
    if as_json:
        out.as_json({"file": str(file), **verdict.to_dict()})
    elif verdict.valid:
        out.line(f"valid: {verdict.reason}")
    else:
        where = ", ".join(part for part in (
            verdict.field, f"step {verdict.step}" if verdict.step else None) if part)
        out.line(f"broken at link {verdict.link}" + (f" ({where})" if where else "")
                 + f": {verdict.reason}")
    if not verdict.valid:
        raise typer.Exit(1)
