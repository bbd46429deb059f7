"""The CUDA engine's path for a chunk of consecutive pairs of the output order (every chunk of an
unrestricted scan): no host work per pair.

Such a chunk is pairs ``k0..k1-1`` of the order (query q, reference r) -> ``q * n_refs + r``: the
queries ``q0..q1``, each against a range of references (all of them, except in the first and
last rows). The host builds, per chunk, arrays over queries (profile slot, reference range) and
over reference segments (``ref_tasks``); the pass-1 kernel ``scan_pass1_grid`` derives every
(query, reference segment) task from them, ``scan_verify_grid`` checks the speculative segment
starts, and sorting, suppression and tracebacks work on candidates and survivors only
(:class:`~gamut.scanning.engines.gpu_device.DeviceRun`). Host work per chunk is O(queries +
references + survivors).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field, replace

import numpy as np
from numba import njit

from gamut.scanning.engines.gpu_device import Collector, DeviceRun, KernelArgs, TaskPairs, pair_profiles
from gamut.scanning.engines.gpu_plan import PACKED_ROWS, fits_16_bits


@njit(cache=True, nogil=True)
def run_start(pairs, n_refs):
    """The output-order index of ``pairs[0]`` if ``pairs`` are consecutive pairs of the output
    order over ``n_refs`` references, else -1 (one pass, no temporaries)."""
    q, r = pairs[0, 0], pairs[0, 1]
    if q < 0 or r < 0 or r >= n_refs:
        return -1
    for k in range(1, pairs.shape[0]):
        r += 1
        if r == n_refs:
            r = 0
            q += 1
        if pairs[k, 0] != q or pairs[k, 1] != r:
            return -1
    return pairs[0, 0] * n_refs + pairs[0, 1]


@dataclass(frozen=True)
class GridChunk:
    """Pairs ``k0..k1-1`` (``k0 < k1``) of the output order over ``n_refs`` references."""

    k0: int
    k1: int
    n_refs: int

    @classmethod
    def of_pairs(cls, pairs: np.ndarray, n_refs: int, first: int | None = None) -> GridChunk | None:
        """The chunk ``pairs`` (int64 (n, 2)) is, if it is a run of consecutive pairs of the output
        order. ``first``: the run's first pair when the caller knows it (from a
        :class:`~gamut.scanning.pair_run.PairRun`, :func:`~gamut.scanning.pair_run.run_of`); else
        one pass over the pairs finds out."""
        n = pairs.shape[0]
        if n == 0 or n_refs == 0:
            return None
        k0 = run_start(pairs, n_refs) if first is None else first
        return cls(k0, k0 + n, n_refs) if k0 >= 0 else None

    @property
    def q0(self) -> int:
        return self.k0 // self.n_refs

    @property
    def q1(self) -> int:
        """The last query (inclusive)."""
        return (self.k1 - 1) // self.n_refs

    @property
    def ref_range(self) -> tuple[int, int]:
        """The references any pair of the chunk uses: ``ra..rb-1``."""
        if self.q0 == self.q1:
            return self.k0 - self.q0 * self.n_refs, self.k1 - self.q1 * self.n_refs
        return 0, self.n_refs

    def rows(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The chunk's queries (int64) and, for each, its references ``lo..hi-1``, counted from ``ra`` (int32)."""
        ra, _ = self.ref_range
        queries = np.arange(self.q0, self.q1 + 1, dtype=np.int64)
        lo = np.zeros(queries.shape[0], np.int64)
        hi = np.full(queries.shape[0], self.n_refs, np.int64)
        lo[0] = self.k0 - self.q0 * self.n_refs
        hi[-1] = self.k1 - self.q1 * self.n_refs
        return queries, (lo - ra).astype(np.int32), (hi - ra).astype(np.int32)

    def first_pair(self, queries: np.ndarray) -> np.ndarray:
        """The index in the chunk of (query, reference ``ra``) for each of ``queries`` (may be negative)."""
        return queries * self.n_refs + self.ref_range[0] - self.k0


@dataclass(frozen=True)
class RectChunk:
    """Queries ``q0..q1-1``, each against references ``r0..r1-1`` (``q0 < q1``, ``r0 < r1``): pair
    ``(q, r)`` is pair ``(q - q0) * (r1 - r0) + r - r0`` of the chunk. The grid path takes it as it
    takes a :class:`GridChunk` (every query a full row of the chunk's references)."""

    q0: int
    q1: int
    r0: int
    r1: int

    @property
    def ref_range(self) -> tuple[int, int]:
        return self.r0, self.r1

    def rows(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        queries = np.arange(self.q0, self.q1, dtype=np.int64)
        return (queries, np.zeros(queries.shape[0], np.int32),
                np.full(queries.shape[0], self.r1 - self.r0, np.int32))

    def first_pair(self, queries: np.ndarray) -> np.ndarray:
        return (queries - self.q0) * (self.r1 - self.r0)


def grid_chunk(pairs: np.ndarray, n_refs: int, first: int | None, rect: tuple | None) -> GridChunk | RectChunk | None:
    """The chunk ``pairs`` is for the grid path: a rectangle (``rect``, from
    :func:`~gamut.scanning.pair_run.rect_of`), a run of the output order, or None (listed pairs)."""
    if rect is not None:
        q0, q1, r0, r1 = rect
        return RectChunk(q0, q1, r0, r1) if q1 > q0 and r1 > r0 else None
    return GridChunk.of_pairs(pairs, n_refs, first)


@dataclass(frozen=True)
class RefTasks:
    """The reference segments of a chunk (task ``rt``: reference ``rt_ref[rt]``, segment ``rt_seg[rt]``):
    full segments first (reference order), then partial last segments, longest first. ``later``:
    the tasks of segments > 0; ``rt_of[ref_task0[r] + k]``: the task of (r, k); ``ref_cp0[r]``:
    the first checkpoint of reference r among a query's ``cp_per_query``."""

    rt_ref: np.ndarray
    rt_seg: np.ndarray
    later: np.ndarray
    rt_of: np.ndarray
    n_seg: np.ndarray
    ref_task0: np.ndarray
    ref_cp0: np.ndarray
    cp_per_query: int

    @property
    def n(self) -> int:
        return int(self.rt_ref.shape[0])


def ref_tasks(lengths: np.ndarray, seglen: int, cpint: int) -> RefTasks:
    """:class:`RefTasks` of references of ``lengths`` cut into segments of ``seglen`` (O(references + segments))."""
    lengths = np.asarray(lengths, np.int64)
    n_ref = lengths.shape[0]
    full = lengths // seglen
    rem = lengths % seglen
    n_seg = full + (rem > 0)
    ref_task0 = np.zeros(n_ref + 1, np.int64)
    np.cumsum(n_seg, out=ref_task0[1:])
    full0 = np.zeros(n_ref + 1, np.int64)
    np.cumsum(full, out=full0[1:])
    f_ref = np.repeat(np.arange(n_ref), full)
    f_seg = np.arange(full0[-1]) - full0[f_ref]
    partial = np.flatnonzero(rem > 0)
    partial = partial[np.argsort(-rem[partial], kind="stable")]
    rt_ref = np.concatenate([f_ref, partial]).astype(np.int32)
    rt_seg = np.concatenate([f_seg, full[partial]]).astype(np.int32)
    rt_of = np.empty(rt_ref.shape[0], np.int32)
    rt_of[ref_task0[rt_ref] + rt_seg] = np.arange(rt_ref.shape[0], dtype=np.int32)
    ref_cp0 = np.zeros(n_ref + 1, np.int64)
    np.cumsum(lengths // cpint, out=ref_cp0[1:])
    return RefTasks(rt_ref, rt_seg, np.flatnonzero(rt_seg > 0).astype(np.int32), rt_of, n_seg, ref_task0, ref_cp0,
                    int(ref_cp0[-1]))


@dataclass(frozen=True)
class DeviceRefs:
    """A chunk's references ``ra..rb-1`` end to end on a device, and their lengths (host); with
    :meth:`tasks`, their segments, made once per segment length while the references are held."""

    letters: object
    offsets: object
    lengths_dev: object
    lengths: np.ndarray
    _tasks: dict = field(default_factory=dict, repr=False, compare=False)

    def tasks(self, backend, seglen: int, cpint: int) -> tuple[RefTasks, dict]:
        """:func:`ref_tasks` of these references and its arrays on ``backend`` (``rt_ref``,
        ``rt_seg``, ``later``, ``ref_cp0``), made on first use (two threads may both make them: the same)."""
        key = (seglen, cpint)
        held = self._tasks.get(key)
        if held is None:
            tasks = ref_tasks(self.lengths, seglen, cpint)
            dev = {name: backend.asarray(getattr(tasks, name)) for name in ("rt_ref", "rt_seg", "later")}
            dev["ref_cp0"] = backend.asarray(tasks.ref_cp0[:-1].copy())
            backend.synchronize()  # on the device before jobs on other streams read them
            held = self._tasks[key] = (tasks, dev)
        return held


class GridRun(DeviceRun):
    """Aligns queries of one row bucket against a chunk's references (see the module's docstring)."""

    def run_grid(self, rows: int, prof: np.ndarray, pad: np.ndarray, lo: np.ndarray, hi: np.ndarray,
                 refs: DeviceRefs, seglen: int, first_pair: np.ndarray, results: Collector) -> None:
        """Align query slot s (profile ``prof[s]``, padding ``pad[s]``) against references
        ``lo[s]..hi[s]-1`` of ``refs``; pair (s, r) is pair ``first_pair[s] + r`` of the call."""
        be, t = self.be, self.t
        began = time.perf_counter()
        tasks, dev = refs.tasks(be, seglen, t.cpint)
        if tasks.n == 0:
            return
        kargs = KernelArgs(refs.letters, refs.offsets, refs.lengths_dev, None, None, None, be.asarray(prof),
                           be.asarray(pad), seglen, t.cpint, t.warm, self.gaps, self.threshold)
        state_bytes = 2 * rows * 4
        per_query = (tasks.n if tasks.later.shape[0] else 0) + tasks.cp_per_query
        budget = min(t.max_state_bytes, be.free_bytes() // 3)
        batch = max(1, min(t.max_tasks // tasks.n, budget // state_bytes // max(per_query, 1),
                           (2**31 - 1) // tasks.n))
        packed = (t.packed and rows in PACKED_ROWS and getattr(be, "packed_lanes", False)
                  and fits_16_bits(rows, int(refs.lengths.max()), self.params))
        self._lap("setup_s", began)
        for a in range(0, prof.shape[0], batch):
            b = min(prof.shape[0], a + batch)
            self._grid_batch(rows, a, b, lo, hi, refs, tasks, dev, kargs, first_pair, results,
                             prof[a:b] if packed else None)

    def _grid_batch(self, rows, a, b, lo, hi, refs: DeviceRefs, tasks: RefTasks, dev: dict, kargs: KernelArgs,
                    first_pair, results, packed: np.ndarray | None) -> None:
        """Queries (profile slots) ``a..b-1`` against the chunk's references; ``packed``: their
        profiles, for pass 1 two queries per thread (``scan_pass1_grid2``)."""
        xp, be, t = self.xp, self.be, self.t
        began = time.perf_counter()
        nq, n_rt, n_later, n_r = b - a, tasks.n, int(tasks.later.shape[0]), int(refs.lengths.shape[0])
        n_tasks = nq * n_rt
        d_slot = be.asarray(np.arange(a, b, dtype=np.int32))
        d_lo, d_hi = be.asarray(lo[a:b]), be.asarray(hi[a:b])
        kargs = replace(kargs, pair_q=d_slot, pair_r=d_slot, pair_cp=dev["ref_cp0"])  # unused by the grid kernels
        cp_per_q = tasks.cp_per_query
        d_cp = xp.empty(max(nq * cp_per_q, 1) * 2 * rows, dtype=np.int32)
        d_entry = xp.empty((n_tasks if n_later else 1) * 2 * rows, dtype=np.int32)
        grid = [np.int32(n_rt), dev["rt_ref"], dev["rt_seg"], d_slot, d_lo, d_hi, dev["ref_cp0"], np.int64(cp_per_q)]
        self.stats["tasks"] += n_tasks
        clock = self._lap("tasks_s", began)
        cap = max(4096, min(n_tasks, 1 << 22))
        if packed is None:
            cands = self._collect("scan_pass1_grid", rows, n_tasks,
                                  [np.int64(n_tasks), *grid, *kargs.args(), d_cp, d_entry], [], cap)
        else:
            n_threads = (nq + 1) // 2 * n_rt
            cands = self._collect("scan_pass1_grid2", rows, n_threads,
                                  [np.int64(n_threads), np.int32(nq), *grid[:3], d_lo, d_hi, *grid[6:],
                                   be.asarray(pair_profiles(packed)), kargs.q_pad[a:b], *kargs.args(), d_cp, d_entry],
                                  [], cap)
            self.stats["packed_tasks"] = self.stats.get("packed_tasks", 0) + n_tasks
        clock = self._lap("pass1_s", clock)
        if n_later:
            flags = xp.zeros(nq * n_later, np.uint8)
            be.launch("scan_verify_grid", rows, nq * n_later,
                      [np.int64(nq * n_later), np.int32(n_later), dev["later"], *grid[:3], d_lo, d_hi, dev["ref_cp0"],
                       np.int64(cp_per_q), np.int32(kargs.seglen), np.int32(t.cpint), np.int32(2 * rows), d_cp,
                       d_entry, flags], t.block, plain=True)
            bad = be.to_host(xp.flatnonzero(flags))
            if bad.size:
                cands = self._grid_repair(rows, bad, a, tasks, kargs, cands, n_tasks, n_r, d_cp, d_entry)
        clock = self._lap("verify_repair_s", clock)

        def trace_args(d_pair):
            n = int(d_pair.shape[0])
            pq, pr, pcp = xp.empty(n, np.int32), xp.empty(n, np.int32), xp.empty(n, np.int64)
            be.launch("scan_grid_trace_args", rows, n, [np.int64(n), d_pair, np.int32(n_r), np.int32(a),
                                                       np.int64(cp_per_q), dev["ref_cp0"], pq, pr, pcp],
                      t.block, plain=True)
            return replace(kargs, pair_q=pq, pair_r=pr, pair_cp=pcp), xp.arange(n, dtype=np.int32)

        def call_pair(local: np.ndarray) -> np.ndarray:
            sq = local // n_r
            return first_pair[a + sq] + (local - sq * n_r)

        self._finish(rows, trace_args, d_cp, TaskPairs(n_rt, n_r, dev["rt_ref"]), cands, nq * n_r,
                     int(refs.lengths.max()), clock, call_pair, results)

    def _grid_repair(self, rows, bad, a, tasks: RefTasks, kargs: KernelArgs, cands, n_tasks, n_r, d_cp, d_entry):
        """Repair the (query, reference) pairs of the flagged segment starts ``bad`` (from each
        pair's first flagged segment on)."""
        be = self.be
        n_later = tasks.later.shape[0]
        qi = bad // n_later
        rt = tasks.later[bad % n_later]
        ref = tasks.rt_ref[rt].astype(np.int64)
        seg = tasks.rt_seg[rt]
        key = qi * n_r + ref
        order = np.lexsort((seg, key))
        first = order[np.r_[True, key[order][1:] != key[order][:-1]]]
        rq, rr, rk = qi[first], ref[first], seg[first]
        n_seg = tasks.n_seg[rr]
        task0 = np.zeros(first.shape[0] + 1, np.int64)
        np.cumsum(n_seg, out=task0[1:])
        pos = np.repeat(tasks.ref_task0[rr] - task0[:-1], n_seg) + np.arange(task0[-1])
        rp_tasks = np.repeat(rq, n_seg) * tasks.n + tasks.rt_of[pos]
        rp = replace(kargs, pair_q=be.asarray((rq + a).astype(np.int32)), pair_r=be.asarray(rr.astype(np.int32)),
                     pair_cp=be.asarray(rq * tasks.cp_per_query + tasks.ref_cp0[rr]))
        return self._repair(rows, rp, cands, n_tasks, rk, task0, rp_tasks, d_cp, d_entry)
