"""The one place a service is put together from settings: its store (the data directory
made first), its embedder and every part (``Kairos``). The server, ``kairos mcp`` and the
command line each load the settings once and call ``open_service``."""

from __future__ import annotations

import ctypes
import gc

from ..config import Settings
from ..domain.errors import StorageError
from ..domain.ports import Embedder
from ..search.embedders import make_embedder
from ..store.db import Store, make_engine, migrate
from ..store.faults import fault_of
from .app import Kairos
from .signing import Signing, open_signing


def _make_home(settings: Settings) -> None:
    """An SQLite store's directory, made (one that cannot be is a ``StorageError`` naming
    its fault)."""
    if not settings.database_url:
        home = settings.home_path
        try:
            home.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            code = fault_of(exc)
            if code is None:
                raise
            raise StorageError(code, str(home), exc.strerror or "") from None


def migrate_store(settings: Settings) -> str | None:
    """Bring the schema of the store of ``settings`` to the newest version, without opening
    a service; the revision it is at."""
    _make_home(settings)
    engine = make_engine(settings.url)
    try:
        return migrate(engine)
    finally:
        engine.dispose()


def open_service(settings: Settings, *, embedder: Embedder | None = None,
                 background: bool = True, signing: Signing | None = None) -> Kairos:
    """The service of ``settings``. ``embedder`` replaces the configured one (a test's
    model); ``background`` starts the index drain and the run expiry (a server's; a
    one-shot command runs without, so that it never exits inside the model). The signing
    key is read (made on first start) before the store opens: a bad key file stops here."""
    _make_home(settings)
    signing = open_signing(settings) if signing is None else signing
    if embedder is None:
        embedder = make_embedder(settings.embedder, base_url=settings.openai_base_url,
                                 model=settings.openai_model, api_key=settings.openai_api_key)
    return Kairos(settings, Store(settings.url, workers=settings.workers), embedder,
                  background=background, signing=signing)


def settle() -> None:
    """Once a server has started: what start-up made (modules, the model, the service) is
    moved out of the collector's reach, so a full collection later walks only what
    requests made — without it one pass over a large store's listing met pauses of 60–90
    ms, one in a hundred pages (``bench/resources_list.py``) — and the heap start-up freed
    is handed back to the system (glibc keeps it mapped otherwise, about 9 MB)."""
    gc.collect()
    gc.freeze()
    trim = getattr(ctypes.CDLL(None), "malloc_trim", None)  # glibc only
    if trim is not None:
        trim(0)


__all__ = ["migrate_store", "open_service", "settle"]
