"""Fit the constants of ``kairos/search/scoring.py`` on the tldr benchmark's candidates.

    python bench/tldr_retrieval.py --dump /tmp/tldr-candidates.npz
    python bench/fit_scoring.py /tmp/tldr-candidates.npz [--search-weights]

With ``--search-weights`` it first searches the dense weights and the text-to-dense ratio
for the best recall@1 + recall@5 on two halves of the queries (fit on one, report on the
other). Then, for each mode (evidence ``z``: hybrid ``dense + ratio * text``, vector
``dense``, text ``text``):

1. the match boundary ``z*``: the lowest multiple of 0.005 that the best candidate of at
   most 1 in 8 off-topic queries (the benchmark's ``UNRELATED``) reaches;
2. the slope ``a``: maximum likelihood of "the top-ranked candidate is the right page"
   under ``p = sigmoid(a * (z - z*) + logit(MATCH_THRESHOLD))``, i.e. a logistic
   calibration pinned to cross the threshold at the boundary.

It prints the constants, a reliability table and the recall that clears the threshold.
Numpy only; the fitted numbers are pasted into scoring.py by hand.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kairos.domain import scoring

COMPONENTS = ("summary", "full", "best_step", "first_step")


def load(path: Path) -> dict[str, np.ndarray]:
    data = dict(np.load(path))
    order = np.argsort(data["query"], kind="stable")
    return {k: v[order] for k, v in data.items()}


def groups(query: np.ndarray) -> np.ndarray:
    """Start offsets of each query's candidate block (candidates sorted by query)."""
    return np.flatnonzero(np.r_[True, query[1:] != query[:-1]])


def ranks(score: np.ndarray, correct: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """1-based rank of the right candidate per query (10**9 when it is not a candidate)."""
    out = np.full(len(starts), 10**9, dtype=np.int64)
    ends = np.r_[starts[1:], len(score)]
    for g, (a, b) in enumerate(zip(starts, ends, strict=True)):
        hit = np.flatnonzero(correct[a:b])
        if len(hit):
            out[g] = 1 + int((score[a:b] > score[a + hit[0]]).sum())
    return out


def summary(r: np.ndarray) -> dict[str, float]:
    return {"recall@1": float(np.mean(r <= 1)), "recall@5": float(np.mean(r <= 5)),
            "mrr@10": float(np.mean(np.where(r <= 10, 1.0 / r, 0.0)))}


def hybrid_value(d: dict[str, np.ndarray], w: np.ndarray, ratio: float) -> np.ndarray:
    dense = sum(wi * d[c] for wi, c in zip(w, COMPONENTS, strict=True))
    return dense + ratio * np.nan_to_num(d["text"])


def search_weights(d: dict[str, np.ndarray], starts: np.ndarray,
                   w0: np.ndarray, r0: float) -> tuple[np.ndarray, float]:
    """Coordinate ascent on (dense weights, text ratio); weights kept summing to 1."""
    def objective(w: np.ndarray, r: float, sel: np.ndarray) -> float:
        rk = ranks(hybrid_value(d, w, r), d["correct"], starts)[sel]
        return float(np.mean(rk <= 1) + np.mean(rk <= 5))

    rng = np.random.default_rng(0)
    half = rng.permutation(len(starts)) < len(starts) // 2
    fitted = []
    for sel in (half, ~half):
        w, r = w0.copy(), r0
        best = objective(w, r, sel)
        for step in (0.05, 0.02):
            improved = True
            while improved:
                improved = False
                for i in range(5):
                    for delta in (step, -step):
                        w2, r2 = w.copy(), r
                        if i < 4:
                            w2[i] = max(0.0, w2[i] + delta)
                            w2 /= w2.sum()
                        else:
                            r2 = max(0.0, r + delta * 2)
                        val = objective(w2, r2, sel)
                        if val > best + 1e-9:
                            best, w, r, improved = val, w2, r2, True
        other = ~sel
        rk = ranks(hybrid_value(d, w, r), d["correct"], starts)[other]
        print(f"  fit on one half: weights {np.round(w, 3)}, ratio {r:.2f}; "
              f"other half: {summary(rk)}")
        fitted.append((w, r))
    w = np.mean([f[0] for f in fitted], axis=0)
    r = float(np.mean([f[1] for f in fitted]))
    return w / w.sum(), r


def pinned_slope(x: np.ndarray, y: np.ndarray, boundary: float) -> float:
    """Maximum-likelihood slope of sigmoid(a * (x - boundary) + logit(threshold))."""
    offset = math.log(scoring.MATCH_THRESHOLD / (1 - scoring.MATCH_THRESHOLD))
    best_a, best_ll = 0.0, -math.inf
    for a in np.arange(0.5, 40.0, 0.01):
        p = np.clip(1.0 / (1.0 + np.exp(-(a * (x - boundary) + offset))), 1e-12, 1 - 1e-12)
        ll = float(np.sum(y * np.log(p) + (1 - y) * np.log(1 - p)))
        if ll > best_ll:
            best_a, best_ll = float(a), ll
    return best_a


def boundary(off_topic_best: np.ndarray, share: float = 1 / 8) -> float:
    """Lowest multiple of 0.005 reached by at most ``share`` of the off-topic queries."""
    z = 0.0
    while np.mean(off_topic_best >= z) > share:
        z = round(z + 0.005, 3)
    return z


def top1(value: np.ndarray, starts: np.ndarray, valid: np.ndarray) -> np.ndarray:
    ends = np.r_[starts[1:], len(value)]
    idx = [a + int(np.argmax(value[a:b])) for a, b in zip(starts, ends, strict=True)]
    return np.array([i for i in idx if valid[i]], dtype=np.int64)


def reliability(p: np.ndarray, y: np.ndarray) -> None:
    bins = np.array([0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0])
    which = np.clip(np.digitize(p, bins) - 1, 0, 9)
    line = []
    for b in range(10):
        m = which == b
        if m.sum():
            line.append(f"{bins[b]:.1f}-{bins[b + 1]:.1f}: n={m.sum()} "
                        f"pred={p[m].mean():.2f} obs={y[m].mean():.2f}")
    print("    " + "\n    ".join(line))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dump", type=Path)
    ap.add_argument("--search-weights", action="store_true")
    args = ap.parse_args()
    d = load(args.dump)
    d["correct"] = d["correct"].astype(bool)
    starts = groups(d["query"])
    w = np.array(scoring.DENSE_WEIGHTS, dtype=np.float64)
    ratio = scoring.HYBRID.text / scoring.HYBRID.dense
    if args.search_weights:
        w, ratio = search_weights(d, starts, w, ratio)
        print(f"DENSE_WEIGHTS = {tuple(round(float(x), 3) for x in w)}, text ratio {ratio:.3f}")
    dense = sum(wi * d[c] for wi, c in zip(w, COMPONENTS, strict=True))
    text = d["text"]
    has_text = ~np.isnan(text)
    y = d["correct"].astype(np.float64)
    off = d["unrelated"].astype(bool)
    real = ~off[starts]
    print("hybrid ranking over candidates:", summary(
        ranks(dense + ratio * np.nan_to_num(text), d["correct"], starts)[real]))
    offset = math.log(scoring.MATCH_THRESHOLD / (1 - scoring.MATCH_THRESHOLD))
    fits = {
        "HYBRID": (dense + ratio * np.nan_to_num(text), np.ones(len(y), bool)),
        "VECTOR_ONLY": (dense, np.ones(len(y), bool)),
        "TEXT_ONLY": (np.nan_to_num(text), has_text),
    }
    ends = np.r_[starts[1:], len(y)]
    for name, (value, valid) in fits.items():
        idx = top1(value, starts, valid)
        idx_real, idx_off = idx[~off[idx]], idx[off[idx]]
        z_star = boundary(value[idx_off])
        a = pinned_slope(value[idx_real], y[idx_real], z_star)
        bias = offset - a * z_star
        p_all = 1.0 / (1.0 + np.exp(-(a * value + bias)))
        rk = ranks(value, d["correct"], starts)
        shown1, shown5 = [], []
        for g, (lo, hi) in enumerate(zip(starts, ends, strict=True)):
            if not real[g]:
                continue
            hit = np.flatnonzero(d["correct"][lo:hi])
            ok = len(hit) > 0 and p_all[lo + hit[0]] >= scoring.MATCH_THRESHOLD
            shown1.append(rk[g] <= 1 and ok)
            shown5.append(rk[g] <= 5 and ok)
        dense_c = 0.0 if name == "TEXT_ONLY" else a
        text_c = a * ratio if name == "HYBRID" else (a if name == "TEXT_ONLY" else 0.0)
        print(f"{name} = Calibration(dense={dense_c:.3f}, text={text_c:.3f}, bias={bias:.3f})"
              f"  # boundary z* = {z_star}")
        print(f"  recall@1 {np.mean(rk[real] <= 1):.3f} (>= threshold {np.mean(shown1):.3f}), "
              f"recall@5 {np.mean(rk[real] <= 5):.3f} (>= threshold {np.mean(shown5):.3f}); "
              f"off-topic queries with a match: {int(np.sum(p_all[idx_off] >= 0.3))}"
              f"/{len(idx_off)}")
        reliability(p_all[idx_real], y[idx_real])


if __name__ == "__main__":
    main()
