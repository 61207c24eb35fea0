"""Tables, goals and the scaling plot, from the results dictionary that run.py writes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

REAL_7K = 7425
TASK_SIZE = 4613


def ms(s: dict[str, Any] | None) -> str:
    """'p50 / p99' in milliseconds."""
    if not s or not s.get("n"):
        return "—"
    return f"{s['p50_ms']:.1f} / {s['p99_ms']:.1f}"


def num(value: Any, fmt: str = ".1f") -> str:
    return "—" if value is None else format(value, fmt)


def table(title: str, columns: list[str], rows: list[list[str]]) -> Table:
    t = Table(title=title, title_justify="left")
    for col in columns:
        t.add_column(col, justify="left" if col == columns[0] else "right")
    for row in rows:
        t.add_row(*row)
    return t


def tables(r: dict[str, Any]) -> list[Table]:
    out = []
    if r.get("mint"):
        out.append(table(
            "Bulk mint, local model (measured mints just before each size; p50 / p99 ms)",
            ["size", "mints", "protocols/s", "mint", "embedding alone", "embedding/s",
             "mint ÷ embedding"],
            [[str(size), str(m["mints"]), f"{m['per_second']:.1f}", ms(m["mint"]),
              ms(m["embedding"]), f"{m['embedding_per_second']:.1f}",
              f"{m['mint']['p50_ms'] / m['embedding']['p50_ms']:.1f}×"]
             for size, m in r["mint"].items()]))
    rows = []
    for key, s in r.get("search", {}).items():
        if "error" in s:
            rows.append([key, s["error"][:60]] + [""] * 8)
            continue
        rows.append([key, ms(s.get("http")), ms(s.get("in_process")), ms(s.get("embed")),
                     ms(s.get("scan")), ms(s.get("floor")),
                     f"{s.get('http_over_floor', float('nan')):.1f}×",
                     f"{s.get('in_process_over_floor', float('nan')):.1f}×",
                     num(s.get("rss_peak_mb"), ".0f"), num(s.get("load"), ".2f")])
    if rows:
        out.append(table(
            "kairos_search latency, p50 / p99 ms (HTTP = MCP streamable HTTP to kairos serve)",
            ["corpus", "HTTP", "in process", "embed q", "vector scan", "floor", "HTTP÷floor",
             "in-proc÷floor", "peak RSS MB", "load"], rows))
    if r.get("unified"):
        out.append(table(
            "search_entries over manuals (snippets, session), in process, p50 / p99 ms",
            ["manuals", "search_entries", "embed q", "vector scan", "floor", "÷ floor"],
            [[str(size), ms(u.get("in_process")), ms(u.get("embed")), ms(u.get("scan")),
              ms(u.get("floor")), f"{u.get('in_process_over_floor', float('nan')):.1f}×"]
             for size, u in r["unified"].items() if "error" not in u]))
    rows = []
    for name, b in r.get("runs", {}).items():
        if "error" in b:
            rows.append([name, b["error"][:60]] + [""] * 6)
            continue
        for n, lv in b.get("levels", {}).items():
            rows.append([name, str(n), f"{lv['next_per_second']:.1f}", ms(lv["next"]),
                         ms(lv["run"]), str(lv["runs"]), str(lv["failures"])])
        if "in_process" in b:
            ip = b["in_process"]
            rows.append([f"{name}, in process (baseline)", "1 (no HTTP)",
                         f"{ip['next_per_second']:.1f}", ms(ip["next"]), ms(ip["run"]),
                         str(ip["runs"]), "0"])
    if rows:
        out.append(table(
            "Protocol runs over REST /api/v1/runs (begin, next × 9, attest), p50 / p99 ms",
            ["store", "agents", "kairos_next/s", "next", "full run", "runs", "failures"], rows))
    if c := r.get("cold_start"):
        if "error" in c:
            out.append(table("Cold start", ["error"], [[c["error"]]]))
        else:
            out.append(table(
                f"Cold start of `kairos mcp` (stdio), {c['repeats']} starts, p50 / p99 ms",
                ["to", "kairos mcp", "smallest MCP server (floor)"],
                [["tools/list answered", ms(c["tools_list"]), ms(c["floor_tools_list"])],
                 ["first kairos_search answered", ms(c["first_search"]), "—"]]))
    rows = []
    for size, q in r.get("quality", {}).items():
        if "error" in q:
            continue
        for method, m in q["methods"].items():
            rows.append([f"{size} ({q['queries']} q)", method, f"{m['recall@1']:.3f}",
                         f"{m['recall@5']:.3f}", f"{m['mrr@10']:.3f}"])
    if rows:
        out.append(table("Retrieval quality, tldr describe → find (bench/search_quality.py)",
                         ["corpus", "method", "recall@1", "recall@5", "MRR@10"], rows))
    if r.get("goals"):
        out.append(table("Goals", ["goal", "target", "measured", "status"],
                         [[g["goal"], g["target"], g["measured"], g["status"]]
                          for g in r["goals"]]))
    return out


def _nearest(d: dict[Any, Any], want: int) -> tuple[Any, Any]:
    """The entry for ``want``, else the largest real size below it (with its key)."""
    real = {int(k): v for k, v in d.items() if str(k).isdigit() and int(k) <= REAL_7K
            and "error" not in v}
    if not real:
        return None, None
    key = want if want in real else max((k for k in real if k <= want), default=max(real))
    return key, real[key]


def goals(r: dict[str, Any]) -> list[dict[str, str]]:
    out = []

    def goal(name: str, target: str, measured: str | None, ok: bool | None,
             where: Any = None, want: int | None = None) -> None:
        note = f" (at {where}, not {want})" if want and where is not None and where != want else ""
        status = "not measured" if ok is None else ("met" if ok else "missed")
        out.append({"goal": name, "target": target, "measured": (measured or "—") + note,
                    "status": status})

    size, s = _nearest(r.get("search", {}), REAL_7K)
    h = (s or {}).get("http")
    goal("kairos_search over HTTP", "p50 ≤ 25 ms, p99 ≤ 60 ms",
         h and f"p50 {h['p50_ms']:.1f} ms, p99 {h['p99_ms']:.1f} ms",
         h and h["p50_ms"] <= 25 and h["p99_ms"] <= 60, size, REAL_7K)
    lv = r.get("runs", {}).get("sqlite", {}).get("levels", {}).get(16)
    goal("kairos_next, 16 agents, embedded store", "≥ 300/s",
         lv and f"{lv['next_per_second']:.1f}/s", lv and lv["next_per_second"] >= 300)
    size, m = _nearest(r.get("mint", {}), REAL_7K)
    goal("bulk mint, local model", "≥ 30/s", m and f"{m['per_second']:.1f}/s",
         m and m["per_second"] >= 30, size, REAL_7K)
    c = r.get("cold_start", {})
    t = c.get("tools_list")
    goal("tools/list after start", "≤ 1.5 s", t and f"p50 {t['p50_ms'] / 1000:.2f} s, "
         f"p99 {t['p99_ms'] / 1000:.2f} s", t and t["p50_ms"] <= 1500)
    size, s = _nearest(r.get("search", {}), REAL_7K)
    rss = (s or {}).get("rss_peak_mb")
    goal("server peak RSS", "≤ 700 MB", rss and f"{rss:.0f} MB", rss and rss <= 700,
         size, REAL_7K)
    size, q = _nearest(r.get("quality", {}), TASK_SIZE)
    k = (q or {}).get("methods", {}).get("KAIROS kairos_search")
    goal("recall@5, describe → find", "≥ 0.75", k and f"{k['recall@5']:.3f}",
         k and k["recall@5"] >= 0.75, size, TASK_SIZE)
    return out


def plot(r: dict[str, Any], path: Path) -> Path | None:
    """Search latency and peak RSS against corpus size (SQLite store)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        Console(stderr=True).print("matplotlib is not installed: no plot "
                                   "(pip install -e '.[dev]')")
        return None
    points = sorted((int(k), v) for k, v in r.get("search", {}).items()
                    if str(k).isdigit() and "http" in v)
    if not points:
        return None
    sizes = [p[0] for p in points]
    fig, (lat, mem) = plt.subplots(1, 2, figsize=(11, 4.2))
    for key, label, style in (("http", "MCP over HTTP", "o-"), ("in_process", "in process", "s-"),
                              ("floor", "floor: embed + scan", "^--")):
        lat.plot(sizes, [p[1][key]["p50_ms"] for p in points], style, label=f"{label} p50")
        if key == "http":
            lat.plot(sizes, [p[1][key]["p99_ms"] for p in points], "o:", label=f"{label} p99")
    lat.axhline(25, color="grey", lw=0.8, ls="--", label="goal p50 25 ms")
    lat.axhline(60, color="grey", lw=0.8, ls=":", label="goal p99 60 ms")
    lat.set(xscale="log", xlabel="protocols", ylabel="ms", title="kairos_search latency")
    lat.legend(fontsize=8, loc="best")
    mem.plot(sizes, [p[1].get("rss_peak_mb") or 0 for p in points], "o-", label="kairos serve")
    empty = r.get("rss_empty", {}).get("rss_peak_mb")
    if empty:
        mem.axhline(empty, color="tab:green", lw=1, ls="--", label="same server, empty store")
    mem.axhline(700, color="grey", lw=0.8, ls=":", label="goal 700 MB")
    mem.set(xscale="log", xlabel="protocols", ylabel="MB", title="peak RSS (VmHWM)")
    mem.set_ylim(bottom=0)
    mem.legend(fontsize=8, loc="lower right")
    for ax in (lat, mem):
        ax.set_xticks(sizes, [f"{x:,}" for x in sizes])
        ax.minorticks_off()
    load = r.get("machine", {}).get("load_avg", ["?"])[0]
    fig.suptitle(f"KAIROS scaling on {r.get('machine', {}).get('cpus')} CPUs "
                 f"(load avg at start {load})", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
