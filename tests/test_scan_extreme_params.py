"""Exact scores under every parameter combination: no engine may saturate or wrap a score.

A negative ``-scale`` turns the seed rows' gap penalties into bonuses (``trunc(scale * gap)`` > 0),
so scores grow with the reference's length; large scales and penalties push them past 16 bits.
Every engine must then widen its cells (or, on the GPU, refuse) and still equal the plain-Python
reference of miRanda's DP (tests/scan_reference.py).
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gamut.errors import UsageError
from scan_cpu_engine import CpuEngine
from gamut.scanning.params import ScanParams, exact_int_type, gap_rise
from gamut.scanning.engines.simd import SimdEngine
from scan_reference import reference_alignments
from test_scan_simd import as_tuples, sequence_set

LET7A = "UGAGGUAGUAGGUUGUAUAGUU"


def engine_tuples(engine, query: str, ref: str, params: ScanParams):
    found = engine.align(sequence_set([query]), sequence_set([ref]), np.array([[0, 0]], np.int64), params)
    return as_tuples(found, 0)


@st.composite
def reference(draw) -> str:
    """Mostly short references, some up to 20 kb (seeded random letters, planted query complements)."""
    size = draw(st.one_of(st.integers(0, 300), st.integers(300, 3000), st.integers(3000, 20_000)))
    seed = draw(st.integers(0, 2**32 - 1))
    return "".join(np.random.default_rng(seed).choice(list("ACGUN"), size, p=[0.24, 0.24, 0.24, 0.24, 0.04]))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    query=st.one_of(st.just(LET7A), st.text("ACGUN", min_size=1, max_size=30)),
    ref=reference(),
    scale=st.one_of(st.floats(-20, 20, allow_nan=False), st.sampled_from([-20.0, -4.0, -0.5, 0.0, 20.0])),
    gap_open=st.integers(-50, 0),
    gap_extend=st.integers(-50, 0),
    threshold=st.one_of(st.integers(1, 400), st.integers(400, 200_000)),
)
def test_engines_equal_reference_under_extreme_parameters(query, ref, scale, gap_open, gap_extend, threshold):
    params = ScanParams(score_threshold=threshold, scale=scale, gap_open=gap_open, gap_extend=gap_extend,
                        noenergy=True)
    expected = reference_alignments(query, ref, threshold, scale, gap_open, gap_extend)
    assert engine_tuples(SimdEngine(1), query, ref, params) == expected
    assert engine_tuples(CpuEngine(1), query, ref, params) == expected


@pytest.mark.parametrize("trim", [1900, 2000, 2100, 3000])
def test_negative_scale_scores_grow_past_16_bits_exactly(trim):
    """The reported case: let-7a, --scale -4, --trim N. Scores pass 32,767 and must not saturate."""
    ref = "".join(np.random.default_rng(7).choice(list("ACGU"), 3000))[:trim]
    params = ScanParams(scale=-4.0, noenergy=True)
    expected = reference_alignments(LET7A, ref, 140, -4.0, -9, -4)
    assert expected and (expected[0][0] > 2**15 - 1 or trim < 2100)
    assert engine_tuples(SimdEngine(2), LET7A, ref, params) == expected
    assert engine_tuples(CpuEngine(1), LET7A, ref, params) == expected


def test_cli_scores_equal_the_reference_with_a_negative_scale(tmp_path):
    """Through the whole scan (hits, report): the first hit's score is the reference's."""
    import gamut

    ref = "".join(np.random.default_rng(11).choice(list("ACGU"), 2100))
    hits = gamut.scan({"let-7a": LET7A}, [("utr", ref)], scale=-4.0, noenergy=True, device="cpu")
    best = reference_alignments(LET7A, ref, 140, -4.0, -9, -4)[0][0]
    assert int(hits["score"].max()) == best > 2**15


def test_gap_rise_is_zero_unless_the_scale_is_negative():
    assert gap_rise(ScanParams()) == 0
    assert gap_rise(ScanParams(scale=-4.0)) == 36  # trunc(-4 * -9)
    assert gap_rise(ScanParams(scale=-0.1)) == 0  # trunc(0.9) and trunc(0.4) are 0


def test_exact_int_type_widens_then_refuses():
    assert exact_int_type(30_000, -100) is np.int16
    assert exact_int_type(40_000, -100) is np.int32
    assert exact_int_type(2**40, -100) is np.int64
    with pytest.raises(UsageError, match="64-bit"):
        exact_int_type(2**63, -100)


def test_gpu_engine_refuses_scores_beyond_int32():
    from gamut.scanning.engines.gpu_plan import check_int32_scores

    check_int32_scores(22, 50_000_000, ScanParams())  # default parameters: no rise, far below
    with pytest.raises(UsageError, match="32-bit"):
        check_int32_scores(22, 50_000_000, ScanParams(scale=-20.0, gap_open=-50, gap_extend=-50))


@pytest.mark.gpu
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    query=st.one_of(st.just(LET7A), st.text("ACGUN", min_size=4, max_size=30)),
    ref=reference(),
    scale=st.floats(-20, 20, allow_nan=False),
    gap_open=st.integers(-50, 0),
    gap_extend=st.integers(-50, 0),
    threshold=st.integers(1, 400),
)
def test_gpu_engine_equals_reference_under_extreme_parameters(query, ref, scale, gap_open, gap_extend, threshold):
    from gamut.scanning.engines.gpu import GpuEngine

    params = ScanParams(score_threshold=threshold, scale=scale, gap_open=gap_open, gap_extend=gap_extend,
                        noenergy=True)
    expected = reference_alignments(query, ref, threshold, scale, gap_open, gap_extend)
    assert engine_tuples(GpuEngine([0]), query, ref, params) == expected
