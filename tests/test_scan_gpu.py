"""The GPU scan engine (gamut.scanning.engines.gpu) must return exactly what the CPU engine returns.

Two ways to run the CUDA kernels' code:
- on a GPU (tests marked ``gpu``, skipped without one): GpuEngine through CuPy;
- on any machine with g++: the same kernel source compiled for the host
  (``tests/host/scan_host.cu``, backend in ``scan_host``), driven by the same Python pipeline. These run in CI and cover the
  segment/checkpoint/repair/traceback-window logic with tiny tuning values that force every path.
"""
from __future__ import annotations

import math
import shutil
import threading
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gamut.scanning.alignments import EncodedSeq
from scan_cpu_engine import CpuEngine
from scan_host import HostBackend, build_scan_host
from scan_reference import align_pairs
from gamut.scanning.engines.common import order_and_suppress
from gamut.scanning.engines.gpu import GpuEngine
from gamut.scanning.engines.gpu_device import suppress_sorted
from gamut.scanning.engines.gpu_plan import (
    MAX_GPU_QUERY,
    PACKED_ROWS,
    ROW_BUCKETS,
    GpuTuning,
    bucket_for,
    dense_slots,
    fits_16_bits,
    gap_scalars,
    gather_sequences,
    split_over_devices,
)
from gamut.scanning.hits import SequenceSet
from gamut.scanning.params import ScanParams, row_scheme

CASES = sorted(p for p in (Path(__file__).parent / "data" / "miranda").iterdir() if p.is_dir())
FIELDS = ("score", "i_end", "j_end", "i_start", "j_start", "op_offsets", "ops")
#: Tuning that splits references into tiny segments with almost no warm-up and short traceback
#: windows, so repairs and CPU fallbacks happen all the time.
TINY = GpuTuning(cpint=8, warm=2, min_seg=16, max_seg=32, target_tasks=10**9, trace_margin=1)
COMPLEMENT = np.array([3, 2, 1, 0, 4], np.int8)  # A<->U, C<->G, masked stays


def assert_same(got, want, pairs) -> int:
    assert len(got) == len(want)
    for k, (g, w) in enumerate(zip(got, want)):
        for f in FIELDS:
            a, b = getattr(g, f), getattr(w, f)
            assert a.dtype == b.dtype, (pairs[k], f)
            assert np.array_equal(a, b), (pairs[k], f, a[:8], b[:8])
    return sum(len(w) for w in want)


def random_case(rng: np.random.Generator, nq: int, nr: int, qlen: tuple[int, int], rlen: tuple[int, int],
                odd: float = 0.05):
    """Random queries and references (with some masked letters) and planted query complements."""
    probs = np.array([1, 1, 1, 1, 0]) * (1 - odd) / 4 + np.array([0, 0, 0, 0, odd])
    qs = [EncodedSeq(rng.choice(5, int(rng.integers(qlen[0], qlen[1] + 1)), p=probs).astype(np.int8))
          for _ in range(nq)]
    refs = []
    for _ in range(nr):
        codes = rng.choice(5, int(rng.integers(rlen[0], rlen[1] + 1)), p=probs).astype(np.int8)
        for _ in range(int(rng.integers(0, 4))):
            q = qs[int(rng.integers(nq))].codes
            if codes.shape[0] > q.shape[0]:
                site = COMPLEMENT[q[::-1]].copy()
                mutate = rng.random(site.shape[0]) < 0.15
                site[mutate] = rng.integers(0, 5, int(mutate.sum()))
                pos = int(rng.integers(0, codes.shape[0] - q.shape[0] + 1))
                codes[pos : pos + q.shape[0]] = site
        refs.append(EncodedSeq(codes))
    pairs = np.array([(a, b) for a in range(nq) for b in range(nr)], np.int64).reshape(-1, 2)
    return qs, refs, pairs


def random_params(rng: np.random.Generator) -> ScanParams:
    return ScanParams(
        score_threshold=int(rng.choice([140, 100, 70, 40])),
        scale=float(rng.choice([4.0, 2.5, 1.0, 6.3])),
        gap_open=int(rng.choice([-9, -6, -2, 0])),
        gap_extend=int(rng.choice([-4, -2, -1, 0])),
    )


# ------------------------------------------------------------------------------------------
# Pure-Python pieces (no compiler, no GPU)
# ------------------------------------------------------------------------------------------


@given(st.lists(st.integers(0, 300), max_size=200))
def test_dense_slots_equal_numpy_unique(ids):
    ids = np.array(ids, np.int64)
    unique, inverse = dense_slots(ids)
    want_unique, want_inverse = np.unique(ids, return_inverse=True)
    assert unique.tolist() == want_unique.tolist() and inverse.tolist() == want_inverse.tolist()


@given(st.lists(st.integers(0, 10**6), max_size=300), st.integers(1, 5))
def test_split_over_devices_partitions_and_balances(cells, devices):
    """Every pair goes to exactly one device (each share ascending), and dealing by size in a
    snake order keeps any two devices' cells within the largest pair's cells of each other."""
    cells = np.array(cells, np.int64)
    index = np.arange(cells.shape[0], dtype=np.int64) * 3  # pair numbers, not positions
    shares = split_over_devices(index, cells, devices)
    assert len(shares) == devices
    joined = np.concatenate(shares)
    assert sorted(joined.tolist()) == index.tolist()
    assert all(np.all(np.diff(s) > 0) for s in shares)
    totals = [int(cells[s // 3].sum()) for s in shares]
    assert max(totals) - min(totals) <= (int(cells.max()) if cells.size else 0)


def test_bucket_for_picks_smallest_fitting_bucket():
    for n in range(0, MAX_GPU_QUERY + 1):
        b = bucket_for(n)
        assert b >= n and b in ROW_BUCKETS
        assert all(x < n for x in ROW_BUCKETS if x < b)
    assert bucket_for(MAX_GPU_QUERY + 1) == 0


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text("ACGUNXacgu", min_size=0, max_size=30), min_size=1, max_size=8), st.floats(0.1, 10))
def test_same_length_tables_equal_query_tables(seqs, scale):
    """The GPU engine's tables of all the queries of one length, built at once, equal query_tables'."""
    from gamut.scanning.params import query_tables, same_length_tables
    from gamut.scanning.fasta import SeqRecord, sequence_set_of

    qs = sequence_set_of([SeqRecord(f"q{k}", "", s.encode()) for k, s in enumerate(seqs)])
    params = ScanParams(scale=scale)
    lengths = qs.lengths()
    for length in np.unique(lengths).tolist():
        which = np.flatnonzero(lengths == length)
        built = same_length_tables(qs, which, length, row_scheme(length, params))
        for q, got in zip(which.tolist(), built, strict=True):
            want = query_tables(qs.class_codes(q), params)
            for name in ("qrev", "profile", "gap_open", "gap_extend", "seed_row"):
                assert np.array_equal(getattr(got, name), getattr(want, name)), name


@given(st.floats(0.1, 10), st.integers(-12, 0), st.integers(-12, 0))
def test_gap_scalars_match_row_scheme(scale, go, ge):
    params = ScanParams(scale=scale, gap_open=go, gap_extend=ge)
    normal_open, normal_ext, seed_open, seed_ext = gap_scalars(params)
    for L in (1, 5, 9, 22, 40):
        scheme = row_scheme(L, params)
        for i in range(1, L + 1):
            if scheme.seed_row[i]:
                assert (scheme.gap_open[i], scheme.gap_extend[i]) == (seed_open, seed_ext)
            else:
                assert (scheme.gap_open[i], scheme.gap_extend[i]) == (normal_open, normal_ext)


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_suppress_sorted_matches_cpu(data):
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    n_pairs = data.draw(st.integers(1, 4))
    qlen = rng.integers(1, 30, n_pairs)
    rlen = rng.integers(1, 200, n_pairs)
    pair, rows, cols, scores = [], [], [], []
    want = []
    for p in range(n_pairs):
        n = int(rng.integers(0, 60))
        # Unique cells, few score values (many ties).
        cells = rng.choice(int(qlen[p]) * int(rlen[p]), size=min(n, int(qlen[p]) * int(rlen[p])), replace=False)
        i = (cells % qlen[p] + 1).astype(np.int32)
        j = (cells // qlen[p] + 1).astype(np.int32)
        s = rng.integers(140, 146, i.shape[0]).astype(np.int32)
        keep = order_and_suppress(s, i, j, int(qlen[p]), int(rlen[p]))
        want += [(p, int(s[k]), int(i[k]), int(j[k])) for k in keep]
        pair += [p] * i.shape[0]
        rows += list(i)
        cols += list(j)
        scores += list(s)
    pair, rows, cols, scores = (np.array(x, dtype=d) for x, d in
                                ((pair, np.int64), (rows, np.int32), (cols, np.int32), (scores, np.int32)))
    o = np.lexsort((rows, cols, -scores.astype(np.int64), pair))
    mask = suppress_sorted(pair[o], rows[o], cols[o], int(qlen.max()), int(rlen.max()))
    got = [(int(p), int(s), int(i), int(j)) for p, s, i, j in zip(pair[o][mask], scores[o][mask], rows[o][mask],
                                                                   cols[o][mask])]
    assert got == want


# ------------------------------------------------------------------------------------------
# The kernels compiled for the host (needs g++): the whole pipeline against the CPU engine
# ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def host_lib(tmp_path_factory):
    if shutil.which("g++") is None:
        pytest.skip("g++ not available to build the host version of the kernels")
    return build_scan_host(tmp_path_factory.mktemp("scan_host"))


def host_engine(lib: str, tuning: GpuTuning | None = None) -> GpuEngine:
    return GpuEngine([], threads=1, backends=[HostBackend(lib)], tuning=tuning)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_host_kernels_match_cpu_engine(host_lib, data):
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    qs, refs, pairs = random_case(rng, nq=3, nr=3, qlen=(1, 70), rlen=(0, 1500), odd=data.draw(st.sampled_from([0.0, 0.05, 0.5])))
    params = random_params(rng)
    tuning = data.draw(st.sampled_from([TINY, GpuTuning(), GpuTuning(max_tasks=7, max_state_bytes=20_000, scratch_bytes=4096), GpuTuning(cpint=16, warm=8, min_seg=32, max_seg=64,
                                                                      target_tasks=10**9, trace_margin=3),
                                        GpuTuning(suppress_limit=2), GpuTuning(device_suppress=False)]))
    engine = host_engine(host_lib, tuning)
    assert_same(align_pairs(engine, qs, refs, pairs, params), align_pairs(CpuEngine(1), qs, refs, pairs, params), pairs)


def test_packed_pass1_only_where_every_score_fits_16_bits():
    assert fits_16_bits(32, 10**6, ScanParams())  # miRanda's scores do not grow with the reference
    assert not fits_16_bits(32, 10**4, ScanParams(scale=-4.0, gap_open=-2))  # seed gaps gain 8 per letter
    assert not fits_16_bits(64, 100, ScanParams(scale=100.0))


class _ZeroedNumpy:
    """NumPy whose ``empty`` is ``zeros``: state buffers that pass 1 leaves unwritten compare equal."""

    def __getattr__(self, name):
        return getattr(np, name)

    @staticmethod
    def empty(*args, **kwargs):
        return np.zeros(*args, **kwargs)


class _Pass1Recorder(HostBackend):
    """The host build, keeping what each pass-1 launch of a grid chunk wrote: its checkpoints, entry
    states and candidates (sorted)."""

    def __init__(self, lib: str) -> None:
        super().__init__(lib)
        self.xp = _ZeroedNumpy()
        self.written: dict = {}
        self.lock = threading.Lock()

    def launch(self, name, rows, n, args, block, plain=False):
        super().launch(name, rows, n, args, block, plain)
        if name.startswith("scan_pass1_grid"):
            cp, entry, count, cands = args[-5], args[-4], args[-3], args[-1]
            got = cands[: int(count[0])] if int(count[0]) <= cands.shape[0] else None  # None: overflowed, run again
            with self.lock:  # row buckets run on threads of their own: kept by bucket, in launch order
                self.written.setdefault(rows, []).append(
                    (name, cp.copy(), entry.copy(), None if got is None else got[np.lexsort(got.T[::-1])]))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_host_packed_pass1_writes_what_the_int32_pass1_writes(host_lib, data):
    """Pass 1 two queries per thread in 16-bit lanes (scan_pass1_grid2): the same checkpoints, entry
    states and candidates as scan_pass1_grid, launch by launch (odd query counts, partial rows, every
    bucket of 9..64 rows, tiny segments with warm-ups too short to be right), and the same results as
    the CPU engine; parameters whose scores could leave 16 bits keep the int32 pass 1."""
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    qs, refs, pairs = random_case(rng, nq=data.draw(st.integers(1, 5)), nr=data.draw(st.integers(1, 3)),
                                  qlen=(9, 64), rlen=(0, 900), odd=data.draw(st.sampled_from([0.0, 0.05])))
    params = data.draw(st.sampled_from([ScanParams(score_threshold=60), ScanParams(score_threshold=-2),
                                        ScanParams(score_threshold=40, gap_extend=0, scale=6.3),
                                        ScanParams(scale=-4.0, gap_open=-2)]))
    tuning = data.draw(st.sampled_from([TINY, GpuTuning(cpint=16, warm=8, min_seg=32, max_seg=64, target_tasks=10**9),
                                        GpuTuning(max_tasks=7, max_state_bytes=20_000, scratch_bytes=4096)]))
    chunk = data.draw(st.sampled_from([None, 1, 4]))
    runs = []
    for packed in (True, False):
        backend = _Pass1Recorder(host_lib)
        engine = GpuEngine([], threads=1, backends=[backend], tuning=replace(tuning, packed=packed))
        got = []
        for lo in range(0, len(pairs), chunk or len(pairs)):
            got += align_pairs(engine, qs, refs, pairs[lo: lo + (chunk or len(pairs))], params)
        runs.append((got, [(rows, *w) for rows in sorted(backend.written) for w in backend.written[rows]],
                     engine.stats.get("packed_tasks", 0)))
    (got, written, packed_tasks), (want, written32, _) = runs
    assert_same(got, want, pairs)
    assert_same(got, align_pairs(CpuEngine(1), qs, refs, pairs, params), pairs)
    assert len(written) == len(written32)
    for (rows, name, cp, entry, cands), (rows32, name32, cp32, entry32, cands32) in zip(written, written32):
        assert rows == rows32 and name32 == "scan_pass1_grid"
        if rows not in PACKED_ROWS:
            assert name == "scan_pass1_grid"
        elif params.scale > 0:  # scores this small fit in 16 bits (a negative scale's grow with the reference)
            assert name == "scan_pass1_grid2"
        assert np.array_equal(cp, cp32) and np.array_equal(entry, entry32)
        assert (cands is None) == (cands32 is None)
        assert cands is None or np.array_equal(cands, cands32)
    assert (packed_tasks > 0) == any(w[1] == "scan_pass1_grid2" for w in written)


def test_host_kernels_exercise_repair_and_fallback(host_lib):
    rng = np.random.default_rng(7)
    qs, refs, pairs = random_case(rng, nq=4, nr=4, qlen=(18, 26), rlen=(500, 3000))
    params = ScanParams(score_threshold=60, gap_extend=0)
    engine = host_engine(host_lib, TINY)
    n = assert_same(align_pairs(engine, qs, refs, pairs, params), align_pairs(CpuEngine(1), qs, refs, pairs, params), pairs)
    assert n > 0
    assert engine.stats["repaired_tasks"] > 0
    assert engine.stats["trace_fallback_pairs"] > 0


def test_host_kernels_split_over_two_workers(host_lib):
    """Two backends (as for two GPUs) in two threads: same results as the CPU engine."""
    rng = np.random.default_rng(3)
    qs, refs, pairs = random_case(rng, nq=5, nr=4, qlen=(4, 30), rlen=(1, 2500))
    params = ScanParams(score_threshold=90)
    engine = GpuEngine([], threads=1, backends=[HostBackend(host_lib), HostBackend(host_lib)])
    assert_same(align_pairs(engine, qs, refs, pairs, params), align_pairs(CpuEngine(1), qs, refs, pairs, params), pairs)
    assert engine.stats["tasks"] > 0


def test_host_kernels_long_reference_and_nonpositive_threshold(host_lib):
    rng = np.random.default_rng(11)
    qs, refs, pairs = random_case(rng, nq=2, nr=1, qlen=(20, 24), rlen=(30_000, 30_000))
    params = ScanParams()
    engine = host_engine(host_lib)
    assert_same(align_pairs(engine, qs, refs, pairs, params), align_pairs(CpuEngine(1), qs, refs, pairs, params), pairs)
    qs, refs, pairs = random_case(rng, nq=2, nr=2, qlen=(4, 12), rlen=(1, 200))
    for threshold in (0, -3):
        params = ScanParams(score_threshold=threshold)
        assert_same(align_pairs(host_engine(host_lib, TINY), qs, refs, pairs, params),
                    align_pairs(CpuEngine(1), qs, refs, pairs, params), pairs)


def test_host_kernels_real_and_extreme_thresholds(host_lib):
    """The GPU engine compares with ceil(T) of a real threshold, and clamps thresholds beyond its
    int32 cells (which no score reaches, or every cell does) instead of failing."""
    rng = np.random.default_rng(5)
    qs, refs, pairs = random_case(rng, nq=3, nr=3, qlen=(18, 26), rlen=(200, 1500))
    for threshold in (60.5, 89.01, 119.999, -2.5, 1e300, -1e300, 2**40):
        params = ScanParams(score_threshold=threshold)
        got = align_pairs(host_engine(host_lib, TINY), qs, refs, pairs, params)
        assert_same(got, align_pairs(CpuEngine(1), qs, refs, pairs, params), pairs)
        whole = ScanParams(score_threshold=max(-(2**31), min(math.ceil(threshold), 2**31)))
        assert_same(got, align_pairs(CpuEngine(1), qs, refs, pairs, whole), pairs)


def test_host_kernels_golden_cases(host_lib, tmp_path, monkeypatch):
    """Every golden case, byte for byte, with the kernels' host build as the engine."""
    import gamut.scanning.api as api
    from test_scan_golden import results_after_settings, run_case

    monkeypatch.setattr(api, "make_engine", lambda device="auto", threads=None, gpus=None, **_: host_engine(host_lib))
    for case in CASES:
        args = (case / "args.txt").read_text().split()
        expected = case / ("expected.txt" if "-noenergy" in args else "expected_noenergy.txt")
        got = results_after_settings(run_case(case, ["-noenergy"], tmp_path, monkeypatch))
        assert got == expected.read_text(encoding="latin-1"), case.name


def test_host_kernels_golden_cases_in_small_chunks(host_lib, tmp_path, monkeypatch):
    """Every golden case, byte for byte, with chunks of a few pairs: chunks that start and end inside
    a query's row (the grid path's partial rows) and references uploaded anew for each range."""
    import gamut.scanning.api as api
    from test_scan_golden import results_after_settings, run_case

    engines = []

    def small_chunks(device="auto", threads=None, gpus=None, **_):
        engine = host_engine(host_lib, GpuTuning(cpint=16, warm=8, min_seg=32, max_seg=64))
        engine.preferred_chunk_pairs = 3
        engines.append(engine)
        return engine

    monkeypatch.setattr(api, "make_engine", small_chunks)
    for case in CASES:
        args = (case / "args.txt").read_text().split()
        expected = case / ("expected.txt" if "-noenergy" in args else "expected_noenergy.txt")
        got = results_after_settings(run_case(case, ["-noenergy"], tmp_path, monkeypatch))
        assert got == expected.read_text(encoding="latin-1"), case.name
    assert sum(e.stats.get("grid_chunks", 0) for e in engines) > len(CASES)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_device_grouping_sorts_and_suppresses_like_the_host(host_lib, data):
    """The device's survivors (candidates grouped by pair with atomics, each pair sorted and
    suppressed by one thread, pairs past suppress_limit suppressed on the host) equal a host
    lexsort and suppress_sorted, whatever order the candidates come in: few and many per pair
    (insertion sort and heapsort), many ties, pairs without any."""
    from gamut.scanning.engines.gpu_device import DeviceRun, TaskPairs

    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    n_pairs = data.draw(st.integers(1, 12))
    rows, max_ref = 30, 400
    cand = []
    for p in range(n_pairs):
        n = int(rng.choice([0, 1, 3, 20, 25, 60, 300]))
        cells = rng.choice(rows * max_ref, size=n, replace=False)
        scores = rng.integers(140, 140 + int(rng.integers(1, 8)), n)
        cand += [(p, int(c % rows) + 1, int(c // rows) + 1, int(sc)) for c, sc in zip(cells, scores)]
    if not cand:
        return
    cand = np.array(cand, np.int64)[rng.permutation(len(cand))]
    pair = np.ascontiguousarray(cand[:, 0])
    # Each pair's candidates come from two tasks: a listed batch (the map names each task's pair) or a grid batch
    # (pair q * n_r + r; task q * n_rt + 2 r or 2 r + 1; the map names each segment's reference).
    coin = rng.integers(0, 2, len(cand))
    if data.draw(st.booleans()):
        task = 2 * pair + coin
        task_map = TaskPairs(2 * n_pairs, 0, np.repeat(np.arange(n_pairs, dtype=np.int32), 2))
    else:
        n_r = data.draw(st.sampled_from([d for d in range(1, n_pairs + 1) if n_pairs % d == 0]))
        task = (pair // n_r) * 2 * n_r + 2 * (pair % n_r) + coin
        task_map = TaskPairs(2 * n_r, n_r, np.repeat(np.arange(n_r, dtype=np.int32), 2))
    cands = np.zeros((len(cand), 4), np.int32)
    cands[:, 0] = task
    cands[:, 1:] = cand[:, 1:]
    o = np.lexsort((cand[:, 1], cand[:, 2], -cand[:, 3], pair))
    keep = suppress_sorted(pair[o], cand[o, 1].astype(np.int32), cand[o, 2].astype(np.int32), rows, max_ref)
    want = cand[o][keep]
    tuning = GpuTuning(suppress_limit=data.draw(st.sampled_from([2, 24, 4096])),
                       device_suppress=data.draw(st.booleans()))
    run = DeviceRun(HostBackend(host_lib), tuning, ScanParams())
    d_pair, d_i, d_j, host = run._survivors(task_map, cands, n_pairs, rows, max_ref)
    assert np.array_equal(host.T, want[:, [0, 1, 2, 3]])
    assert np.array_equal(np.stack([d_pair, d_i, d_j]), host[:3])
    assert run.stats["candidates"] == len(cand) and run.stats["survivors"] == len(want)


class CountingBackend(HostBackend):
    """A host backend whose candidate kernel reports ``planned`` candidates (issue #17)."""

    def __init__(self, planned: int) -> None:  # noqa: D107 (no library: launch is replaced)
        self.xp = np
        self.device_id = -1
        self.peak_bytes = 0
        self.planned = planned
        self.caps: list[int] = []

    def launch(self, name, rows, n, args, block, plain=False) -> None:
        count, cap, cands = args[1:4]  # after the kernel's first argument, as _collect passes them
        assert count.dtype == np.uint64 and count.shape == (1,)
        self.caps.append(int(cap))
        count[0] = self.planned
        stored = min(self.planned, int(cap))
        cands[:stored] = np.arange(stored)[:, None]


@pytest.mark.parametrize("planned", [0, 4096, 10_000, 3_000_000])
def test_candidate_buffer_grows_until_every_candidate_is_kept(planned):
    from gamut.scanning.engines.gpu_device import DeviceRun

    backend = CountingBackend(planned)
    run = DeviceRun(backend, GpuTuning(), ScanParams())
    got = run._collect("scan_pass1", 16, 1, [np.int32(1)], [], 4096)
    assert got.shape == (planned, 4)
    assert np.array_equal(got[:, 0], np.arange(planned))
    assert backend.caps[-1] >= planned and len(backend.caps) == (1 if planned <= 4096 else 2)


@pytest.mark.parametrize("planned", [2**31, 2**32 + 3, 2**40])
def test_too_many_candidates_is_a_clear_error(planned):
    """An int32 count would wrap (2^32 + 3 reads as 3) and keep a partial buffer; the 64-bit count
    sees them all, and more than the buffer can index is an error, never a partial result."""
    from gamut.errors import DeviceError
    from gamut.scanning.engines.gpu_device import MAX_CANDIDATES, DeviceRun

    backend = CountingBackend(planned)
    backend.launch = lambda name, rows, n, args, block, plain=False: args[1].__setitem__(0, planned)
    run = DeviceRun(backend, GpuTuning(), ScanParams())
    with pytest.raises(DeviceError, match=f"{planned:,} alignment candidates in one GPU launch.*{MAX_CANDIDATES:,}"):
        run._collect("scan_pass1", 16, 1, [np.int32(1)], [], 4096)


def test_reference_longer_than_the_kernels_index_is_a_clear_error(host_lib):
    from gamut.errors import InputError
    from gamut.scanning.engines.gpu_plan import MAX_GPU_REFERENCE

    from gamut.scanning.hits import SequenceSet

    queries = SequenceSet.from_codes([np.zeros(20, np.int8)])
    huge = SequenceSet(["huge"], np.zeros(1, np.uint8), np.zeros(1, np.int8),
                       np.array([0, MAX_GPU_REFERENCE + 1], np.int64), True)  # only its length is read
    with pytest.raises(InputError, match="GPU engine's limit of 2,130,706,432 nt"):
        host_engine(host_lib).align(queries, huge, np.array([[0, 0]]), ScanParams())


def test_kernels_compile_for_hopper():
    """``scan_dp.cu`` (largest bucket) and ``splice.cu`` compile for sm_90 with NVRTC alone."""
    from gamut.splicing.gpu import STREAM_OPTIONS
    from test_fold_kernel_compile import nvrtc_compile

    kernels = Path(__file__).resolve().parents[1] / "src" / "gamut" / "cuda" / "kernels"
    for name, options, expressions in (
        ("scan_dp.cu", [], ["scan_pass1<64>", "scan_repair<64>", "scan_trace<64>", "scan_sort_suppress"]),
        ("splice.cu", ["-DCOLS=8", *STREAM_OPTIONS], []),
    ):
        rc, log = nvrtc_compile((kernels / name).read_bytes(), name, options, tuple(expressions))
        assert rc == 0, (name, log)


# ------------------------------------------------------------------------------------------
# On a GPU
# ------------------------------------------------------------------------------------------


@pytest.mark.gpu
@settings(max_examples=60, deadline=None)
@given(st.data())
def test_gpu_matches_cpu_engine(data):
    """Queries of 4-40 letters, references of 1-30,000, odd letters: GPU == CPU, hit for hit."""
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    long_refs = data.draw(st.booleans())
    qs, refs, pairs = random_case(rng, nq=4, nr=3, qlen=(4, 40), rlen=(1, 30_000) if long_refs else (1, 2_000),
                                  odd=data.draw(st.sampled_from([0.0, 0.05, 0.5])))
    params = random_params(rng)
    tuning = data.draw(st.sampled_from([GpuTuning(), TINY, GpuTuning(suppress_limit=2)]))
    engine = GpuEngine([0], threads=2, tuning=tuning)
    assert_same(align_pairs(engine, qs, refs, pairs, params), align_pairs(CpuEngine(2), qs, refs, pairs, params), pairs)


@pytest.mark.gpu
@settings(max_examples=30, deadline=None)
@given(st.data())
def test_gpu_packed_pass1_matches_the_int32_pass1(data):
    """On the device: pass 1 two queries per thread in 16-bit lanes gives what the int32 pass 1 and
    the CPU engine give (odd query counts, every bucket of 9..64 rows), and runs on a Hopper GPU
    wherever a query's bucket takes it."""
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    qs, refs, pairs = random_case(rng, nq=data.draw(st.integers(1, 7)), nr=3, qlen=(9, 64), rlen=(1, 5_000))
    params = data.draw(st.sampled_from([ScanParams(score_threshold=60), ScanParams(), ScanParams(score_threshold=-2)]))
    tuning = data.draw(st.sampled_from([GpuTuning(), TINY]))
    packed = GpuEngine([0], threads=2, tuning=tuning)
    got = align_pairs(packed, qs, refs, pairs, params)
    assert_same(got, align_pairs(GpuEngine([0], threads=2, tuning=replace(tuning, packed=False)), qs, refs, pairs,
                                 params), pairs)
    assert_same(got, align_pairs(CpuEngine(2), qs, refs, pairs, params), pairs)
    in_packed_rows = np.isin(bucket_for(np.array([q.codes.shape[0] for q in qs])), PACKED_ROWS).any()
    if packed.backends[0].packed_lanes and in_packed_rows:
        assert packed.stats.get("packed_tasks", 0) > 0


@pytest.mark.gpu
def test_gpu_long_queries_and_split_over_devices():
    """Queries beyond the largest bucket (CPU path) and two workers on the GPUs (or twice GPU 0)."""
    from gamut.cuda import available_gpus

    rng = np.random.default_rng(5)
    qs, refs, pairs = random_case(rng, nq=6, nr=5, qlen=(4, 90), rlen=(1, 5_000))
    params = ScanParams(score_threshold=90)
    gpus = list(available_gpus())
    ids = gpus[:2] if len(gpus) > 1 else [gpus[0], gpus[0]]
    engine = GpuEngine(ids, threads=2)
    assert_same(align_pairs(engine, qs, refs, pairs, params), align_pairs(CpuEngine(2), qs, refs, pairs, params), pairs)


@pytest.mark.gpu
@pytest.mark.parametrize("case", CASES, ids=lambda p: p.name)
def test_gpu_golden_noenergy(case, tmp_path, monkeypatch):
    from test_scan_golden import results_after_settings, run_case

    args = (case / "args.txt").read_text().split()
    expected = case / ("expected.txt" if "-noenergy" in args else "expected_noenergy.txt")
    got = results_after_settings(run_case(case, ["-noenergy", "--device", "cuda"], tmp_path, monkeypatch))
    assert got == expected.read_text(encoding="latin-1")


@pytest.mark.gpu
@pytest.mark.parametrize("case", CASES, ids=lambda p: p.name)
def test_gpu_golden_with_energies(case, tmp_path, monkeypatch):
    """Default mode on the GPU: alignments and duplex energies on the device, byte for byte."""
    from test_scan_golden import results_after_settings, run_case

    got = results_after_settings(run_case(case, ["--device", "cuda"], tmp_path, monkeypatch))
    assert got == (case / "expected.txt").read_text(encoding="latin-1")


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_task_tables_single_task_batches_equal_the_sorted_path(data):
    """The no-sort path for one reference length below seglen in query order gives the tables of the
    general path, array for array (so the launches see the same tasks in the same order)."""
    from gamut.scanning.engines.gpu_plan import task_tables, task_tables_sorted

    nb = data.draw(st.integers(1, 300))
    seglen = data.draw(st.sampled_from([128, 256, 512]))
    cpint = data.draw(st.sampled_from([32, 64, 128]))
    length = data.draw(st.integers(1, seglen - 1))
    q_slot = np.sort(np.array(data.draw(st.lists(st.integers(0, 40), min_size=nb, max_size=nb)), np.int64))
    R = np.full(nb, length, np.int64)
    fast = task_tables(q_slot, R, 41, seglen, cpint)
    slow = task_tables_sorted(q_slot, R, 41, seglen, cpint)
    for a, b in zip(fast, slow):
        assert a.dtype == b.dtype and np.array_equal(a, b)
    # anything else takes the general path
    R2 = R.copy()
    R2[-1] = seglen + 5
    for a, b in zip(task_tables(q_slot, R2, 41, seglen, cpint), task_tables_sorted(q_slot, R2, 41, seglen, cpint)):
        assert np.array_equal(a, b)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_host_kernels_one_reference_length(host_lib, data):
    """CLIP-like batches (every reference of one length): the analytic batch bounds and the no-sort
    task tables, over several batches and segment lengths, give the CPU engine's alignments."""
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    length = data.draw(st.sampled_from([1, 30, 50, 64, 200, 700]))
    qs, refs, pairs = random_case(rng, nq=5, nr=6, qlen=(4, 40), rlen=(length, length))
    params = random_params(rng)
    tuning = data.draw(st.sampled_from([GpuTuning(), GpuTuning(max_tasks=7, max_state_bytes=20_000),
                                        GpuTuning(cpint=16, warm=8, min_seg=32, max_seg=64, max_tasks=5)]))
    engine = host_engine(host_lib, tuning)
    assert_same(align_pairs(engine, qs, refs, pairs, params), align_pairs(CpuEngine(1), qs, refs, pairs, params), pairs)


@settings(max_examples=60, deadline=None)
@given(lengths=st.lists(st.integers(0, 300), min_size=1, max_size=30), data=st.data())
def test_gather_sequences_concatenates_the_chosen_sequences(lengths, data):
    rng = np.random.default_rng(len(lengths))
    codes = [rng.integers(-1, 5, n).astype(np.int8) for n in lengths]
    seqs = SequenceSet.build([str(k) for k in range(len(codes))], [b"N" * n for n in lengths], codes)
    which = np.array(sorted(data.draw(st.sets(st.integers(0, len(lengths) - 1), min_size=1))), np.int64)
    got, got_lengths = gather_sequences(seqs, which)
    assert got.dtype == np.int8
    assert got_lengths.tolist() == [lengths[k] for k in which]
    expected = np.concatenate([codes[k] for k in which])
    assert np.array_equal(got, expected)


# ------------------------------------------------------------------------------------------
# Chunks of consecutive pairs (gpu_grid): no pair lists on the host
# ------------------------------------------------------------------------------------------


@settings(max_examples=80, deadline=None)
@given(n_q=st.integers(1, 6), n_r=st.integers(1, 7), data=st.data())
def test_grid_chunk_recognises_runs_of_consecutive_pairs(n_q, n_r, data):
    from gamut.scanning.engines.gpu_grid import GridChunk

    total = n_q * n_r
    k0 = data.draw(st.integers(0, total - 1))
    k1 = data.draw(st.integers(k0 + 1, total))
    index = np.arange(k0, k1)
    pairs = np.stack((index // n_r, index % n_r), axis=1)
    grid = GridChunk.of_pairs(pairs, n_r)
    assert grid == GridChunk(k0, k1, n_r)
    queries, lo, hi = grid.rows()
    ra, rb = grid.ref_range
    listed = [(q, ra + r) for q, a, b in zip(queries, lo, hi) for r in range(a, b)]
    assert listed == [tuple(p) for p in pairs.tolist()]
    first = grid.first_pair(queries)
    assert [int(first[s] + r) for s in range(len(queries)) for r in range(lo[s], hi[s])] == list(range(k1 - k0))
    assert all(0 <= p[1] - ra < rb - ra for p in pairs.tolist())
    if pairs.shape[0] > 1:  # any other list is not a run
        assert GridChunk.of_pairs(pairs[::-1].copy(), n_r) is None
    if pairs.shape[0] > 2:
        assert GridChunk.of_pairs(np.delete(pairs, data.draw(st.integers(1, pairs.shape[0] - 2)), axis=0), n_r) is None
    assert GridChunk.of_pairs(pairs[:0], n_r) is None


@settings(max_examples=80, deadline=None)
@given(lengths=st.lists(st.integers(0, 200), min_size=1, max_size=20),
       seglen=st.sampled_from([8, 16, 32, 64]), cpint=st.sampled_from([4, 8]))
def test_ref_tasks_cover_every_segment_once(lengths, seglen, cpint):
    from gamut.scanning.engines.gpu_grid import ref_tasks

    tasks = ref_tasks(np.array(lengths), seglen, cpint)
    want = {(r, k) for r, n in enumerate(lengths) for k in range(-(-n // seglen))}
    got = list(zip(tasks.rt_ref.tolist(), tasks.rt_seg.tolist()))
    assert sorted(got) == sorted(want) and len(got) == len(want)
    for rt, (r, k) in enumerate(got):
        assert tasks.rt_of[tasks.ref_task0[r] + k] == rt
    full = [g for g in got if (g[1] + 1) * seglen <= lengths[g[0]]]
    assert got[:len(full)] == full  # full segments first, then partial ones, longest first
    rems = [lengths[r] - k * seglen for r, k in got[len(full):]]
    assert rems == sorted(rems, reverse=True)
    assert tasks.later.tolist() == [rt for rt, (_, k) in enumerate(got) if k > 0]
    assert tasks.ref_cp0.tolist() == np.concatenate([[0], np.cumsum(np.array(lengths) // cpint)]).tolist()
    assert tasks.cp_per_query == sum(n // cpint for n in lengths)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_host_kernels_chunks_of_consecutive_pairs(host_lib, data):
    """Runs of consecutive pairs (partial first and last rows, empty and 1-nt references, queries of
    every bucket and beyond it) take the grid path; the same pairs listed out of order take the
    listed path; both give the CPU engine's alignments."""
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    nq, nr = data.draw(st.integers(1, 5)), data.draw(st.integers(1, 5))
    qs, refs, pairs = random_case(rng, nq=nq, nr=nr, qlen=(0, 72), rlen=(0, 900),
                                  odd=data.draw(st.sampled_from([0.0, 0.05])))
    if data.draw(st.booleans()):
        refs[int(rng.integers(nr))] = EncodedSeq(np.array([int(rng.integers(5))], np.int8))
    params = random_params(rng)
    tuning = data.draw(st.sampled_from([TINY, GpuTuning(), GpuTuning(max_tasks=7, max_state_bytes=20_000),
                                        GpuTuning(cpint=16, warm=8, min_seg=32, max_seg=64, max_tasks=5)]))
    k0 = data.draw(st.integers(0, pairs.shape[0] - 1))
    k1 = data.draw(st.integers(k0 + 1, pairs.shape[0]))
    run = pairs[k0:k1]
    want = align_pairs(CpuEngine(1), qs, refs, run, params)
    engine = host_engine(host_lib, tuning)
    assert_same(align_pairs(engine, qs, refs, run, params), want, run)
    assert engine.stats.get("grid_chunks") == 1 and "listed_chunks" not in engine.stats
    if run.shape[0] > 1:
        order = np.roll(rng.permutation(run.shape[0]), 1) if run.shape[0] > 2 else np.array([1, 0])
        if np.array_equal(order, np.arange(run.shape[0])):
            order = order[::-1].copy()
        engine = host_engine(host_lib, tuning)
        got = align_pairs(engine, qs, refs, run[order], params)
        assert_same(got, [want[k] for k in order], run[order])
        assert engine.stats.get("listed_chunks") == 1
