"""The GPU traceback kernel (``splice_traceback.cu``) built for the host with g++ and run
block-serially (no GPU needed): it must give exactly :func:`gamut.splicing.cpu.traceback`'s score,
chain and alignment (same tie rules) on every case of a batch, and the GPU engine's host side
(packing, collection, result building) must give the CPU engines' results."""
from __future__ import annotations


import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gamut.errors import DeviceError
from gamut.splicing import api
from gamut.splicing import cpu
from gamut.splicing import engines
from gamut.splicing import gpu as splice_gpu
from gamut.splicing import gpu_layout
from gamut.splicing.batch import CaseBatch
from gamut.splicing.gpu import collect_tracebacks
from gamut.splicing.gpu_layout import PackedBatch
from gamut.splicing.model import ScoreParams, make_case

from host_build import require_compiler
from splice_generate import il1rapl1_like_case, paper_like_cases, wide_case
from splice_harness import SpliceHarness, concatenated, host_solve_gpu
from splice_helpers import assert_tracebacks_match_cpu, case_lists, insertion_cases, short_exon_cases


@pytest.fixture(scope="module")
def harness(tmp_path_factory) -> SpliceHarness:
    require_compiler()
    return SpliceHarness(tmp_path_factory.mktemp("splice_tb"))


@pytest.fixture(scope="module")
def tiny_harness(tmp_path_factory) -> SpliceHarness:
    """The kernel with a 3-row x 16-byte walk window and symbols/boundaries staged 2 rows at a
    time: the walk reloads its window every few steps and the rows loop restages often."""
    require_compiler()
    return SpliceHarness(tmp_path_factory.mktemp("splice_tb_tiny"), TB_WIN_ROWS=3, TB_WIN_BYTES=16, TB_CHUNK=2)


def device_tracebacks(harness, cases, params, threads=256, slots=4, cap=None):
    """Tracebacks of the host-built kernel for ``cases`` (CPU forward pass); ``cap``: columns per
    strip (default: every case in one strip)."""
    packed = PackedBatch(cases, 8, slots)
    last, pred = concatenated([cpu.forward_fast(c, params.matrix, params.gap) for c in cases])
    return collect_tracebacks(packed, *harness.run(packed, last, pred, params.matrix, params.gap, threads, cap))


@settings(max_examples=150, deadline=None)
@given(case_lists(), st.sampled_from([1, 2, 3, 5, 32, 33, 64, 256]))
def test_device_traceback_equals_cpu_on_random_cases(harness, data, threads):
    cases, params = data
    assert_tracebacks_match_cpu(device_tracebacks(harness, cases, params, threads), cases, params)


@settings(max_examples=60, deadline=None)
@given(case_lists(max_target=700, max_exon=6), st.sampled_from([40, 96, 160, 1024]))
def test_device_traceback_row_scan_across_warps(harness, data, threads):
    """Targets much longer than the exons: long runs of horizontal moves that cross the segments
    of many threads and warps (the block-wide max-scan)."""
    cases, params = data
    assert_tracebacks_match_cpu(device_tracebacks(harness, cases, params, threads), cases, params)


@settings(max_examples=120, deadline=None)
@given(case_lists(max_target=400, max_exon=10), st.sampled_from([1, 3, 32, 33, 96, 1024]),
       st.sampled_from([64, 128, 192]), st.booleans())
def test_device_traceback_in_strips(harness, tiny_harness, data, threads, cap, tiny):
    """Targets cut into strips of 64-192 columns (each strip starting from the previous one's
    last column, staged per row), with the normal or the tiny window and staging."""
    cases, params = data
    assert_tracebacks_match_cpu(device_tracebacks(tiny_harness if tiny else harness, cases, params, threads, cap=cap),
                       cases, params)


@pytest.mark.parametrize("cap", [None, 64, 320, 1024])
@pytest.mark.parametrize("threads", [1, 37, 256])
def test_device_traceback_long_gap_runs(harness, tiny_harness, cap, threads):
    params = ScoreParams(match=2, mismatch=-1, gap=-1)
    cases = insertion_cases(params, seed=threads)
    for h in (harness, tiny_harness):
        assert_tracebacks_match_cpu(device_tracebacks(h, cases, params, threads, cap=cap), cases, params)


@pytest.mark.parametrize("seed", range(16))
def test_device_traceback_short_exons_in_strips(harness, tiny_harness, seed):
    """Exons entered at strip boundaries (the entry value left of a strip is thread 0's diagonal)."""
    params = ScoreParams(match=1 + seed % 3, mismatch=-1, gap=-1 - seed % 2)
    cases = short_exon_cases(params, seed)
    for h, threads, cap in ((harness, 1, 64), (harness, 5, 64), (tiny_harness, 64, 128), (harness, 33, None)):
        assert_tracebacks_match_cpu(device_tracebacks(h, cases, params, threads, cap=cap), cases, params)


@pytest.mark.parametrize("threads", [64, 256])
def test_device_traceback_equals_cpu_on_generated_cases(harness, threads):
    params = ScoreParams()
    generated = paper_like_cases(30, seed=4, scale=0.3)
    cases = [make_case(g.base, g.exons, g.target, params, name=g.name) for g in generated]
    assert_tracebacks_match_cpu(device_tracebacks(harness, cases, params, threads), cases, params)


@pytest.mark.parametrize("cap,threads", [(None, 256), (1024, 512), (4096, 1024)])
def test_device_traceback_on_full_size_cases(harness, cap, threads):
    """A few cases of the paper-shaped set at full scale (targets of thousands of columns, exons of
    hundreds of rows: many window reloads and stagings), whole or in strips."""
    params = ScoreParams(match=2, mismatch=-1, gap=-2)
    generated = paper_like_cases(6, seed=9)
    cases = [make_case(g.base, g.exons, g.target, params, name=g.name) for g in generated]
    assert_tracebacks_match_cpu(device_tracebacks(harness, cases, params, threads, cap=cap), cases, params)


def test_device_traceback_on_full_size_cases_tiny_window(tiny_harness):
    params = ScoreParams()
    generated = paper_like_cases(4, seed=5, scale=0.6)
    cases = [make_case(g.base, g.exons, g.target, params, name=g.name) for g in generated]
    assert_tracebacks_match_cpu(device_tracebacks(tiny_harness, cases, params, 128, cap=256), cases, params)


@pytest.mark.parametrize("cap", [None, 2048])
def test_device_traceback_on_a_wide_case(harness, cap):
    """A target of 20,000 columns against grouped, overlapping exons (a small :func:`wide_case`):
    long runs of target gaps between the clusters; in one strip or ten."""
    params = ScoreParams()
    g = wide_case(target_length=20_000, groups=3, exons_per_group=6, seed=2)
    case = make_case(g.base, g.exons, g.target, params, name=g.name)
    assert_tracebacks_match_cpu(device_tracebacks(harness, [case], params, threads=128, cap=cap), [case], params)


def test_traceback_strip_sizes():
    """Strips: the widest case in one when shared memory holds it, else what it holds (multiples of 64)."""
    budget = gpu_layout.traceback_dynamic_bytes(8704)
    assert gpu_layout.traceback_cap([8662, 100], budget) == 8704
    assert gpu_layout.traceback_cap([8662, 100], budget - 1) == 8640
    assert gpu_layout.traceback_cap([10], 1 << 30) == 64
    assert gpu_layout.traceback_cap([300_000], 227 * 1024 - 14_000) % 64 == 0
    packed = PackedBatch([small_case(ScoreParams())], 8, 4)
    assert packed.bnd_off(64)[-1] == 2 * (packed.max_exon[0] + 1)
    assert packed.bnd_off(1024)[-1] == 0
    assert (np.diff(packed.moves_off) % 16 == 0).all()


def test_gpu_engine_host_side_gives_the_cpu_results(harness, monkeypatch):
    """``api.solve(..., "gpu")`` with the host-built kernel in place of the device: packing,
    collection and result building give exactly the CPU engine's results."""
    params = ScoreParams(match=1, mismatch=-2, gap=-1)
    generated = paper_like_cases(25, seed=6, scale=0.2)
    cases = [make_case(g.base, g.exons, g.target, params, name=g.name) for g in generated]
    monkeypatch.setattr(splice_gpu, "solve_gpu", host_solve_gpu(harness, threads=96, cap=128))
    monkeypatch.setattr(engines, "launch_cells", lambda: 60_000)  # several launches (no device memory to ask)
    on_gpu = api.solve(cases, params, "gpu")
    on_cpu = api.solve(cases, params, "fast")
    assert len(on_gpu) == len(on_cpu) == len(cases)
    for a, b in zip(on_gpu, on_cpu):
        assert (a.score, a.chain, a.exons, a.target_spans, a.name, a.cells) == (
            b.score, b.chain, b.exons, b.target_spans, b.name, b.cells)
        assert (a.alignment.base, a.alignment.target, a.engine) == (b.alignment.base, b.alignment.target, "gpu")
        np.testing.assert_array_equal(a.alignment.base_pos, b.alignment.base_pos)
        np.testing.assert_array_equal(a.alignment.target_pos, b.alignment.target_pos)


def test_gpu_launch_groups_cover_the_cases_in_order(monkeypatch):
    params = ScoreParams()
    cases = [make_case(g.base, g.exons, g.target, params, name=g.name) for g in paper_like_cases(40, seed=1, scale=0.2)]
    batch = CaseBatch(cases)
    cells = gpu_layout.state_cells(batch)
    assert len(engines.gpu_groups(batch)) == 1
    monkeypatch.setattr(engines, "GPU_BATCH_CELLS", int(cells.max()) * 3)
    groups = engines.gpu_groups(batch)
    assert len(groups) > 1
    assert [n for g in groups for n in g.names] == [c.name for c in cases]
    sliced = [g.case(k) for g in groups for k in range(len(g))]
    for got, case in zip(sliced, cases):  # the same arrays as the cases (bases shared, not copied)
        for field in ("base", "starts", "ends", "order", "target"):
            np.testing.assert_array_equal(getattr(got, field), getattr(case, field))
    for g in groups:
        assert len(g) == 1 or gpu_layout.state_cells(g).sum() <= engines.GPU_BATCH_CELLS


def small_case(params):
    rng = np.random.default_rng(3)
    base = rng.integers(0, 4, 400).astype(np.uint8)
    exons = [(10, 60), (40, 90), (100, 180), (150, 220), (230, 300), (310, 390)]
    target = np.concatenate([base[10:60], base[100:180], base[310:390]])
    return make_case(base, exons, target, params, name="small")


@pytest.mark.parametrize("edit,message", [
    # Every exon names itself as predecessor: the walk's first step out of an exon.
    (lambda packed, last, pred: pred.__setitem__(slice(None), np.repeat(
        np.arange(packed.n_exons[0]), packed.target_len[0] + 1)), "pred names an exon that cannot precede"),
    (lambda packed, last, pred: pred.__setitem__(slice(None), 99), "neither -1 nor an exon"),
    (lambda packed, last, pred: pred.__setitem__(slice(None), -5), "neither -1 nor an exon"),
    (lambda packed, last, pred: last.__setitem__(slice(None), last + 1), "score is not the reported optimum"),
    (lambda packed, last, pred: packed.ops_off.__setitem__(slice(1, None), 30), "longer than the target"),
])
def test_inconsistent_forward_arrays_are_a_device_error(harness, monkeypatch, edit, message):
    params = ScoreParams()
    monkeypatch.setattr(splice_gpu, "solve_gpu", host_solve_gpu(harness, edit=edit))
    monkeypatch.setattr(engines, "launch_cells", lambda: engines.GPU_BATCH_CELLS)  # no device memory to ask
    with pytest.raises(DeviceError, match=f"GPU engine gave an inconsistent result.*{message}"):
        api.solve([small_case(params)], params, "gpu")


def test_ops_capacity_bound():
    """The ops capacity (target length plus the exons' union) holds every chain's alignment."""
    params = ScoreParams()
    generated = paper_like_cases(30, seed=8, scale=0.2)
    cases = [make_case(g.base, g.exons, g.target, params, name=g.name) for g in generated]
    packed = PackedBatch(cases, 8, 4)
    for c, case in enumerate(cases):
        last, pred = cpu.forward_fast(case, params.matrix, params.gap)
        _, chain, ops = cpu.traceback(case, params.matrix, params.gap, last, pred)
        assert ops.size <= packed.ops_off[c + 1] - packed.ops_off[c]
        covered = len({p for s, e in zip(case.starts, case.ends) for p in range(s, e)})
        assert packed.ops_off[c + 1] - packed.ops_off[c] == case.target.size + covered


def test_il1rapl1_sized_case_packs_quickly():
    """Packing (streams, fold plans, traceback offsets) is one compiled pass over the batch."""
    import time

    params = ScoreParams()
    g = il1rapl1_like_case(seed=1)
    case = make_case(g.base, g.exons, g.target, params)
    PackedBatch([case], 4, 8)  # compile
    t0 = time.perf_counter()
    packed = PackedBatch([case], 4, 8)
    assert time.perf_counter() - t0 < 0.5
    assert packed.stream_rows[0] == packed.stream.size
