"""``resources/list`` over every tldr page as a protocol: each page of the listing timed
through the official MCP client (in memory, handshake era), median and p95 per page beside
the first page (the baseline: the built-ins and the first titles, no cursor to decode).
The goal is at most 50 ms per page.

    .venv/bin/python bench/resources_list.py                  # all 7,425 pages, SQLite
    .venv/bin/python bench/resources_list.py --pages 1000 --passes 5
    .venv/bin/python bench/resources_list.py --database-url postgresql://…

The pages are minted once per run into a temporary store, without an embedding model
(the listing reads no vectors) and without the advisory duplicate check."""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from typing import Any

import anyio
import numpy as np
from mcp import Client
from rich.console import Console
from workload import load_pages, protocol_markdown

from kairos.cli.output import progress
from kairos.cli.protocols import MINT_BATCH
from kairos.config import load_settings
from kairos.domain.markdown import title_key
from kairos.domain.requests import MintMany
from kairos.mcp import ServiceRef, build_server, local_identity
from kairos.service import Caller, Kairos
from kairos.service.wiring import open_service, settle

GOAL_MS = 50.0


def mint_pages(k: Kairos, limit: int | None, console: Console) -> int:
    """Every tldr page (or the first ``limit``) as a protocol, titled by name, or by id
    when the name is taken."""

    pages = load_pages()[:limit]
    seen: set[str] = set()
    docs = []
    for page in pages:
        title = page.name if title_key(page.name) not in seen else page.id
        seen.add(title_key(title))
        docs.append(protocol_markdown(page, title=title))
    k.search_engine.duplicates.check = lambda *_, **__: {  # type: ignore[method-assign]
        "duplicates": [], "warnings": []}

    with progress("Minting tldr pages", len(docs)) as update:
        for i in range(0, len(docs), MINT_BATCH):
            chunk = docs[i:i + MINT_BATCH]
            k.mint_many(MintMany(markdown_docs=chunk, force_update=True), Caller())
            update(advance=len(chunk))
    console.print(f"minted {len(docs)} protocols")
    return len(docs)


async def list_all(server: Any) -> tuple[list[float], int]:
    """One pass over the whole listing: each page's round trip in seconds, and the items."""
    took, items, cursor = [], 0, None
    async with Client(server, mode="legacy") as client:
        while True:
            started = time.perf_counter()
            page = await client.list_resources(cursor=cursor)
            took.append(time.perf_counter() - started)
            items += len(page.resources)
            cursor = page.next_cursor
            if cursor is None:
                return took, items


def ms(values: list[float], q: float) -> float:
    return round(float(np.percentile(np.asarray(values) * 1000, q)), 2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=None, help="tldr pages (default: all)")
    parser.add_argument("--passes", type=int, default=3, help="walks through the listing")
    parser.add_argument("--database-url", default=None, help="PostgreSQL instead of SQLite")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    console = Console(stderr=True)
    with tempfile.TemporaryDirectory(prefix="kairos-bench-") as home:
        env = {"KAIROS_HOME": home, "KAIROS_EMBEDDER": "none"}
        if args.database_url:
            env["KAIROS_DATABASE_URL"] = args.database_url
        settings = load_settings(env=env)
        k = open_service(settings, background=False)
        try:
            minted = mint_pages(k, args.pages, console)
            k.close()  # listed by a server started on the store, as after a restart
            k = open_service(settings, background=False)
            server = build_server(ServiceRef.of(k), limits=k.limits,
                                  identify=local_identity("default", "bench"))
            settle()  # as a server does once it has started
            anyio.run(list_all, server)  # warm-up: connections, statement caches
            first, rest, items = [], [], 0
            for _ in range(args.passes):
                took, items = anyio.run(list_all, server)
                first.append(took[0])
                rest += took[1:]
        finally:
            k.close()
    figures = {
        "backend": "postgresql" if args.database_url else "sqlite", "protocols": minted,
        "items_listed": items, "pages_per_pass": len(rest) // args.passes + 1,
        "passes": args.passes,
        "first_page_median_ms": round(statistics.median(first) * 1000, 2),
        "page_median_ms": ms(rest, 50), "page_p95_ms": ms(rest, 95),
        "page_max_ms": ms(rest, 100), "goal_ms": GOAL_MS,
    }
    figures["median_vs_first"] = round(figures["page_median_ms"]
                                       / figures["first_page_median_ms"], 2)
    figures["goal_met"] = figures["page_max_ms"] <= GOAL_MS  # every page
    if args.json:
        print(json.dumps(figures))
        return
    for key, value in figures.items():
        print(f"{key:>22}  {value}")


if __name__ == "__main__":
    main()
