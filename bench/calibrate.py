"""Fit the constants of ``kairos.domain.scoring`` on the tuning half of the held-out
requests, from the real engine's raw evidence:

    python bench/requests_eval.py --split tune --evidence bench/results/evidence_tune.jsonl
    python bench/calibrate.py bench/results/evidence_tune.jsonl              # protocols
    python bench/entries_eval.py --split tune --evidence bench/results/entries_tune.jsonl
    python bench/calibrate.py bench/results/entries_tune.jsonl --entries     # entries

Several evidence files are pooled, e.g. the tuning half over pages minted without their
description (``requests_eval.py --split tune --no-description --evidence FILE``) beside
the one with: the constants in ``scoring`` come from the one with descriptions alone
(pooling both was measured, ``bench/README.md``, and not kept).

For each mode (hybrid: dense + w * text; vector only: dense; text only: text) it prints

* ``w``, the text weight of the hybrid evidence that ranks best (recall@1 + recall@5);
* ``z*``, the match boundary: the evidence that an unseen off-topic request's best
  candidate reaches with probability at most one in ten (the split-conformal quantile of
  the tuning half's off-topic requests: with 28 of them, at most one reaches it);
* ``a``, the maximum-likelihood slope of "the top candidate is a right answer" under
  ``score = sigmoid(a * (z - z*) + logit(anchor))``, where the anchor is the score the
  boundary maps to: ``MATCH_THRESHOLD`` for kairos_search, the unified search's default
  ``min_score`` (0.50) for knowledge entries;

and the ``Calibration(dense, text, bias)`` that ``scoring`` takes.

With ``--entries`` (knowledge entries: few records, few requests) the boundary is midway
between the best off-topic candidate and the weakest right answer of a title-level request,
it maps to the unified search's default ``min_score`` (0.50 with vectors, 0.35 text only),
and the slopes are kairos_search's: on a set this small every right answer ranks first, so
a slope fitted on it runs off to the edge of the grid.

Only the tuning half is read here; the test half is for reporting (``--split test``).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kairos.domain.scoring import HYBRID, MATCH_THRESHOLD, TEXT_ONLY, VECTOR_ONLY

ENTRY_ANCHORS = {"hybrid": 0.50, "vector": 0.50, "text": 0.35}
SLOPES = {"hybrid": HYBRID.dense, "vector": VECTOR_ONLY.dense, "text": TEXT_ONLY.text}
TEXT_WEIGHT = HYBRID.text / HYBRID.dense

OFF_TOPIC_MATCHING = 0.10  # at most this share of unseen off-topic requests may match


def load(paths: list[Path]) -> list[dict]:
    rows = [json.loads(line) for path in paths
            for line in path.read_text("utf-8").splitlines() if line]
    if any(r["split"] != "tune" for r in rows):
        sys.exit("calibrate.py reads the tuning half only")
    return rows


def evidence(rows: list[dict], mode: str, w: float) -> list[tuple[list[str], np.ndarray]]:
    """Per request: candidate pages and their evidence z in this mode, best first."""
    out = []
    for r in rows:
        cands = [(p, d, t) for p, d, t in r["candidates"]
                 if (mode != "text" or (t or 0) > 0) and (mode == "text" or d is not None)]
        z = np.array([(d or 0.0) + w * (t or 0.0) if mode == "hybrid" else
                      (d or 0.0) if mode == "vector" else (t or 0.0) for _, d, t in cands])
        order = np.argsort(-z, kind="stable")
        out.append(([cands[i][0] for i in order], z[order]))
    return out


def recall(rows: list[dict], ranked: list[tuple[list[str], np.ndarray]]) -> tuple[float, float]:
    r1 = r5 = 0
    n = 0
    for r, (pages, _) in zip(rows, ranked, strict=True):
        if not r["expected"]:
            continue
        n += 1
        ranks = [i for i, p in enumerate(pages[:5]) if p in set(r["expected"])]
        r1 += bool(ranks and ranks[0] == 0)
        r5 += bool(ranks)
    return r1 / n, r5 / n


def boundary(rows: list[dict], ranked: list[tuple[list[str], np.ndarray]]) -> float:
    """Just above the ⌈(n + 1)(1 − share)⌉-th smallest of the n off-topic requests' best
    evidence: an unseen off-topic request then matches with probability at most ``share``
    (the split-conformal quantile). Letting ``share`` of the n tuning requests match instead
    would let about (share·n + 1)/(n + 1) of unseen ones match: 10.3 % for 2 of 28."""
    tops = sorted(z[0] if len(z) else -1.0 for r, (_, z) in zip(rows, ranked, strict=True)
                  if not r["expected"])
    rank = math.ceil((len(tops) + 1) * (1 - OFF_TOPIC_MATCHING))
    if rank > len(tops):
        sys.exit(f"{len(tops)} off-topic requests cannot bound the share at "
                 f"{OFF_TOPIC_MATCHING:.0%}: at least {math.ceil(1 / OFF_TOPIC_MATCHING) - 1} "
                 "are needed")
    return float(tops[rank - 1]) + 1e-4


def midway(rows: list[dict], ranked: list[tuple[list[str], np.ndarray]]) -> float:
    """Midway between the best off-topic candidate and the weakest right answer of a
    title-level request."""
    off = max((z[0] for r, (_, z) in zip(rows, ranked, strict=True)
               if not r["expected"] and len(z)), default=0.0)
    right = [min((zz for p, zz in zip(pages, z, strict=True) if p in set(r["expected"])),
                 default=0.0)
             for r, (pages, z) in zip(rows, ranked, strict=True) if r["kind"] == "title"]
    return (off + min(right)) / 2


def entries(rows: list[dict]) -> None:
    for mode in ("hybrid", "vector", "text"):
        ranked = evidence(rows, mode, TEXT_WEIGHT)
        z_star, a, anchor = midway(rows, ranked), SLOPES[mode], ENTRY_ANCHORS[mode]
        bias = math.log(anchor / (1 - anchor)) - a * z_star
        dense = a if mode != "text" else 0.0
        text = a * TEXT_WEIGHT if mode == "hybrid" else a if mode == "text" else 0.0
        print(f"{mode:7s} z*={z_star:.4f} → {anchor}  Calibration(dense={dense:.3f}, "
              f"text={text:.3f}, bias={bias:.3f})")


def slope(rows: list[dict], ranked: list[tuple[list[str], np.ndarray]], z_star: float,
          anchor: float) -> float:
    x, y = [], []
    for r, (pages, z) in zip(rows, ranked, strict=True):
        if r["expected"] and len(z):
            x.append(z[0] - z_star)
            y.append(pages[0] in set(r["expected"]))
    xs, ys = np.array(x), np.array(y, dtype=float)
    base = math.log(anchor / (1 - anchor))
    best, best_ll = 1.0, -math.inf
    for a in np.arange(0.5, 30.0, 0.05):
        p = 1 / (1 + np.exp(-(a * xs + base)))
        ll = float(np.sum(ys * np.log(p + 1e-12) + (1 - ys) * np.log(1 - p + 1e-12)))
        if ll > best_ll:
            best, best_ll = float(a), ll
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("evidence", type=Path, nargs="+",
                        help="evidence files of the tuning half, pooled")
    parser.add_argument("--entries", action="store_true",
                        help="knowledge entries (bench/entries_eval.py --evidence)")
    args = parser.parse_args()
    rows = load(args.evidence)
    if args.entries:
        entries(rows)
        return
    weights = np.round(np.arange(0.0, 1.01, 0.05), 2)
    scored = [(sum(recall(rows, evidence(rows, "hybrid", w))), -w, w) for w in weights]
    w = max(scored)[2]
    base = math.log(MATCH_THRESHOLD / (1 - MATCH_THRESHOLD))
    for mode in ("hybrid", "vector", "text"):
        ranked = evidence(rows, mode, w)
        r1, r5 = recall(rows, ranked)
        z_star = boundary(rows, ranked)
        a = slope(rows, ranked, z_star, MATCH_THRESHOLD)
        dense = a if mode != "text" else 0.0
        text = a * w if mode == "hybrid" else a if mode == "text" else 0.0
        labelled = [(p, z) for r, (p, z) in zip(rows, ranked, strict=True) if r["expected"]]
        cleared = sum(1 for (pages, z), r in zip(labelled, [r for r in rows if r["expected"]],
                                                 strict=True)
                      if any(p in set(r["expected"]) and zz >= z_star
                             for p, zz in zip(pages[:5], z[:5], strict=False)))
        print(f"{mode:7s} w={w if mode == 'hybrid' else '-'} recall@1 {r1:.3f} recall@5 {r5:.3f}"
              f"  z*={z_star:.4f} a={a:.2f}  right answer in top 5 and over z*: "
              f"{cleared}/{len(labelled)}")
        print(f"        Calibration(dense={dense:.3f}, text={text:.3f}, "
              f"bias={base - a * z_star:.3f})")


if __name__ == "__main__":
    main()
