"""Blocks of the SIMD engine (:mod:`gamut.scanning.engines.simd`): pairs packed into blocks of
:data:`~.simd_score.LANES` lanes, and one compiled call that aligns a run of blocks (score-only
pass, diagonal suppression per pair, tracebacks of the survivors).

Blocks hold pairs of one reference (queries of similar length) or, for references with few pairs
in the chunk, pairs of one query (references of similar length); they are ordered so that
consecutive ones share their queries (the profile table is then reused).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from gamut.scanning.engines.common import grow_array, order_and_suppress
from gamut.scanning.engines.simd_score import (
    CKPT,
    LANES,
    NF,
    NT,
    TILE,
    TILE_KINDS,
    build_tab,
    score_pass,
)
from gamut.scanning.engines.simd_traceback import (
    TRACE_MARGIN,
    WHOLE_TRACE_BYTES,
    fill_window,
    trace_window,
    window_trace,
)

#: References with fewer pairs than this in a chunk are aligned in blocks of one query against
#: different references.
SHARED_MIN = LANES // 2

@njit(cache=True, nogil=True)
def align_blocks(block_ref, block_lanes, block_lm, block_new, pair_query, pair_ref, ref_codes, ref_off,
                 qlen, qrow, qprof, qgo, qge, qseed, threshold, lane_threshold, pad_score, checkpoint_bytes,
                 sv_start, sv_stop):
    """Align a run of blocks; one compiled call (no Python per pair).

    ``block_lanes[b, l]``: the pair in lane l of block b (index into ``pair_query``/``pair_ref``;
    -1 empty); ``block_ref[b]``: the reference all lanes share, or -1 when the lanes share the
    query instead (each lane then reads its own reference, shorter ones padded with
    ``pad_score``); ``block_new[b]``: the block's queries differ from the previous block's.
    Per-query tables ``qprof`` (rows of all queries, row 0 of each included), ``qgo``, ``qge``,
    ``qseed`` start at ``qrow[q]``; ``qprof``'s dtype is the lane type. Checkpoints take at most
    about ``checkpoint_bytes`` (their interval grows from :data:`CKPT` as needed).
    Sets ``sv_start``, ``sv_stop`` (indexed like ``pair_query``) of this run's pairs, as rows of
    its own output, and returns the survivor columns (score, i_end, j_end, i_start, j_start,
    op_start, op_end as one (n, 7) array) and the ops.
    """
    nb = block_ref.shape[0]
    dt = qprof.dtype
    max_lm = 1
    max_r = 1
    for b in range(nb):
        max_lm = max(max_lm, block_lm[b])
        for l in range(LANES):
            p = block_lanes[b, l]
            if p >= 0:
                max_r = max(max_r, ref_off[pair_ref[p] + 1] - ref_off[pair_ref[p]])
    st = np.zeros((max_lm + 1) * NF * LANES, dt)
    tab = np.zeros((max_lm + 1) * NT * LANES, dt)
    ckpt = CKPT
    per_column = 2 * (max_lm + 1) * LANES * qprof.itemsize
    while (max_r // ckpt + 1) * per_column > checkpoint_bytes and ckpt < max_r:
        ckpt *= 2
    ck = np.zeros((max_r // ckpt + 1, 2, max_lm + 1, LANES), dt)
    cand = np.empty((256, 4), np.int64)
    ring = np.full((LANES, max_lm + 1, 4), -1, np.int64)  # per lane: the open diagonals' best candidates
    lane_pad = np.zeros(LANES, np.int64)
    cap = 64
    out = np.empty((cap, 7), np.int64)  # score, i_end, j_end, i_start, j_start, op_start, op_end
    ops = np.empty(1024, np.uint8)
    n_out = 0
    n_ops = 0
    trace = np.empty(1 << 16, np.uint8)
    buf = np.empty(256, np.uint8)
    dprev = np.zeros(max_lm + 1, np.int64)
    bcol = np.zeros(max_lm + 1, np.int64)
    lane_query = np.full(LANES, -1, np.int64)
    lane_start = np.zeros(LANES, np.int64)
    lane_len = np.zeros(LANES, np.int64)
    roff_shared = np.arange(max_lm + 1) * (NT * LANES)
    roff_kinds = np.zeros(max_lm + 1, np.int64)
    kind_prof = np.zeros((TILE_KINDS, 6), dt)
    ctab = np.zeros(TILE * TILE_KINDS * LANES, dt)
    for b in range(nb):
        LM = block_lm[b]
        shared = block_ref[b] >= 0
        R = 0
        for l in range(LANES):
            p = block_lanes[b, l]
            lane_query[l] = pair_query[p] if p >= 0 else -1
            lane_pad[l] = LM - qlen[lane_query[l]] if p >= 0 else LM
            lane_start[l] = ref_off[pair_ref[p]] if p >= 0 else 0
            lane_len[l] = ref_off[pair_ref[p] + 1] - lane_start[l] if p >= 0 else 0
            R = max(R, lane_len[l])
        if shared:
            ref = ref_codes[ref_off[block_ref[b]] : ref_off[block_ref[b] + 1]]
            lane_len[:] = R
        else:
            ref = ref_codes[:0]
        if block_new[b]:
            build_tab(tab, LM, lane_query, qlen, qrow, qprof, qgo, qge, qseed)
        nk = 0
        if not shared:  # one query: its distinct profile rows ("kinds")
            q0 = qrow[lane_query[0]]
            for a in range(1, LM + 1):
                found = -1
                for k in range(nk):
                    same = True
                    for c in range(5):
                        same &= kind_prof[k, c] == qprof[q0 + a, c]
                    if same:
                        found = k
                        break
                if found < 0:
                    found = nk
                    for c in range(5):
                        kind_prof[nk, c] = qprof[q0 + a, c]
                    kind_prof[nk, 5] = pad_score
                    nk += 1
                roff_kinds[a] = found * LANES
        roff = roff_shared if shared else roff_kinds
        cand, n = score_pass(st, tab, LM, R, ref, shared, ctab, roff, nk, kind_prof, ref_codes, lane_start,
                              lane_len, threshold, lane_threshold, lane_pad, ck, ckpt, ring, cand)
        # Candidates grouped by lane (stable: column-major order inside a lane).
        counts = np.zeros(LANES + 1, np.int64)
        for k in range(n):
            counts[cand[k, 0] + 1] += 1
        for l in range(LANES):
            counts[l + 1] += counts[l]
        pos = counts[:LANES].copy()
        by_lane = np.empty(n, np.int64)
        for k in range(n):
            l = cand[k, 0]
            by_lane[pos[l]] = k
            pos[l] += 1
        for l in range(LANES):
            p = block_lanes[b, l]
            if p < 0:
                continue
            q = lane_query[l]
            L = qlen[q]
            P = lane_pad[l]
            if not shared:
                ref = ref_codes[lane_start[l] : lane_start[l] + lane_len[l]]
            R = ref.shape[0]
            m = counts[l + 1] - counts[l]
            sv_start[p] = n_out
            sv_stop[p] = n_out
            if m == 0:
                continue
            cs = np.empty(m, np.int64)
            ci = np.empty(m, np.int32)
            cj = np.empty(m, np.int32)
            for k in range(m):
                row = by_lane[counts[l] + k]
                cs[k] = cand[row, 1]
                ci[k] = cand[row, 2]
                cj[k] = cand[row, 3]
            keep = order_and_suppress(cs, ci, cj, L, R)
            sv_start[p] = n_out
            q0 = qrow[q]
            prof = qprof[q0 : q0 + L + 1]
            go = qgo[q0 : q0 + L + 1].astype(np.int64)
            ge = qge[q0 : q0 + L + 1].astype(np.int64)
            seed = qseed[q0 : q0 + L + 1]
            # Windows cost about (L + margin) columns each; past R columns in all, one trace of the
            # whole pair is cheaper (long queries: thousands of survivors, windows as wide as L).
            whole = keep.shape[0] * (L + TRACE_MARGIN) > R and (L + 1) * (R + 1) <= WHOLE_TRACE_BYTES
            if whole:
                if (L + 1) * (R + 1) > trace.shape[0]:
                    trace = np.empty((L + 1) * (R + 1), np.uint8)
                fill_window(prof, go, ge, seed, ref, L, 0, R, dprev, bcol, trace)
            for s in range(keep.shape[0]):
                idx = keep[s]
                i_end = np.int64(ci[idx])
                j_end = np.int64(cj[idx])
                if whole:
                    if L + j_end + 2 > buf.shape[0]:
                        buf = np.empty(2 * (L + j_end + 2), np.uint8)
                    i0, j0, nop = trace_window(trace, R + 1, 0, i_end, j_end, buf)
                else:
                    k = max(j_end - i_end - TRACE_MARGIN, 0) // ckpt
                    while True:
                        c = k * ckpt
                        if c > 0:
                            for i in range(L + 1):
                                dprev[i] = ck[k, 0, P + i, l]
                                bcol[i] = ck[k, 1, P + i, l]
                        need = (L + 1) * (j_end - c + 1)
                        if need > trace.shape[0]:
                            trace = np.empty(2 * need, np.uint8)
                        if L + j_end + 2 > buf.shape[0]:
                            buf = np.empty(2 * (L + j_end + 2), np.uint8)
                        i0, j0, nop = window_trace(prof, go, ge, seed, ref, L, c, i_end, j_end, dprev, bcol, trace, buf)
                        if nop >= 0:
                            break
                        k = max(0, j_end - 2 * (j_end - c)) // ckpt  # twice as wide, down to column 0
                if n_out >= out.shape[0]:
                    bigger = np.empty((2 * out.shape[0], 7), np.int64)
                    bigger[:n_out] = out[:n_out]
                    out = bigger
                if n_ops + nop > ops.shape[0]:
                    ops = grow_array(ops, n_ops + nop)
                for x in range(nop):
                    ops[n_ops + x] = buf[nop - 1 - x]
                out[n_out, 0] = cs[idx]
                out[n_out, 1] = i_end
                out[n_out, 2] = j_end
                out[n_out, 3] = i0
                out[n_out, 4] = j0
                out[n_out, 5] = n_ops
                out[n_out, 6] = n_ops + nop
                n_ops += nop
                n_out += 1
            sv_stop[p] = n_out
    return out[:n_out].copy(), ops[:n_ops].copy()



@njit(cache=True, nogil=True)
def _pack(pair_ref, pair_rank, pair_query, qlen, n_refs, n_ranks):
    """Pairs ordered by (group, rank) with two stable counting sorts, cut into blocks of LANES
    pairs of one group (``pair_ref``: the group, a reference or a query). Returns (block_group,
    block_lanes (indices into the given pairs), block_lm, key): key is a hash of the block's
    queries (equal queries, equal keys)."""
    n = pair_ref.shape[0]
    count = np.zeros(max(n_refs, n_ranks) + 1, np.int64)
    by_rank = np.empty(n, np.int64)
    for k in range(n):
        count[pair_rank[k] + 1] += 1
    for x in range(n_ranks):
        count[x + 1] += count[x]
    for k in range(n):
        by_rank[count[pair_rank[k]]] = k
        count[pair_rank[k]] += 1
    count[:] = 0
    for k in range(n):
        count[pair_ref[k] + 1] += 1
    for x in range(n_refs):
        count[x + 1] += count[x]
    start = count[: n_refs + 1].copy()
    order = np.empty(n, np.int64)
    for k in range(n):
        p = by_rank[k]
        order[count[pair_ref[p]]] = p
        count[pair_ref[p]] += 1
    n_blocks = 0
    for r in range(n_refs):
        n_blocks += (start[r + 1] - start[r] + LANES - 1) // LANES
    block_ref = np.empty(n_blocks, np.int64)
    lanes = np.full((n_blocks, LANES), -1, np.int64)
    b = 0
    for r in range(n_refs):
        for k in range(start[r], start[r + 1]):
            if (k - start[r]) % LANES == 0:
                block_ref[b] = r
                b += 1
            lanes[b - 1, (k - start[r]) % LANES] = order[k]
    lm = np.zeros(n_blocks, np.int64)
    key = np.zeros(n_blocks, np.uint64)
    for b in range(n_blocks):
        h = np.uint64(1469598103934665603)
        for l in range(LANES):
            p = lanes[b, l]
            q = pair_query[p] if p >= 0 else -1
            if p >= 0:
                lm[b] = max(lm[b], qlen[q])
            h = (h ^ np.uint64(q + 1)) * np.uint64(1099511628211)
        key[b] = h
    return block_ref, lanes, lm, key


def make_blocks(pair_ref: np.ndarray, ref_len: np.ndarray, qlen: np.ndarray, pair_query: np.ndarray):
    """Pack pairs into blocks of :data:`LANES` pairs.

    Pairs of a reference with at least :data:`SHARED_MIN` pairs share that reference (queries
    sorted by length); the others are grouped by query (references sorted by length).
    Returns (block_ref (-1: lanes share the query), block_lanes (n_blocks, LANES), block_lm,
    block_new); blocks are ordered so that blocks with the same queries (a cross product) follow
    each other, and ``block_new[b]`` says whether block b's queries differ from block b-1's.
    """
    n_queries = qlen.shape[0]
    n_refs = ref_len.shape[0]
    per_ref = np.bincount(pair_ref, minlength=n_refs)
    shared = per_ref[pair_ref] >= SHARED_MIN
    parts = []
    for mask, by_ref in ((shared, True), (~shared, False)):
        index = np.flatnonzero(mask)
        if index.shape[0] == 0:
            continue
        if by_ref:  # groups: references; lanes: queries by length
            rank = np.empty(n_queries, np.int64)
            rank[np.lexsort((np.arange(n_queries), qlen))] = np.arange(n_queries)
            group, key_of = pair_ref[index], rank[pair_query[index]]
            n_groups, n_keys = n_refs, n_queries
        else:  # groups: queries; lanes: references by length
            rank = np.empty(n_refs, np.int64)
            rank[np.lexsort((np.arange(n_refs), ref_len))] = np.arange(n_refs)
            group, key_of = pair_query[index], rank[pair_ref[index]]
            n_groups, n_keys = n_queries, n_refs
        block_group, lanes, lm, key = _pack(group, key_of, pair_query[index], qlen, n_groups, n_keys)
        lanes = np.where(lanes >= 0, index[np.maximum(lanes, 0)], -1)
        block_ref = block_group if by_ref else np.full(block_group.shape[0], -1, np.int64)
        by = np.lexsort((block_ref, key))
        parts.append((block_ref[by], lanes[by], lm[by]))
    block_ref = np.concatenate([p[0] for p in parts])
    lanes = np.concatenate([p[1] for p in parts])
    lm = np.concatenate([p[2] for p in parts])
    return block_ref, lanes, lm, _new_queries(lanes, pair_query)


@njit(cache=True, nogil=True)
def _new_queries(lanes, pair_query):
    """Whether each block's lane queries differ from the previous block's."""
    nb = lanes.shape[0]
    new = np.ones(nb, np.bool_)
    for b in range(1, nb):
        same = True
        for l in range(LANES):
            p, o = lanes[b, l], lanes[b - 1, l]
            qp = pair_query[p] if p >= 0 else -1
            qo = pair_query[o] if o >= 0 else -1
            same &= qp == qo
        new[b] = not same
    return new


def split_runs(cost: np.ndarray, threads: int) -> list[tuple[int, int]]:
    """Contiguous runs of blocks of about equal cost: 4 per thread (1 when single-threaded)."""
    nb = cost.shape[0]
    parts = 1 if threads == 1 else min(nb, 4 * threads)
    edges = np.searchsorted(np.cumsum(cost), np.linspace(0, cost.sum(), parts + 1)[1:-1], side="right")
    bounds = [0, *sorted(set(int(e) for e in edges if 0 < e < nb)), nb]
    return [(bounds[k], bounds[k + 1]) for k in range(len(bounds) - 1)]
