"""The server's signing key and the keys it publishes, read once at start from the
settings: the private key (KAIROS_SIGNING_KEY, or made in the data directory on first
start, owner-only) and the earlier public keys still trusted after a rotation
(KAIROS_PUBLISHED_KEYS). A configured file that is missing or holds no key stops the start
with one line naming the setting."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from ..config import ConfigError, Settings, source_name
from ..domain import keys
from ..domain.errors import StorageError, ValidationError
from ..store import keyfile
from ..store.faults import fault_of


@dataclass(frozen=True)
class Signing:
    """The key that signs bundles, and every public key a bundle may carry the id of."""

    key: Ed25519PrivateKey
    earlier: tuple[Ed25519PublicKey, ...] = ()

    @property
    def kid(self) -> str:
        return keys.key_id(self.key)

    def trusted(self) -> dict[str, Ed25519PublicKey]:
        """The published keys by kid, the current one first."""
        found = {self.kid: self.key.public_key()}
        for public in self.earlier:
            found.setdefault(keys.key_id(public), public)
        return found

    def key_set(self) -> keys.KeySet:
        """What ``/.well-known/kairos-keys.json`` serves."""
        return keys.key_set(self.trusted().values())


def _problem(settings: Settings, key: str, path: Path, why: str) -> ConfigError:
    where = source_name(key, settings.sources.get(key, "default"))
    return ConfigError([f"{where}={str(path)!r}: {why}"])


def open_signing(settings: Settings, *, create: bool = True) -> Signing:
    """The signing key of ``settings``: the configured file, or the data directory's,
    made there first when ``create`` (``keyfile.load_or_create``). ``ConfigError`` (one
    line) when a key file is unreadable or holds no Ed25519 key, or a configured one is
    missing; ``FileNotFoundError`` when the data directory has none and not ``create``."""
    path, configured = settings.signing_key_path, bool(settings.signing_key)
    try:
        key = (keyfile.load_or_create(path) if create and not configured
               else keyfile.read_key(path))
    except ValidationError:
        raise _problem(settings, "signing_key", path, "expected an Ed25519 private key in PEM "
                       "(PKCS#8, unencrypted)") from None
    except FileNotFoundError:
        if not configured:
            raise
        raise _problem(settings, "signing_key", path, "no such file") from None
    except OSError as exc:
        code = None if configured else fault_of(exc)
        if code is not None:  # the data directory's fault: full, read-only
            raise StorageError(code, str(path), exc.strerror or "") from None
        raise _problem(settings, "signing_key", path, f"cannot read it ({exc.strerror or exc})"
                       ) from None
    earlier: tuple[Ed25519PublicKey, ...] = ()
    published = settings.published_keys_path
    if published is not None:
        try:
            earlier = tuple(keys.public_keys(published.read_bytes()).values())
        except OSError as exc:
            raise _problem(settings, "published_keys", published,
                           f"cannot read it ({exc.strerror or exc})") from None
        except ValidationError as exc:
            raise _problem(settings, "published_keys", published,
                           f"expected a key set JSON, a JWK or a PEM public key "
                           f"({exc.field}: {exc.expected})") from None
    return Signing(key, earlier)


__all__ = ["Signing", "open_signing"]
