"""The HTTP floor of ``bench/next_http.py``: the smallest app on the server stack of
``kairos serve`` — FastAPI under uvicorn with the same event loop, HTTP parser and listening
socket settings — with one trivial JSON route, ``POST /floor``, that reads the body and
answers ``{"ok": true}``. No store, no model, no middleware.

    python bench/floor_http.py PORT [WORKERS]
"""

from __future__ import annotations

import socket
import sys
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fastapi import FastAPI, Request

from kairos.api.app import TELEMETRY_OFF
from kairos.server import listen_all, uvicorn_options

app = FastAPI(docs_url=None, redoc_url=None, openapi_url=None,
              telemetry=TELEMETRY_OFF)  # as kairos serve


@app.post("/floor")
async def floor(request: Request) -> dict[str, bool]:
    await request.body()
    return {"ok": True}


@app.get("/health")
async def health() -> dict[str, str]:
    return {"status": "healthy"}


def main() -> None:
    import uvicorn

    from kairos.workers import supervise

    port = int(sys.argv[1])
    workers = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    socks = listen_all("127.0.0.1", port, workers)

    def run(sock: socket.socket, ready: Callable[[], None]) -> None:
        ready()
        config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning",
                                **uvicorn_options())
        uvicorn.Server(config).run(sockets=[sock])

    if workers == 1:
        run(socks[0], lambda: None)
    else:
        supervise(socks, run, say=lambda _: None, banner="floor")


if __name__ == "__main__":
    main()
