"""``kairos serve --workers N``: N server processes on one address, and their supervisor.

The supervisor forks each worker before anything heavy is loaded (no store, no model, no
threads in it yet); each worker builds its own service, loads the model and serves its
listening socket. Everything that must hold across processes (single-use nonces, one
protocol per title, the duplicate check's write counter, the search index's version) is
already decided by the database, as it is between replicas.

A worker that exits while the others serve is reported and replaced; one that fails
before it is ready stops them all (a bad configuration would otherwise loop). SIGINT or
SIGTERM stops every worker gracefully, within ``STOP_SECONDS``; a second signal kills them.
A server of one process (``serve_alone``) is stopped by SIGTERM the way a worker is.
"""

from __future__ import annotations

import os
import select
import signal
import socket
import sys
import time
import traceback
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass
from types import FrameType

from .domain.errors import ServeError

STOP_SECONDS = 30.0
_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class _Stop(Exception):
    """SIGINT or SIGTERM reached the supervisor."""


def _on_signal(signum: int, frame: FrameType | None) -> None:
    raise _Stop(signum)


_serving = False  # in a worker: uvicorn has taken over SIGINT and SIGTERM


def _worker_signal(signum: int, frame: FrameType | None) -> None:
    """A worker stopped while starting unwinds (its service is closed). Once it serves,
    uvicorn handles the signal and, after its graceful shutdown, raises it again: that
    echo is ignored, and the worker returns from serving as usual."""
    if not _serving:
        raise SystemExit(0)


def _now_serving() -> None:
    global _serving
    _serving = True


@dataclass
class _Worker:
    pid: int
    ready_fd: int  # EOF on it: the worker has exited
    sock: socket.socket
    ready: bool = False


def _describe(status: int) -> str:
    if os.WIFSIGNALED(status):
        return f"killed by {signal.Signals(os.WTERMSIG(status)).name}"
    return f"exit code {os.waitstatus_to_exitcode(status)}"


def _start(sock: socket.socket, run: Callable[[socket.socket, Callable[[], None]], None],
           others: list[int | socket.socket]) -> _Worker:
    """Fork a worker serving ``sock``; it closes ``others`` (the other workers' pipes and
    sockets), which are not its own."""
    read_fd, write_fd = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()  # or the worker would print what the supervisor has buffered
    pid = os.fork()
    if pid:
        os.close(write_fd)
        return _Worker(pid, read_fd, sock)
    code = 1  # the worker, from here on
    try:
        for sig in _SIGNALS:
            signal.signal(sig, _worker_signal)
        os.close(read_fd)
        for other in others:
            if isinstance(other, socket.socket):
                other.close()
            else:
                os.close(other)

        def ready() -> None:
            _now_serving()
            os.write(write_fd, b"1")

        run(sock, ready)
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException as exc:
        sys.stderr.write(f"error: worker {os.getpid()}: {type(exc).__name__}: {exc}\n")
        if os.environ.get("KAIROS_TRACEBACK"):
            traceback.print_exc()
    finally:
        sys.stderr.flush()
        sys.stdout.flush()
        os._exit(code)


def serve_alone(sock: socket.socket,
                run: Callable[[socket.socket, Callable[[], None]], None],
                ready: Callable[[], None]) -> None:
    """One server process without a supervisor, stopped by SIGTERM as a worker is: before
    it serves, the signal unwinds it (its service closed); once uvicorn serves, the signal
    uvicorn raises again after its graceful shutdown is ignored, so that ``run`` returns and
    closes the service (the default action would end the process first, leaving the store
    unclosed and the parser's worker process behind). SIGINT keeps KeyboardInterrupt."""
    global _serving
    previous = signal.signal(signal.SIGTERM, _worker_signal)

    def serving() -> None:
        _now_serving()
        ready()

    try:
        run(sock, serving)
    finally:
        _serving = False
        signal.signal(signal.SIGTERM, previous)


def supervise(socks: list[socket.socket],
              run: Callable[[socket.socket, Callable[[], None]], None], *,
              say: Callable[[str], None], banner: str) -> None:
    """Run one worker per socket until SIGINT or SIGTERM; ``run(sock, ready)`` serves in a
    worker and calls ``ready()`` when it is about to take requests. Raises ServeError when
    a worker fails to start."""
    workers: dict[int, _Worker] = {}  # by ready_fd

    def start(sock: socket.socket) -> None:
        worker = _start(sock, run, [*workers, *(s for s in set(socks) if s is not sock)])
        workers[worker.ready_fd] = worker

    previous = {sig: signal.signal(sig, _on_signal) for sig in _SIGNALS}
    try:
        for sock in socks:
            start(sock)
        announced = False
        while True:
            readable, _, _ = select.select(list(workers), [], [])
            for fd in readable:
                worker = workers[fd]
                if os.read(fd, 1):
                    worker.ready = True
                    if not announced and all(w.ready for w in workers.values()):
                        announced = True
                        pids = ", ".join(str(w.pid) for w in workers.values())
                        say(f"{banner}: pids {pids}")
                    continue
                del workers[fd]
                os.close(fd)
                how = _describe(os.waitpid(worker.pid, 0)[1])
                if not worker.ready:
                    raise ServeError(f"worker {worker.pid} failed to start ({how})",
                                     exit_code=1)
                say(f"worker {worker.pid} stopped unexpectedly ({how}); starting another")
                start(worker.sock)
    except _Stop:
        pass
    finally:
        _stop_all(workers)
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _stop_all(workers: dict[int, _Worker]) -> None:
    """SIGTERM to every worker, then wait for them (bounded); a second signal or the
    deadline kills those still running."""
    for worker in workers.values():
        _kill(worker.pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_SECONDS
    try:
        while workers:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            readable, _, _ = select.select(list(workers), [], [], left)
            for fd in readable:
                if not os.read(fd, 1):
                    worker = workers.pop(fd)
                    os.close(fd)
                    os.waitpid(worker.pid, 0)
    except _Stop:
        pass
    for fd, worker in list(workers.items()):
        _kill(worker.pid, signal.SIGKILL)
        os.waitpid(worker.pid, 0)
        os.close(fd)
    workers.clear()


def _kill(pid: int, sig: int) -> None:
    with suppress(ProcessLookupError):
        os.kill(pid, sig)
