"""GPU engine of the spliced alignment against the CPU engines (run on a CUDA device)."""
from __future__ import annotations

import numpy as np
import pytest

from gamut.splice import cpu
from gamut.splice.generate import il1rapl1_like_case, paper_like_cases
from gamut.splice.model import ScoreParams, make_case

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
    from gamut.splice.gpu import forward_gpu_many

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
    from gamut.splice.gpu import forward_gpu_many

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
    from gamut.splice.api import splice_many

    tuples = [(g.base, g.exons, g.target, g.name) for g in generated]
    on_gpu = splice_many(tuples, device="cuda")
    on_cpu = splice_many(tuples, device="cpu")
    assert [(r.score, r.chain) for r in on_gpu] == [(r.score, r.chain) for r in on_cpu]


def test_gpu_il1rapl1_sized_case():
    from gamut.splice.gpu import forward_gpu

    g = il1rapl1_like_case(seed=1)
    params = ScoreParams()
    case = make_case(g.base, g.exons, g.target, params)
    last, pred = forward_gpu(case, params.matrix, params.gap)
    ref_last, ref_pred = cpu.forward_fast(case, params.matrix, params.gap)
    np.testing.assert_array_equal(last, ref_last)
    np.testing.assert_array_equal(pred, ref_pred)
