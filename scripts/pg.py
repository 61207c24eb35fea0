"""Start or stop a throwaway PostgreSQL 16 (with pgvector) from the pgserver package.

    python scripts/pg.py start DIR   # prints a database URL; the server keeps running
    python scripts/pg.py stop DIR

Keep DIR short and outside /root (e.g. under /dev/shm): the socket lives inside it.
"""

from __future__ import annotations

import os
import sys
import warnings


def main() -> None:
    action, root = sys.argv[1], sys.argv[2]
    pgdata = os.path.join(root, "data")
    runtime = os.path.join(root, "run")
    os.makedirs(runtime, exist_ok=True)
    os.environ.setdefault("XDG_RUNTIME_DIR", runtime)
    warnings.simplefilter("ignore")
    import pgserver

    if action == "start":
        server = pgserver.get_server(pgdata, cleanup_mode=None)
        server.psql("CREATE EXTENSION IF NOT EXISTS vector;")
        print(server.get_uri())
    elif action == "stop":
        server = pgserver.get_server(pgdata, cleanup_mode="stop")
        server.cleanup()
    else:
        raise SystemExit(f"unknown action {action!r}: start or stop")


if __name__ == "__main__":
    main()
