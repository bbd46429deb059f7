"""GPU engine of the spliced alignment against the CPU engines (run on a CUDA device)."""
from __future__ import annotations

import numpy as np
import pytest

from splice_helpers import assert_tracebacks_match_cpu

from gamut.splicing import cpu
from splice_generate import il1rapl1_like_case, paper_like_cases
from gamut.splicing.model import ScoreParams, make_case

pytestmark = pytest.mark.gpu


def random_case(rng, max_base=300, max_exons=12, max_exon=40, max_target=700, alphabet=5):
    m = int(rng.integers(2, max_base))
    base = rng.integers(0, alphabet, m).astype(np.uint8)
    exons = []
    for _ in range(int(rng.integers(1, max_exons + 1))):
        s = int(rng.integers(0, m))
        exons.append((s, int(rng.integers(s + 1, min(m, s + max_exon) + 1))))
    target = rng.integers(0, alphabet, int(rng.integers(1, max_target))).astype(np.uint8)
    return base, exons, target


@pytest.mark.parametrize("cols", [4, 8, 16])
@pytest.mark.parametrize("slots", [None, 0, 1])
def test_gpu_matches_reference_on_random_cases(cols, slots):
    """Many cases (one block each); parked rows in shared memory, or in global memory when the
    slots run out (slots=0: all of them; 1: most)."""
    from gamut.splicing.gpu import forward_gpu_many

    rng = np.random.default_rng(100 + cols)
    params = ScoreParams(match=2, mismatch=-1, gap=-2)
    cases = [make_case(*random_case(rng), params, name=f"r{i}") for i in range(60)]
    got = forward_gpu_many(cases, params.matrix, params.gap, cols=cols, max_warps=int(rng.integers(1, 5)),
                           slots=slots)
    for case, (last, pred) in zip(cases, got):
        ref_last, ref_pred = cpu.forward_reference(case, params.matrix, params.gap)
        np.testing.assert_array_equal(last, ref_last, err_msg=case.name)
        np.testing.assert_array_equal(pred, ref_pred, err_msg=case.name)


@pytest.mark.parametrize("count", [6, 40])
@pytest.mark.parametrize("slots", [None, 0])
def test_gpu_many_chunks_and_passes(count, slots):
    """Wide targets: a few cases get a one-warp block per chunk (count=6); many cases take their
    chunks in several passes of a block's warps (count=40)."""
    from gamut.splicing.gpu import forward_gpu_many

    rng = np.random.default_rng(7)
    params = ScoreParams(match=1, mismatch=-1, gap=-1)
    cases = [make_case(*random_case(rng, max_base=400, max_exons=30, max_target=6000), params) for _ in range(count)]
    got = forward_gpu_many(cases, params.matrix, params.gap, cols=4, max_warps=2, slots=slots)
    for case, (last, pred) in zip(cases, got):
        ref = cpu.forward_fast(case, params.matrix, params.gap)
        np.testing.assert_array_equal(last, ref[0])
        np.testing.assert_array_equal(pred, ref[1])


def test_gpu_generated_cases_and_api():
    import gamut

    generated = paper_like_cases(40, seed=3, scale=0.3)
    for g in generated[:8]:
        gpu = gamut.splice(g.base, g.exons, g.target, device="cuda")
        fast = gamut.splice(g.base, g.exons, g.target, device="cpu")
        assert gpu.score == fast.score and gpu.chain == fast.chain
        assert gpu.alignment.base == fast.alignment.base
    from gamut.splicing.api import splice_many

    tuples = [(g.base, g.exons, g.target, g.name) for g in generated]
    on_gpu = splice_many(tuples, device="cuda")
    on_cpu = splice_many(tuples, device="cpu")
    assert [(r.score, r.chain) for r in on_gpu] == [(r.score, r.chain) for r in on_cpu]


def test_gpu_il1rapl1_sized_case():
    from gamut.splicing.gpu import forward_gpu_many

    g = il1rapl1_like_case(seed=1)
    params = ScoreParams()
    case = make_case(g.base, g.exons, g.target, params)
    [(last, pred)] = forward_gpu_many([case], params.matrix, params.gap)
    ref_last, ref_pred = cpu.forward_fast(case, params.matrix, params.gap)
    np.testing.assert_array_equal(last, ref_last)
    np.testing.assert_array_equal(pred, ref_pred)


# --- The whole engine on the device: forward pass and traceback (splice_traceback.cu) ----------

def assert_same_results(got, want):
    """GPU results equal the CPU fast engine's: score, chain, exons, spans and the alignment."""
    assert len(got) == len(want)
    for a, b in zip(got, want):
        assert (a.score, a.chain, a.exons, a.target_spans, a.name, a.cells) == (
            b.score, b.chain, b.exons, b.target_spans, b.name, b.cells), a.name
        assert (a.alignment.base, a.alignment.target) == (b.alignment.base, b.alignment.target), a.name
        np.testing.assert_array_equal(a.alignment.base_pos, b.alignment.base_pos)
        np.testing.assert_array_equal(a.alignment.target_pos, b.alignment.target_pos)


def assert_device_traceback_is_cpu_traceback(cases, params, **kwargs):
    """The device traceback's score, chain and ops equal ``cpu.traceback`` on the device's own
    (downloaded) last/pred arrays, which equal the CPU fast engine's."""
    from gamut.splicing.batch import CaseBatch
    from gamut.splicing.gpu import forward_gpu_many, solve_gpu

    tb = solve_gpu(CaseBatch(cases), params.matrix, params.gap, **kwargs)
    arrays = forward_gpu_many(cases, params.matrix, params.gap, **kwargs)
    for case, (last, pred) in zip(cases, arrays):
        ref_last, ref_pred = cpu.forward_fast(case, params.matrix, params.gap)
        np.testing.assert_array_equal(last, ref_last, err_msg=case.name)
        np.testing.assert_array_equal(pred, ref_pred, err_msg=case.name)
    assert_tracebacks_match_cpu(tb, cases, params)


@pytest.mark.parametrize("seed", [0, 1])
def test_device_traceback_on_random_cases(seed):
    rng = np.random.default_rng(200 + seed)
    matrix = rng.integers(-3, 4, (4, 4)) if seed else None
    params = ScoreParams(match=2, mismatch=-1, gap=-2, matrix=matrix)
    cases = [make_case(*random_case(rng, alphabet=2 + seed * 3), params, name=f"r{i}") for i in range(80)]
    assert_device_traceback_is_cpu_traceback(cases, params)


def test_device_traceback_on_generated_cases_and_api():
    from gamut.splicing.api import solve, splice_many

    params = ScoreParams()
    generated = paper_like_cases(60, seed=12, scale=0.5)
    cases = [make_case(g.base, g.exons, g.target, params, name=g.name) for g in generated]
    assert_device_traceback_is_cpu_traceback(cases[:20], params)
    assert_same_results(solve(cases, params, "gpu"), solve(cases, params, "fast"))
    tuples = [(g.base, g.exons, g.target, g.name) for g in generated[:12]]
    assert_same_results(splice_many(tuples, device="cuda", batch_size=5), splice_many(tuples, device="cpu"))


def test_device_traceback_hypothesis_cases():
    """Small adversarial cases (ties, N, custom matrices, duplicates) as in the host-harness test."""
    from hypothesis import given, settings
    from splice_helpers import case_lists

    @settings(max_examples=40, deadline=None)
    @given(case_lists(max_target=300))
    def check(data):
        cases, params = data
        assert_device_traceback_is_cpu_traceback(cases, params)

    check()


@pytest.mark.parametrize("tb_threads,tb_cap", [(256, 64), (512, 192), (1024, 64), (1024, None)])
def test_device_traceback_in_strips_and_block_sizes(tb_threads, tb_cap):
    """The traceback kernel with every block size and targets cut into strips of 64-192 columns
    (long runs of target gaps across strips, windows and threads)."""
    from splice_helpers import insertion_cases

    from gamut.splicing.batch import CaseBatch
    from gamut.splicing.gpu import solve_gpu

    rng = np.random.default_rng(300 + tb_threads)
    params = ScoreParams(match=2, mismatch=-1, gap=-1)
    cases = insertion_cases(params, seed=tb_threads, count=4)
    cases += [make_case(*random_case(rng, max_target=2000), params, name=f"r{i}") for i in range(30)]
    cases += [make_case(g.base, g.exons, g.target, params, name=g.name) for g in paper_like_cases(6, seed=21)]
    tb = solve_gpu(CaseBatch(cases), params.matrix, params.gap, tb_threads=tb_threads, tb_cap=tb_cap)
    assert_tracebacks_match_cpu(tb, cases, params)


def test_device_traceback_il1rapl1_sized_case():
    from gamut.splicing.api import solve

    g = il1rapl1_like_case(seed=1)
    params = ScoreParams()
    case = make_case(g.base, g.exons, g.target, params, name=g.name)
    assert_same_results(solve([case], params, "gpu"), solve([case], params, "fast"))


def test_wide_case_runs_on_all_sms():
    """A single case of 280,000 target columns: too many chunks for one-warp blocks, so multi-warp
    blocks on every SM take them in passes; exact forward pass and traceback."""
    import cupy as cp

    from gamut.splicing import gpu_layout
    from gamut.splicing.api import solve
    from splice_generate import wide_case

    params = ScoreParams()
    g = wide_case(target_length=280_000, groups=3, exons_per_group=5, exon_mean=60, seed=4)
    case = make_case(g.base, g.exons, g.target, params, name=g.name)
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    chunks = gpu_layout.chunk_counts([case.target.size], gpu_layout.DEFAULT_COLS)
    assert gpu_layout.wide_layout(chunks, sms)
    warps, blocks = gpu_layout.launch_shape(chunks, sms, resident_blocks=sms)
    assert blocks == sms or warps * blocks >= chunks[0]  # every SM, or a warp per chunk
    assert_device_traceback_is_cpu_traceback([case], params)
    assert_same_results(solve([case], params, "gpu"), solve([case], params, "fast"))


@pytest.mark.parametrize("max_blocks", [1, 3])
def test_wide_layout_passes_on_small_cases(monkeypatch, max_blocks):
    """The wide layout forced on small cases (no one-warp spread, two warps, at most 1 or 3 blocks
    per case): chunks taken in several passes, round robin over the blocks."""
    from gamut.splicing import gpu_layout

    monkeypatch.setattr(gpu_layout, "ONE_WARP_BLOCKS_PER_SM", 0)
    rng = np.random.default_rng(17)
    params = ScoreParams(match=1, mismatch=-1, gap=-1)
    cases = [make_case(*random_case(rng, max_base=400, max_exons=30, max_target=6000), params) for _ in range(5)]
    import cupy as cp

    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    assert gpu_layout.wide_layout(gpu_layout.chunk_counts([c.target.size for c in cases], 4), sms, 2)
    assert_device_traceback_is_cpu_traceback(cases, params, cols=4, max_warps=2, max_blocks=max_blocks)


@pytest.mark.parametrize("edit,message", [
    ("self", "pred names an exon that cannot precede"),
    ("range", "neither -1 nor an exon"),
    ("score", "score is not the reported optimum"),
])
def test_device_traceback_reports_inconsistent_arrays(monkeypatch, edit, message):
    """last/pred edited on the device between the two kernels: a DeviceError, never a result."""
    from gamut.errors import DeviceError
    from gamut.splicing import gpu as splice_gpu
    from gamut.splicing.api import solve

    real_forward = splice_gpu._forward

    def edited_forward(*args, **kwargs):
        launch = real_forward(*args, **kwargs)
        if edit == "self":  # every exon its own predecessor
            packed = launch.packed
            k = np.concatenate([np.repeat(np.arange(n), w) for n, w in zip(packed.n_exons, packed.target_len + 1)])
            launch.pred[:] = cp_asarray(k)
        elif edit == "range":
            launch.pred[:] = 1 << 20
        else:
            launch.last[:] += 1
        return launch

    def cp_asarray(a):
        import cupy as cp

        return cp.asarray(a, dtype=cp.int32)

    monkeypatch.setattr(splice_gpu, "_forward", edited_forward)
    params = ScoreParams()
    rng = np.random.default_rng(5)
    cases = [make_case(*random_case(rng), params, name=f"bad{i}") for i in range(3)]
    with pytest.raises(DeviceError, match=f"GPU engine gave an inconsistent result.*{message}"):
        solve(cases, params, "gpu")
