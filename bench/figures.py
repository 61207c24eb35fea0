"""The measurements. Each figure takes its "compared to what" in the same run, right next
to it: search beside its floor (query embedding + raw vector scan), runs over HTTP beside
the same runs in process, `kairos mcp` cold start beside the smallest MCP server, peak RSS
beside a server with an empty store."""

from __future__ import annotations

import itertools
import sqlite3
import sys
import time
from contextlib import closing
from pathlib import Path
from typing import Any

import anyio
import httpx2
import numpy as np
from corpus import Corpus, open_kairos
from harness import ROOT, http_client, kairos_env, load_now, mcp_http, servers, stats
from mcp import ClientSession, StdioServerParameters, stdio_client
from search_quality import BM25, _rank, baseline_doc, metrics

from kairos.search.embedders import LocalEmbedder
from kairos.service import Kairos

WARMUP = 5
RUN_STEPS = 10
RUN_PROTOCOL = "# Bench: release checklist\n\nA ten-step run for the benchmark.\n\n" + "".join(
    f"## Check part {i}\n\nCheck part {i} of the release.\n\nPROOF OF WORK: echo part-{i}\n\n"
    for i in range(1, RUN_STEPS + 1))


def ratio(a: dict[str, float], b: dict[str, float]) -> float:
    return round(a["p50_ms"] / b["p50_ms"], 2) if b.get("p50_ms") else float("nan")


# --- search ----------------------------------------------------------------------------------

def corpus_vectors(db: Path, kind: str) -> np.ndarray:
    """Every stored vector of a kind, as the raw matrix the floor scans."""
    with closing(sqlite3.connect(db)) as conn:
        rows = conn.execute("SELECT v.vector FROM search_vectors v JOIN search_docs d "
                            "ON d.rid = v.rid WHERE d.kind = ?", (kind,)).fetchall()
    return np.vstack([np.frombuffer(r[0], dtype=np.float32) for r in rows])


def scan(matrix: np.ndarray, query: np.ndarray, top: int = 10) -> np.ndarray:
    scores = matrix @ query
    return np.argpartition(-scores, top)[:top] if len(scores) > top else scores


class Floor:
    """The query's embedding alone and the raw vector scan alone."""

    def __init__(self, model: LocalEmbedder, matrix: np.ndarray | None) -> None:
        self.model, self.matrix = model, matrix
        self.embed: list[float] = []
        self.scan: list[float] = []

    def measure(self, query: str) -> None:
        started = time.perf_counter()
        vector = self.model.embed([query])[0]
        self.embed.append(time.perf_counter() - started)
        if self.matrix is not None:
            started = time.perf_counter()
            scan(self.matrix, vector)
            self.scan.append(time.perf_counter() - started)

    def figures(self) -> dict[str, Any]:
        total = [a + b for a, b in zip(self.embed, self.scan, strict=False)] or self.embed
        return {"embed": stats(self.embed), "scan": stats(self.scan), "floor": stats(total)}


async def http_samples(url: str, qs: list[str]) -> tuple[list[float], int]:
    """kairos_search over MCP, one query after another, after a warm-up."""
    samples, errors = [], 0
    async with mcp_http(url) as session:
        for i, q in enumerate([*qs[:WARMUP], *qs]):
            started = time.perf_counter()
            result = await session.call_tool("kairos_search", {"query": q})
            if i >= WARMUP:
                samples.append(time.perf_counter() - started)
                errors += bool(result.is_error)
    return samples, errors


def search_samples(url: str | None, qs: list[str], k: Kairos | None, floor: Floor | None,
                   *, entries: bool = False) -> dict[str, Any]:
    """kairos_search over MCP for every query; then, per query in turn, the same search in
    process and its floor. The server's queries run apart from this process's: the idle
    model threads of one process slow the other down on a small machine."""
    out: dict[str, Any] = {"queries": len(qs)}
    if url is not None:
        http, errors = anyio.run(http_samples, url, qs)
        out |= {"http": stats(http), "errors": errors}
    if k is not None:
        local = []
        for i, q in enumerate([*qs[:WARMUP], *qs]):
            started = time.perf_counter()
            if entries:
                k.search_entries({"query": q, "types": ["manual"], "snippet_len": 320},
                                 session_id="bench-unified")
            else:
                k.search(q)
            if i >= WARMUP:
                local.append(time.perf_counter() - started)
                if floor is not None:
                    floor.measure(q)
        out["in_process"] = stats(local)
    if floor is not None:
        out |= floor.figures()
        for side in ("http", "in_process"):
            if side in out:
                out[f"{side}_over_floor"] = ratio(out[side], out["floor"])
    out["load"] = load_now()
    return out


def search(home: Path, model: LocalEmbedder, qs: list[str], logs: Path, *,
           vectors: np.ndarray | None, database_url: str | None = None,
           in_process: bool = True) -> dict[str, Any]:
    """kairos_search over MCP on a `kairos serve` of ``home`` (or of the database), in
    process, and the floor; then the server's peak RSS."""
    k = open_kairos(home, model, database_url) if in_process else None
    floor = Floor(model, vectors) if vectors is not None else None
    try:
        with servers(home, database_url=database_url, logs=logs) as [server]:
            out = search_samples(server.url, qs, k, floor)
            out["rss_peak_mb"] = server.peak_rss_mb()
    finally:
        if k is not None:
            k.close()
    return out


def unified_search(corpus: Corpus, model: LocalEmbedder, qs: list[str]) -> dict[str, Any]:
    """search_entries over manuals, with snippets and a session, beside its floor."""
    k = open_kairos(corpus.home, model)
    try:
        floor = Floor(model, corpus_vectors(corpus.db, "manual"))
        out = search_samples(None, qs, k, floor, entries=True)
        sample = k.search_entries({"query": qs[0], "types": ["manual"]},
                                  session_id="bench-unified")
        out["session_applied"] = sample["session_applied"]
        out["snippets"] = all(r.get("snippet") for r in sample["results"])
    finally:
        k.close()
    return out


# --- retrieval quality (bench/search_quality.py's task and baselines) -----------------------

class Quality:
    """recall@1, recall@5 and MRR@10 of kairos_search beside BM25 and MiniLM cosine over
    the same documents, with search_quality.py's code. Baseline vectors are computed once
    for the largest corpus and sliced for the smaller (nested) ones."""

    def __init__(self, model: LocalEmbedder) -> None:
        self.model = model
        self.doc_vectors = np.zeros((0, model.dim), dtype=np.float32)

    def measure(self, corpus: Corpus, qs: list[tuple[int, str]]) -> dict[str, Any]:
        k = open_kairos(corpus.home, self.model)
        try:
            kairos_ranks, latency = [], []
            for i, q in qs:
                started = time.perf_counter()
                choices = k.search(q)["choices"]
                latency.append(time.perf_counter() - started)
                found = [corpus.uris.get(c["uri"]) for c in choices if c["role"] == "match"]
                kairos_ranks.append(found.index(i) + 1 if i in found else None)
        finally:
            k.close()
        docs = [baseline_doc(it.page) for it in corpus.items]
        bm25 = BM25(docs)
        bm25_ranks = [_rank(np.argsort(-bm25.scores(q)), i) for i, q in qs]
        if len(self.doc_vectors) < len(docs):
            extra = self.model.embed(docs[len(self.doc_vectors):])
            self.doc_vectors = np.vstack([self.doc_vectors, extra])
        qvec = self.model.embed([q for _, q in qs])
        sims = qvec @ self.doc_vectors[:len(docs)].T
        mini_ranks = [_rank(np.argsort(-sims[j]), i) for j, (i, _) in enumerate(qs)]
        return {"queries": len(qs), "documents": len(docs), "methods": {
            "BM25 (k1=1.5, b=0.75, stop words)": metrics(bm25_ranks),
            "all-MiniLM-L6-v2 cosine": metrics(mini_ranks),
            "KAIROS kairos_search": metrics(kairos_ranks)}, "search_ms": stats(latency)}


# --- runs ------------------------------------------------------------------------------------

def shell_ok(challenge: dict[str, Any]) -> dict[str, Any]:
    return {"type": "shell", "nonce": challenge["nonce"], "proof_hash": challenge["proof_hash"],
            "shell": {"exit_code": 0, "stdout": "", "stderr": "", "duration_seconds": 0.1}}


def mint_run_protocol(url: str) -> list[str]:
    r = httpx2.post(f"{url}/api/v1/protocols", json={"markdown_doc": RUN_PROTOCOL,
                                                     "force_update": True}, timeout=120)
    r.raise_for_status()
    return [s["uri"] for s in r.json()["items"][0]["steps"]]


async def agents(urls: list[str], steps: list[str], n: int, seconds: float) -> dict[str, Any]:
    """``n`` agents, each running the protocol over and over (begin, next × 9, attest) over
    REST until ``seconds`` have passed; agent i's call j goes to replica (i + j) mod r."""
    nexts: list[float] = []
    runs: list[float] = []
    failures: list[str] = []
    deadline = time.monotonic() + seconds

    async with http_client() as http:
        async def agent(i: int) -> None:
            hops = itertools.count(i)  # the replica of each call, in turn
            headers = {"X-CHL-Session": f"agent-{i}"}

            async def call(path: str, body: dict[str, Any]) -> dict[str, Any]:
                url = urls[next(hops) % len(urls)]
                r = await http.post(f"{url}/api/v1/runs{path}", json=body, headers=headers)
                r.raise_for_status()
                data = dict(r.json())
                if "error_code" in data:
                    raise RuntimeError(f"{path}: {data['error_code']}")
                return data

            while time.monotonic() < deadline:
                started = time.perf_counter()
                try:
                    r = await call("/begin", {"uri": steps[0]})
                    for uri in steps[1:]:
                        t0 = time.perf_counter()
                        r = await call("/next", {"uri": uri,
                                                 "solution": shell_ok(r["challenge"])})
                        nexts.append(time.perf_counter() - t0)
                    await call("/attest", {"uri": steps[-1], "outcome": "success",
                                           "message": "bench run",
                                           "solution": shell_ok(r["challenge"])})
                    runs.append(time.perf_counter() - started)
                except (httpx2.HTTPError, RuntimeError, KeyError) as exc:
                    failures.append(f"{type(exc).__name__}: {exc}"[:200])

        started = time.perf_counter()
        async with anyio.create_task_group() as tg:
            for i in range(n):
                tg.start_soon(agent, i)
        elapsed = time.perf_counter() - started
    calls = len(nexts) + 2 * len(runs)
    return {"agents": n, "seconds": round(elapsed, 2), "next": stats(nexts),
            "next_per_second": round(len(nexts) / elapsed, 1),
            "calls_per_second": round(calls / elapsed, 1), "run": stats(runs),
            "runs": len(runs), "failures": len(failures), "first_failure": failures[:1],
            "load": load_now()}


def runs_over_http(urls: list[str], levels: list[int], seconds: float) -> dict[str, Any]:
    steps = mint_run_protocol(urls[0])
    anyio.run(agents, urls, steps, 1, min(seconds, 2.0))  # warm-up
    return {"replicas": len(urls), "steps": len(steps), "levels": {
        n: anyio.run(agents, urls, steps, n, seconds) for n in levels}}


def runs_in_process(home: Path, model: LocalEmbedder, count: int) -> dict[str, Any]:
    """The same run, sequentially, through Kairos in this process (no HTTP)."""
    k = open_kairos(home, model)
    nexts, runs = [], []
    try:
        steps = [s["uri"] for s in k.mint(RUN_PROTOCOL, force_update=True)["items"][0]["steps"]]
        for n in range(count + 1):
            started = time.perf_counter()
            r = k.begin(steps[0])
            for uri in steps[1:]:
                t0 = time.perf_counter()
                r = k.next(uri, shell_ok(r["challenge"]))
                nexts.append(time.perf_counter() - t0)
            k.attest(steps[-1], "success", "bench run", solution=shell_ok(r["challenge"]))
            if n:  # the first run warms up
                runs.append(time.perf_counter() - started)
    finally:
        k.close()
    nexts = nexts[len(steps) - 1:]
    return {"next": stats(nexts), "run": stats(runs), "runs": len(runs),
            "next_per_second": round(len(nexts) / sum(nexts), 1), "load": load_now()}


# --- cold start ------------------------------------------------------------------------------

async def _cold(params: StdioServerParameters, query: str | None, log: Path) -> list[float]:
    with log.open("a") as errlog:
        started = time.perf_counter()
        async with stdio_client(params, errlog=errlog) as (r, w), ClientSession(r, w) as s:
            await s.initialize()
            await s.list_tools()
            out = [time.perf_counter() - started]
            if query:
                result = await s.call_tool("kairos_search", {"query": query})
                if result.is_error:
                    raise RuntimeError(f"kairos_search failed: {result.structured_content}")
                out.append(time.perf_counter() - started)
    return out


def cold_start(home: Path, query: str, repeats: int, log: Path) -> dict[str, Any]:
    """Process start → tools/list answered, and → first kairos_search answered, for
    `kairos mcp` (stdio) on a corpus, beside the smallest MCP server."""
    kairos = StdioServerParameters(command=sys.executable, args=["-m", "kairos.cli.main", "mcp"],
                                   cwd=str(ROOT), env=kairos_env(home))
    floor = StdioServerParameters(command=sys.executable,
                                  args=[str(ROOT / "bench" / "floor_server.py")], cwd=str(ROOT))
    lists, searches, floors = [], [], []
    for _ in range(repeats):  # interleaved, so both see the same load
        t_list, t_search = anyio.run(_cold, kairos, query, log)
        lists.append(t_list)
        searches.append(t_search)
        floors.extend(anyio.run(_cold, floor, None, log))
    out = {"repeats": repeats, "tools_list": stats(lists), "first_search": stats(searches),
           "floor_tools_list": stats(floors), "load": load_now()}
    out["tools_list_over_floor"] = ratio(out["tools_list"], out["floor_tools_list"])
    return out
