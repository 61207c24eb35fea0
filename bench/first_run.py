"""A new user's first minutes, measured: fresh clone → ``./scripts/serve`` → first search
answered; the size of the venv it made (and whether torch is in it); the server's memory
on an empty store; ``kairos search`` from a fresh shell; ``kairos mint DIR`` with vectors.

    python bench/first_run.py [--pages N] [--json FILE]

Runs against a clone of this checkout's HEAD in a temporary directory, on a free port of
127.0.0.1, with its own KAIROS_HOME. pip uses this machine's cache and configuration, so
"fresh clone" means a fresh tree and venv, not an empty download cache.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx2

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))

from workload import load_pages, protocol_markdown  # noqa: E402


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def du(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file() and not f.is_symlink())


def rss_mb(pid: int) -> float:
    """Resident memory of a process and its children (the serve script execs kairos)."""
    total = 0
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            total += int(line.split()[1])
    return total / 1024


def first_search(clone: Path, home: Path, port: int) -> dict[str, Any]:
    env = {**os.environ, "KAIROS_HOME": str(home), "KAIROS_PORT": str(port)}
    started = time.perf_counter()
    proc = subprocess.Popen(["./scripts/serve"], cwd=clone, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    try:
        answer = None
        while answer is None:
            if proc.poll() is not None:
                raise SystemExit(f"serve exited: {proc.stderr.read().decode()[-2000:]}")
            try:
                r = httpx2.post(f"{url}/api/v1/protocols/search",
                               json={"query": "publish a new release"}, timeout=30)
                if r.status_code == 200:
                    answer = r.json()
            except httpx2.HTTPError:
                time.sleep(0.25)
        seconds = time.perf_counter() - started
        for _ in range(20):
            httpx2.post(f"{url}/api/v1/protocols/search", json={"query": "undo a git commit"},
                       timeout=30)
        rss = rss_mb(proc.pid)
    finally:
        proc.terminate()
        proc.wait(30)
    return {"seconds_to_first_search": round(seconds, 1), "server_rss_mb_empty": round(rss),
            "search_mode": answer.get("search_mode") if answer else None}


def cli_search(clone: Path, home: Path, repeat: int = 5) -> float:
    env = {**os.environ, "KAIROS_HOME": str(home)}
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        subprocess.run([str(clone / ".venv/bin/kairos"), "search", "publish a new release"],
                       env=env, check=True, capture_output=True)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def mint_dir(clone: Path, home: Path, pages: int) -> dict[str, Any]:
    docs = Path(tempfile.mkdtemp(prefix="kairos-mint-"))
    chosen = [p for p in load_pages() if p.platform == "common"][:pages]
    for i, page in enumerate(chosen):
        (docs / f"{i:05d}.md").write_text(protocol_markdown(page))
    env = {**os.environ, "KAIROS_HOME": str(home)}
    started = time.perf_counter()
    # Exit 1 when some files were refused (a near-copy of another page, say): counted below.
    minted = subprocess.run([str(clone / ".venv/bin/kairos"), "mint", str(docs)], env=env,
                            capture_output=True, text=True).stdout.count("kairos://mem/")
    seconds = time.perf_counter() - started
    out = subprocess.run([sys.executable, "-c", (
        "import json, sys; from kairos.service.wiring import open_service; from kairos.config "
        "import load_settings; k = open_service(load_settings(), background=False); "
        "print(json.dumps(k.search_engine.background.index_state())); k.close()")],
        env={**env, "PYTHONPATH": str(clone)}, check=True, capture_output=True, text=True)
    shutil.rmtree(docs, ignore_errors=True)
    state = json.loads(out.stdout)
    return {"pages": len(chosen), "minted": minted, "seconds": round(seconds, 1),
            "pages_per_second": round(len(chosen) / seconds, 1),
            "documents": state["documents"], "with_vectors": state["with_vectors"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=500, help="tldr pages for the mint")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="kairos-first-run-"))
    try:
        clone = work / "kairos"
        subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
        result: dict[str, Any] = {"load_avg": os.getloadavg()[0]}
        result |= first_search(clone, work / "home", free_port())
        venv = clone / ".venv"
        result["venv_mb"] = round(du(venv) / 1e6)
        result["torch_in_venv"] = any(venv.glob("lib/python*/site-packages/torch"))
        result["cli_search_seconds_empty"] = round(cli_search(clone, work / "home"), 2)
        result["mint_dir"] = mint_dir(clone, work / "home-mint", args.pages)
        result["cli_search_seconds_after_mint"] = round(cli_search(clone, work / "home-mint"), 2)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(result, indent=2))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
