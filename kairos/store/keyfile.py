"""The server's signing key on disk: made on first use, owner-only, and read back on every
start (key ids, PEM and the published key set: ``kairos.domain.keys``)."""

from __future__ import annotations

import contextlib
import os
import secrets
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from ..domain import keys
from ..domain.errors import ValidationError


def generate_key() -> Ed25519PrivateKey:
    """A new Ed25519 key from the operating system's random source."""
    return keys.private_key(secrets.token_bytes(keys.SEED_BYTES))


def read_key(path: Path) -> Ed25519PrivateKey:
    """The key in ``path`` (PEM, PKCS#8, unencrypted); ``ValidationError`` naming the file
    when it holds none. ``OSError`` when it cannot be read."""
    data = path.read_bytes()
    try:
        return keys.private_key(data if len(data) != keys.SEED_BYTES else b"")
    except ValidationError:
        raise ValidationError("key", "an Ed25519 private key in PEM (PKCS#8, unencrypted)",
                              f"{path} holds no Ed25519 private key in PEM (PKCS#8, "
                              "unencrypted).") from None


def load_or_create(path: Path) -> Ed25519PrivateKey:
    """The key in ``path``, made there first when there is none. It is written whole to a
    file only its owner can read (mode 0600) and linked into place, so a reader never
    sees half a key and two servers starting at once end up with the same one."""
    if path.exists():
        return read_key(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    draft = path.with_name(f".{path.name}.{secrets.token_hex(8)}")
    fd = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(keys.private_pem(generate_key()))
            out.flush()
            os.fsync(out.fileno())
        with contextlib.suppress(FileExistsError):  # another server made it first: its
            os.link(draft, path)                     # key is the key
    finally:
        draft.unlink(missing_ok=True)
    return read_key(path)
