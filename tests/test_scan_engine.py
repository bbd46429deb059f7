"""The reference engine of the tests (scan_cpu_engine) against the plain-Python transcription of miRanda's recurrences."""
from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scan_reference import align_pairs, reference_alignments

from gamut.scanning.alignments import EncodedSeq
from gamut.scanning.alphabet import encode
from scan_cpu_engine import CpuEngine
from gamut.scanning.params import ScanParams

OP_NAMES = {1: "M", 2: "B", 3: "C"}

# Mostly real bases (so alignments happen), with T/U and case mixes and masked letters.
query_letters = st.sampled_from("ACGUACGUACGUacgutTNnXRYKMSWBDHV")
ref_letters = st.sampled_from("ACGUACGUACGUACGUTacgutNXnrykmswbdhv")


def engine_alignments(query: str, ref: str, params: ScanParams, threads: int = 1):
    q = EncodedSeq(encode(query))
    r = EncodedSeq(encode(ref))
    found = align_pairs(CpuEngine(threads), [q], [r], [[0, 0]], params)[0]
    return [
        (
            int(found.score[k]), int(found.i_end[k]), int(found.j_end[k]),
            int(found.i_start[k]), int(found.j_start[k]),
            "".join(OP_NAMES[int(op)] for op in found.columns(k)),
        )
        for k in range(len(found))
    ]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    query=st.text(query_letters, min_size=1, max_size=26),
    ref=st.text(ref_letters, min_size=1, max_size=160),
    threshold=st.integers(1, 120),
    scale=st.sampled_from([4.0, 2.5, 1.0, 3.7, 0.5]),
    go=st.integers(-12, 0),
    ge=st.integers(-6, 0),
)
def test_engine_matches_reference(query, ref, threshold, scale, go, ge):
    params = ScanParams(score_threshold=threshold, scale=scale, gap_open=go, gap_extend=ge)
    expected = reference_alignments(query, ref, threshold, scale, go, ge)
    assert engine_alignments(query, ref, params) == expected


COMP = {"A": "U", "C": "G", "G": "C", "U": "A"}


@st.composite
def planted_pair(draw):
    """A query and a reference holding mutated target sites (mismatches, wobbles, bulges on both sides)."""
    query = draw(st.text(st.sampled_from("ACGU"), min_size=12, max_size=26))
    pieces = [draw(st.text(st.sampled_from("ACGUN"), min_size=0, max_size=60))]
    for _ in range(draw(st.integers(1, 3))):
        site = list("".join(COMP[c] for c in reversed(query)))
        for _ in range(draw(st.integers(0, 4))):
            kind = draw(st.sampled_from(["sub", "ins", "del", "wobble"]))
            pos = draw(st.integers(0, len(site) - 1))
            if kind == "sub":
                site[pos] = draw(st.sampled_from("ACGUNX"))
            elif kind == "ins":
                site.insert(pos, draw(st.text(st.sampled_from("ACGU"), min_size=1, max_size=4)))
            elif kind == "del" and len(site) > 4:
                del site[pos]
            elif kind == "wobble":
                site[pos] = {"U": "C", "C": "U", "A": "G", "G": "A"}.get(site[pos], site[pos])
        pieces.append("".join(site))
        pieces.append(draw(st.text(st.sampled_from("ACGU"), min_size=0, max_size=30)))
    return query, "".join(pieces)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    pair=planted_pair(),
    threshold=st.integers(40, 160),
    scale=st.sampled_from([4.0, 2.5, 3.3]),
    gaps=st.sampled_from([(-9, -4), (-6, -2), (-4, -4), (-8, -3), (0, 0), (-5, 0)]),
)
def test_engine_matches_reference_on_planted_sites(pair, threshold, scale, gaps):
    query, ref = pair
    go, ge = gaps
    params = ScanParams(score_threshold=threshold, scale=scale, gap_open=go, gap_extend=ge)
    assert engine_alignments(query, ref, params) == reference_alignments(query, ref, threshold, scale, go, ge)


def test_threads_give_the_same_result():
    rng = np.random.default_rng(7)
    queries = [EncodedSeq(rng.integers(0, 5, n).astype(np.int8)) for n in (8, 21, 23, 30)]
    refs = [EncodedSeq(rng.integers(0, 4, n).astype(np.int8)) for n in (50, 999, 3000)]
    pairs = np.array([(q, r) for q in range(4) for r in range(3)])
    params = ScanParams(score_threshold=60)
    one = align_pairs(CpuEngine(1), queries, refs, pairs, params)
    many = align_pairs(CpuEngine(4), queries, refs, pairs, params)
    assert sum(len(x) for x in one) > 0
    for a, b in zip(one, many):
        for field in ("score", "i_end", "j_end", "i_start", "j_start", "ops"):
            assert np.array_equal(getattr(a, field), getattr(b, field))


@settings(max_examples=30, deadline=None)
@given(pair=planted_pair(), scale=st.sampled_from([1500.0, 2600.5]), go=st.integers(-40000, -1))
def test_int32_rows_for_huge_scores(pair, scale, go):
    """Parameters whose scores overflow int16 take the int32 DP and still match the reference."""
    from scan_cpu_engine import dp_tables
    from gamut.scanning.params import query_tables

    query, ref = pair
    params = ScanParams(score_threshold=20_000, scale=scale, gap_open=go, gap_extend=-4)
    assert dp_tables(query_tables(encode(query), params))[0].dtype == np.int32
    expected = reference_alignments(query, ref, 20_000, scale, go, -4)
    assert engine_alignments(query, ref, params) == expected
