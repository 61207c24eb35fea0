"""SQLite's one writer across server processes (``store.serial.WriterLock``): a worker's
writer waits for another worker's on the lock file, holding no connection, and goes on
once that one has committed; a single process leaves the waiting to SQLite."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from sqlalchemy import text

from kairos.store.db import Store


def _wait_for(check: object, seconds: float = 5.0) -> None:
    deadline = time.monotonic() + seconds
    while not check() and time.monotonic() < deadline:  # type: ignore[operator]
        time.sleep(0.01)


@pytest.mark.parametrize(("workers", "holds_a_connection"), [(2, 0), (1, 1)])
def test_a_second_processes_writer_waits_its_turn(tmp_path: Path, workers: int,
                                                  holds_a_connection: int) -> None:
    url = f"sqlite:///{tmp_path / 'kairos.db'}"
    # Two stores on one file, each with its own descriptor of the lock file: as far as the
    # locks go, two processes.
    first, second = Store(url, workers=workers), Store(url, workers=workers)
    inside, release, wrote = threading.Event(), threading.Event(), threading.Event()

    def hold() -> None:
        with first.write() as repo:
            repo.conn.execute(text("INSERT INTO index_meta (key, value) VALUES ('a', '1')"))
            inside.set()
            release.wait(10)

    def follow() -> None:
        with second.write() as repo:
            value = repo.conn.execute(
                text("SELECT value FROM index_meta WHERE key = 'a'")).scalar()
            repo.conn.execute(text("INSERT INTO index_meta (key, value) VALUES ('b', :v)"),
                              {"v": value})
        wrote.set()

    holder = threading.Thread(target=hold)
    holder.start()
    assert inside.wait(10)
    follower = threading.Thread(target=follow)
    follower.start()
    try:
        _wait_for(lambda: second.engine.pool.checkedout() == holds_a_connection, 2.0)
        time.sleep(0.2)  # the follower has had time to get past its lock, were it free
        assert not wrote.is_set()
        # Several workers: the follower waits on the file lock with no connection of its
        # pool taken; one process: it waits inside SQLite, in BEGIN IMMEDIATE.
        assert second.engine.pool.checkedout() == holds_a_connection
    finally:
        release.set()
        holder.join(10)
        follower.join(30)
    assert wrote.is_set()
    with first.read() as repo:  # the follower read what the holder committed
        assert repo.conn.execute(
            text("SELECT value FROM index_meta WHERE key = 'b'")).scalar() == "1"
    first.close()
    second.close()
