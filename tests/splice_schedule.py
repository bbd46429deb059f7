"""A line-by-line NumPy emulation of the CUDA kernel's schedule (``cuda/kernels/splice.cu``).

Lanes of a warp are emulated in lock-step (``lanes``, ``cols`` and ``rows`` may be small so that
tiny cases cross many lanes, tiles and chunks); chunks run one after another, so the tagged
boundary column of the previous chunk is complete when read. The exon stream and the fold plan
come from :func:`build_plan` (one case of :func:`gamut.splicing.stream.build_plans`, as for the
kernel), with ``slots`` park slots.
It checks the kernel's indexing and data flow without a GPU.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gamut.splicing.stream import ENTRY_CODE, FINISH_BIT, FOLD_NOW, PAD_CODE, ROWS, build_plans

NEG_INF = -(1 << 29)


@dataclass(frozen=True)
class StreamPlan:
    """One case's padded stream and fold plan (arrays as the kernel reads them)."""

    stream: np.ndarray  # uint8, rows codes (length: a multiple of ROWS)
    fin: np.ndarray  # int32 (K,): finish action of each sorted exon
    fold_ptr: np.ndarray  # int32 (K+1,): fold[fold_ptr[k]:fold_ptr[k+1]] are folded at entry k
    fold: np.ndarray  # int32 (F, 2): (exon, slot or FOLD_GLOBAL)

    @property
    def rows(self) -> int:
        return int(self.stream.shape[0])


def build_plan(base: np.ndarray, starts: np.ndarray, ends: np.ndarray, slots: int, rows: int = ROWS) -> StreamPlan:
    """The stream and fold plan of sorted exons ``(starts, ends)`` on ``base`` with ``slots`` park slots."""
    k_total = len(starts)
    plans = build_plans(base, np.zeros(1, np.int64), starts, ends, np.asarray([0, k_total], np.int64), slots, rows)
    return StreamPlan(plans.stream, plans.fin, plans.fold_ptr, plans.fold)


def _fold_into(best, best_arg, v, l):
    for q in range(best.shape[0]):
        if v[q] > best[q] or (v[q] == best[q] and l < best_arg[q]):
            best[q] = v[q]
            best_arg[q] = l


def emulate_forward(case, matrix, gap, lanes=32, cols=8, rows=4, slots=4):
    plan = build_plan(case.base, case.starts, case.ends, slots, rows)
    stream, fn, fp, fold = plan.stream, plan.fin, plan.fold_ptr, plan.fold
    K, n = case.n_exons, case.target.size
    t = case.target
    width = n + 1
    tiles = plan.rows // rows
    last = np.full((K, width), 12345, np.int64)
    pred = np.full((K, width), 12345, np.int64)
    chunk_cols = lanes * cols
    chunks = (width + chunk_cols - 1) // chunk_cols
    bound = np.zeros((chunks, plan.rows, 2), np.int64)  # (tag = row + 1, value)
    for c in range(chunks):
        col0 = [c * chunk_cols + lane * cols for lane in range(lanes)]
        prof = np.zeros((PAD_CODE + 1, lanes, cols), np.int64)
        for lane in range(lanes):
            for q in range(cols):
                j = col0[lane] + q
                if 1 <= j <= n:
                    prof[:ENTRY_CODE, lane, q] = matrix[:, t[j - 1]]
        park = np.zeros((max(slots, 1), lanes, cols), np.int64)
        h = np.full((lanes, cols), NEG_INF, np.int64)
        best = np.full((lanes, cols), NEG_INF, np.int64)
        best_arg = np.full((lanes, cols), -1, np.int64)
        k = [-1] * lanes
        cur_fin = [0] * lanes
        out = np.full((lanes, rows), NEG_INF, np.int64)
        left_prev = [NEG_INF] * lanes
        for step in range(tiles + lanes - 1):
            recv = np.concatenate([out[:1], out[:-1]])  # shfl_up: lane L gets lane L-1's out
            for lane in range(lanes):
                tile = step - lane
                if not (0 <= tile < tiles):
                    continue
                if lane > 0:
                    left_in = list(recv[lane])
                elif c == 0:
                    left_in = [NEG_INF] * rows
                else:
                    entries = bound[c - 1, tile * rows:(tile + 1) * rows]
                    assert all(entries[:, 0] == np.arange(tile * rows, (tile + 1) * rows) + 1), "not published"
                    left_in = list(entries[:, 1])
                codes = stream[tile * rows:(tile + 1) * rows]
                if codes[0] == ENTRY_CODE:
                    k[lane] += 1
                    kk = k[lane]
                    cur_fin[lane] = fn[kk]
                    for e in range(fp[kk], fp[kk + 1]):
                        l, slot = int(fold[e, 0]), int(fold[e, 1])
                        if slot >= 0:
                            v = park[slot, lane].copy()
                        else:
                            v = np.array([last[l, col0[lane] + q] if col0[lane] + q < width else NEG_INF
                                          for q in range(cols)])
                        _fold_into(best[lane], best_arg[lane], v, l)
                    for q in range(cols):
                        s = (col0[lane] + q) * gap
                        arg = -1
                        if best[lane, q] > s:
                            h[lane, q] = best[lane, q]
                            arg = best_arg[lane, q]
                        else:
                            h[lane, q] = s
                        if col0[lane] + q < width:
                            pred[kk, col0[lane] + q] = arg
                diag = left_prev[lane]
                for r in range(rows):
                    code = int(codes[r]) & ~FINISH_BIT
                    sv = prof[code, lane]
                    cand = [max(h[lane, q] + gap, (diag if q == 0 else h[lane, q - 1]) + sv[q]) for q in range(cols)]
                    left = left_in[r]
                    for q in range(cols):
                        left = max(left + gap, cand[q])
                        if code < ENTRY_CODE:
                            h[lane, q] = left
                    diag = left_in[r]
                    out[lane, r] = h[lane, cols - 1]
                left_prev[lane] = left_in[rows - 1]
                if np.any(codes & FINISH_BIT):
                    kk = k[lane]
                    for q in range(cols):
                        if col0[lane] + q < width:
                            last[kk, col0[lane] + q] = h[lane, q]
                    if cur_fin[lane] == FOLD_NOW:
                        _fold_into(best[lane], best_arg[lane], h[lane], kk)
                    elif cur_fin[lane] >= 0:
                        park[cur_fin[lane], lane] = h[lane]
                if lane == lanes - 1 and c + 1 < chunks:
                    for r in range(rows):
                        bound[c, tile * rows + r] = (tile * rows + r + 1, out[lane, r])
    return last, pred
