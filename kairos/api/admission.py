"""Admission: how many requests one server process serves at once, and what the others do.

At most ``limit`` requests are served at once. A request that finds them all taken waits
its turn in a queue, first come first served, for at most ``wait`` seconds; only when the
queue already holds ``queue`` requests, or the wait runs out, is it shed: 503 with
Retry-After. A burst is absorbed instead of refused, and the requests served stay fast
because the queue is short (its wait is bounded, so its length is too).
"""

from __future__ import annotations

import math

import anyio


class Admission:
    def __init__(self, limit: int, queue: int, wait: float) -> None:
        self.limit = limit
        self.queue = queue
        self.wait = wait
        self._slots = anyio.Semaphore(limit)  # FIFO: waiters are woken in arrival order
        self.waiting = 0

    async def enter(self) -> int | None:
        """Take a slot, waiting for one if need be: None once taken. Else the request is
        shed, no slot taken, and this is the Retry-After to answer it with: 1 s when the
        queue was full (it drains well within its wait), the wait itself when that ran
        out (the server is slower than it should be)."""
        if self.waiting == 0 and self._slots.value > 0:
            self._slots.acquire_nowait()  # a free slot and nobody ahead: take it now
            return None
        if self.waiting >= self.queue:
            return 1
        self.waiting += 1
        try:
            with anyio.move_on_after(self.wait):
                await self._slots.acquire()
                return None
            return max(1, math.ceil(self.wait))
        finally:
            self.waiting -= 1

    def leave(self) -> None:
        self._slots.release()


__all__ = ["Admission"]
