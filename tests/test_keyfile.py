"""The signing key on disk: made once, owner-only, the same key for every server that
starts at the same time."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import pytest

from kairos.domain import keys
from kairos.domain.errors import ValidationError
from kairos.store import keyfile


def test_the_key_is_made_once_with_owner_only_permissions(tmp_path: Path) -> None:
    path = tmp_path / "home" / "signing-key.pem"
    first = keyfile.load_or_create(path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert path.read_bytes() == keys.private_pem(first)
    assert keys.key_id(keyfile.load_or_create(path)) == keys.key_id(first)
    assert [p.name for p in path.parent.iterdir()] == ["signing-key.pem"]


def test_new_keys_differ() -> None:
    assert keys.key_id(keyfile.generate_key()) != keys.key_id(keyfile.generate_key())


def test_servers_starting_together_share_one_key(tmp_path: Path) -> None:
    path = tmp_path / "signing-key.pem"
    start, found = threading.Barrier(8), []

    def server() -> None:
        start.wait(timeout=30)
        found.append(keys.key_id(keyfile.load_or_create(path)))

    threads = [threading.Thread(target=server) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert len(found) == 8 and len(set(found)) == 1
    assert [p.name for p in tmp_path.iterdir()] == ["signing-key.pem"]


def test_a_file_that_holds_no_key_is_named(tmp_path: Path) -> None:
    path = tmp_path / "signing-key.pem"
    path.write_bytes(b"not a key")
    with pytest.raises(ValidationError) as caught:
        keyfile.load_or_create(path)
    assert str(path) in caught.value.message and caught.value.field == "key"
    path.write_bytes(os.urandom(32))  # a raw seed is not a key file
    with pytest.raises(ValidationError):
        keyfile.read_key(path)


def test_a_configured_key_is_read_as_given(tmp_path: Path) -> None:
    key = keys.private_key(bytes(range(32)))
    path = tmp_path / "configured.pem"
    path.write_bytes(keys.private_pem(key))
    assert keys.key_id(keyfile.read_key(path)) == keys.key_id(key)
