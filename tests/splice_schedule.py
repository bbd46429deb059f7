"""A line-by-line NumPy emulation of the CUDA kernel's schedule (``cuda/kernels/splice.cu``).

Lanes of a warp are emulated in lock-step (``lanes`` and ``cols`` may be small so that tiny cases
cross many lanes and chunks); chunks run one after another, so the global boundary column of the
previous chunk is complete when read. It checks the kernel's indexing and data flow without a GPU.
"""
from __future__ import annotations

import numpy as np

NEG_INF = -(1 << 29)


def emulate_forward(case, matrix, gap, lanes=32, cols=8):
    base, st, en, t = case.base, case.starts, case.ends, case.target
    K, n = case.n_exons, case.target.size
    width = n + 1
    be = np.argsort(en, kind="stable")
    rows = case.stream_rows
    last = np.full((K, width), 12345, np.int64)
    pred = np.full((K, width), 12345, np.int64)
    chunk_cols = lanes * cols
    chunks = (width + chunk_cols - 1) // chunk_cols
    bound = np.full((chunks, rows), 777, np.int64)
    for c in range(chunks):
        col0 = [c * chunk_cols + lane * cols for lane in range(lanes)]
        prof = np.zeros((5, lanes, cols), np.int64)
        for lane in range(lanes):
            for q in range(cols):
                j = col0[lane] + q
                if 1 <= j <= n:
                    prof[:, lane, q] = matrix[:, t[j - 1]]
        h = np.full((lanes, cols), NEG_INF, np.int64)
        best = np.full((lanes, cols), NEG_INF, np.int64)
        best_arg = np.full((lanes, cols), -1, np.int64)
        folded = [0] * lanes
        k = [0] * lanes
        i = [0] * lanes
        sk = [int(st[0])] * lanes
        ln = [int(en[0] - st[0])] * lanes
        left_in = [NEG_INF] * lanes
        diag_in = [NEG_INF] * lanes
        out = [NEG_INF] * lanes
        nxt = [None] * lanes
        for step in range(rows + lanes - 1):
            recv = [out[lane - 1] if lane > 0 else out[0] for lane in range(lanes)]  # shfl_up
            for lane in range(lanes):
                row = step - lane
                if not (0 <= row < rows):
                    continue
                diag_in[lane] = left_in[lane]
                if lane > 0:
                    left_in[lane] = recv[lane]
                elif c == 0:
                    left_in[lane] = NEG_INF
                else:
                    left_in[lane] = bound[c - 1, row]
                kk = k[lane]
                if i[lane] == 0:
                    while folded[lane] < K and en[be[folded[lane]]] <= sk[lane]:
                        l = be[folded[lane]]
                        for q in range(cols):
                            if col0[lane] + q < width:
                                v = last[l, col0[lane] + q]
                                if v > best[lane, q] or (v == best[lane, q] and l < best_arg[lane, q]):
                                    best[lane, q] = v
                                    best_arg[lane, q] = l
                        folded[lane] += 1
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
                else:
                    sv = nxt[lane]
                    cand = [max(h[lane, q] + gap, (diag_in[lane] if q == 0 else h[lane, q - 1]) + sv[q])
                            for q in range(cols)]
                    left = left_in[lane]
                    for q in range(cols):
                        left = max(left + gap, cand[q])
                        h[lane, q] = left
                    if i[lane] == ln[lane]:
                        for q in range(cols):
                            if col0[lane] + q < width:
                                last[kk, col0[lane] + q] = h[lane, q]
                out[lane] = h[lane, cols - 1]
                if lane == lanes - 1 and c + 1 < chunks:
                    bound[c, row] = out[lane]
                if i[lane] == ln[lane]:
                    k[lane] += 1
                    i[lane] = 0
                    if k[lane] < K:
                        sk[lane] = int(st[k[lane]])
                        ln[lane] = int(en[k[lane]] - st[k[lane]])
                else:
                    i[lane] += 1
                    nxt[lane] = prof[base[sk[lane] + i[lane] - 1], lane]  # prefetched scores
    return last, pred
