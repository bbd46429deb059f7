"""A plain-Python, literal transcription of miRanda's recurrences (miranda-model §3-§7.1), for testing.

Deliberately naive and independent of gamut's engines: full matrices, candidates in generation
order, a stable sort, the quadratic diagonal-suppression walk, traceback over all four tables.
"""
from __future__ import annotations

import math

COMPLEMENT = {("A", "U"), ("U", "A"), ("G", "C"), ("C", "G")}
WOBBLE = {("G", "U"), ("U", "G")}


def letter_class(ch: str) -> str:
    ch = ch.upper()
    if ch == "T":
        return "U"
    return ch if ch in "ACGU" else "N"


def base_score(x: str, y: str) -> int:
    x, y = letter_class(x), letter_class(y)
    if x == "N" or y == "N":
        return -1
    if (x, y) in COMPLEMENT:
        return 5
    if (x, y) in WOBBLE:
        return 1
    return -3


def reference_alignments(query: str, ref: str, threshold=140, scale=4.0, go=-9, ge=-4):
    """Survivors (score, i_end, j_end, i0, j0, ops) in processing order, ops as 'M'/'B'/'C'."""
    L, R = len(query), len(ref)
    Q = query[::-1]
    W = L - 8

    def score(i, j):
        if L <= 3 or i in (1, 2, L):
            return 0
        s = base_score(Q[i - 1], ref[j - 1])
        return s if i <= W else int(math.trunc(scale * s))

    def gaps(i):
        if i <= W or i == L:
            return go, ge, False
        return int(math.trunc(scale * go)), int(math.trunc(scale * ge)), True

    zero = lambda: [[0] * (R + 1) for _ in range(L + 1)]  # noqa: E731
    A, B, C, best, tA, tB, tC, tBest = (zero() for _ in range(8))
    candidates = []
    for i in range(1, L + 1):
        gopen, gext, seed = gaps(i)
        for j in range(1, R + 1):
            a, b, c = A[i - 1][j - 1], B[i - 1][j - 1], C[i - 1][j - 1]
            if a >= b and a >= c:
                m, t = a, 1
            elif b >= c:
                m, t = b, 2
            else:
                m, t = c, 3
            A[i][j] = m + score(i, j)
            tA[i][j] = t
            if A[i][j] <= 0:
                A[i][j], tA[i][j] = 0, 0
            o, e = A[i][j - 1] + gopen, B[i][j - 1] + gext
            B[i][j], tB[i][j] = (e, 2) if e > o else (o, 1)
            if seed:
                C[i][j], tC[i][j] = -1, 1
            else:
                o, e = A[i - 1][j] + gopen, C[i - 1][j] + gext
                C[i][j], tC[i][j] = (e, 3) if e > o else (o, 1)
            x, y, z = A[i][j], B[i][j], C[i][j]
            if x >= y and x >= z:
                best[i][j], tBest[i][j] = x, 1
            elif y >= z:
                best[i][j], tBest[i][j] = y, 2
            else:
                best[i][j], tBest[i][j] = z, 3
            if best[i][j] <= 0:
                best[i][j], tBest[i][j] = 0, 0
            if best[i][j] >= threshold and tBest[i][j] != 2:
                candidates.append((best[i][j], i, j))
    ordered = sorted(candidates, key=lambda cand: (-cand[0], cand[2]))  # stable
    # Walk from the top; a live candidate kills every later one within 6 diagonals of its own.
    # (A set of the diagonals killed so far: the same walk without its quadratic inner loop.)
    alive, killed = [], set()
    for _, i, j in ordered:
        keep = (j - i) not in killed
        alive.append(keep)
        if keep:
            killed.update(range(j - i - 6, j - i + 7))
    survivors = []
    for (s, i_end, j_end), keep in zip(ordered, alive):
        if not keep:
            continue
        i, j, state, ops = i_end, j_end, tBest[i_end][j_end], []
        while best[i][j] > 0 and state != 0:
            if state == 1:
                ops.append("M")
                state = tA[i][j]
                i, j = i - 1, j - 1
            elif state == 2:
                ops.append("B")
                state = tB[i][j]
                j -= 1
            else:
                ops.append("C")
                state = tC[i][j]
                i -= 1
        survivors.append((s, i_end, j_end, i, j, "".join(reversed(ops))))
    return survivors


def align_pairs(engine, queries, references, pairs, params):
    """Run ``engine.align`` on lists of class-code arrays (or ``EncodedSeq``) and return the
    survivors per pair (:class:`~gamut.scanning.alignments.PairAlignments`), for comparisons."""
    import numpy as np

    from gamut.scanning.hits import SequenceSet

    codes = lambda seqs: [np.asarray(getattr(s, "codes", s), np.int8) for s in seqs]  # noqa: E731
    chunk = engine.align(SequenceSet.from_codes(codes(queries)), SequenceSet.from_codes(codes(references)),
                         np.asarray(pairs, np.int64).reshape(-1, 2), params)
    return [chunk.pair(p) for p in range(chunk.n_pairs)]


def strict_seed_ok(query_line: str, map_line: str, n5: int, n3: int) -> bool:
    """Strict mode (miranda-model §8), literally: miRNA positions 2-8 (5'->3', gaps skipped) all
    Watson-Crick paired, without gaps. ``n5``/``n3``: the unaligned 5' and 3' flanks' lengths."""
    body = len(query_line) - n3 - n5
    s = query_line[len(query_line) - n5 :] + query_line[n3 : n3 + body][::-1] + query_line[:n3]
    m = " " * n5 + map_line[n3 : n3 + body][::-1] + " " * n3
    p = paired = wc = gaps = 0
    for letter, mark in zip(s, m):
        if letter != "-":
            p += 1
        if 2 <= p <= 8:
            paired += mark != " "
            wc += mark == "|"
            gaps += letter == "-"
        if p >= 8:
            break
    return paired >= 7 and wc >= 7 and gaps == 0
