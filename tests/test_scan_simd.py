"""The SIMD CPU engine against the reference engine of the tests (scan_cpu_engine) and the plain-Python reference."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scan_reference import reference_alignments

from gamut.scanning.engines import simd, simd_score, simd_traceback
from gamut.scanning.alignments import ChunkAlignments
from gamut.scanning.alphabet import encode
from scan_cpu_engine import CpuEngine
from gamut.scanning.fasta import read_miranda_fasta
from gamut.scanning.hits import SequenceSet
from gamut.scanning.miranda_cli import atoi, strtod
from gamut.scanning.params import ScanParams, query_tables
from gamut.scanning.engines.simd import SimdEngine

OP_NAMES = {1: "M", 2: "B", 3: "C"}
COMP = {"A": "U", "C": "G", "G": "C", "U": "A"}
FIELDS = ("score", "i_end", "j_end", "i_start", "j_start", "op_offsets", "ops")

query_letters = st.sampled_from("ACGUACGUACGUacgutTNnXRYKMSWBDHV")
ref_letters = st.sampled_from("ACGUACGUACGUACGUTacgutNXnrykmswbdhv")


def sequence_set(seqs: list[str]) -> SequenceSet:
    return SequenceSet.build([f"s{k}" for k in range(len(seqs))], [s.encode() for s in seqs], [encode(s) for s in seqs])


def simd_align(queries: list[str], refs: list[str], pairs, params: ScanParams, threads: int = 1,
               checkpoint_bytes: int = 32 << 20) -> ChunkAlignments:
    engine = SimdEngine(threads, checkpoint_bytes=checkpoint_bytes)
    return engine.align(sequence_set(queries), sequence_set(refs), np.asarray(pairs, np.int64), params)


def scalar_align(queries: list[str], refs: list[str], pairs, params: ScanParams) -> ChunkAlignments:
    return CpuEngine(1).align(sequence_set(queries), sequence_set(refs), np.asarray(pairs, np.int64), params)


def as_tuples(found: ChunkAlignments, p: int):
    """Pair ``p``'s survivors as the reference's tuples (read from the int64 columns)."""
    return [
        (int(found.score[k]), int(found.i_end[k]), int(found.j_end[k]), int(found.i_start[k]), int(found.j_start[k]),
         "".join(OP_NAMES[int(op)] for op in found.ops[found.op_start[k] : found.op_end[k]]))
        for k in range(*(int(a[p]) for a in found.dense_ranges()))
    ]


def lane_type(queries: list[str], params: ScanParams) -> type:
    arrays = simd.QueryArrays.build(sequence_set(queries), params)
    return arrays.lane_dtype(np.ones(len(queries), bool))


def test_query_arrays_equal_query_tables():
    queries = ["UGAGGUAGUAGGUUGUAUAGUU", "A", "ACG", "NNXXRY", "ACGUACGUA", "CUGACGUNACGAUCGAUCGUAGCUAGCUAGCGAUCG"]
    params = ScanParams(scale=3.3, gap_open=-7, gap_extend=-2)
    arrays = simd.QueryArrays.build(sequence_set(queries), params)
    for q, text in enumerate(queries):
        t = query_tables(encode(text), params)
        rows = slice(arrays.qrow[q], arrays.qrow[q + 1])
        assert np.array_equal(arrays.prof[rows], t.profile.T)
        assert np.array_equal(arrays.go[rows], t.gap_open)
        assert np.array_equal(arrays.ge[rows], t.gap_extend)
        assert np.array_equal(arrays.seed[rows], t.seed_row)


def assert_same(got: ChunkAlignments, expected: ChunkAlignments) -> None:
    assert got.n_pairs == expected.n_pairs
    for p in range(got.n_pairs):
        a, b = got.pair(p), expected.pair(p)
        for field in FIELDS:
            assert np.array_equal(getattr(a, field), getattr(b, field)), (p, field)


@st.composite
def site(draw, query: str) -> str:
    """A target site of ``query`` with mismatches, wobbles, masked letters and bulges."""
    s = list("".join(COMP.get(c, "A") for c in reversed(query.upper().replace("T", "U"))))
    for _ in range(draw(st.integers(0, 4))):
        kind = draw(st.sampled_from(["sub", "ins", "del", "wobble"]))
        pos = draw(st.integers(0, max(0, len(s) - 1)))
        if not s:
            break
        if kind == "sub":
            s[pos] = draw(st.sampled_from("ACGUNX"))
        elif kind == "ins":
            s.insert(pos, draw(st.text(st.sampled_from("ACGU"), min_size=1, max_size=5)))
        elif kind == "del" and len(s) > 4:
            del s[pos]
        elif kind == "wobble":
            s[pos] = {"U": "C", "C": "U", "A": "G", "G": "A"}.get(s[pos], s[pos])
    return "".join(s)


@st.composite
def problem(draw, max_query: int = 30, max_ref: int = 300, min_query: int = 1):
    """Queries (random letters incl. masked ones), references holding planted sites, a pair list."""
    queries = draw(st.lists(st.text(query_letters, min_size=min_query, max_size=max_query), min_size=1, max_size=5))
    refs = []
    for _ in range(draw(st.integers(1, 3))):
        pieces = [draw(st.text(ref_letters, min_size=0, max_size=max_ref // 3))]
        for _ in range(draw(st.integers(0, 2))):
            pieces.append(draw(site(draw(st.sampled_from(queries)))))
            pieces.append(draw(st.text(ref_letters, min_size=0, max_size=max_ref // 4)))
        ref = "".join(pieces) or "A"
        refs.append(ref)
    every = [(q, r) for q in range(len(queries)) for r in range(len(refs))]
    pairs = draw(st.lists(st.sampled_from(every), min_size=1, max_size=2 * len(every)))
    return queries, refs, pairs


params_st = st.builds(
    lambda t, scale, g: ScanParams(score_threshold=t, scale=scale, gap_open=g[0], gap_extend=g[1]),
    st.integers(1, 160),
    st.sampled_from([4.0, 2.5, 1.0, 3.7, 0.5]),
    st.sampled_from([(-9, -4), (-6, -2), (-4, -4), (-8, -3), (0, 0), (-5, 0), (0, -3), (-12, -6)]),
)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(prob=problem(), params=params_st)
def test_matches_scalar_engine_and_reference(prob, params):
    queries, refs, pairs = prob
    got = simd_align(queries, refs, pairs, params)
    assert_same(got, scalar_align(queries, refs, pairs, params))
    for p, (q, r) in enumerate(pairs[:3]):
        if len(queries[q]) * len(refs[r]) <= 4000:
            expected = reference_alignments(queries[q], refs[r], params.score_threshold, params.scale,
                                            params.gap_open, params.gap_extend)
            assert as_tuples(got, p) == expected


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(prob=problem(max_query=110, max_ref=900), params=params_st)
def test_long_queries_and_references(prob, params):
    queries, refs, pairs = prob
    assert_same(simd_align(queries, refs, pairs, params), scalar_align(queries, refs, pairs, params))


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(prob=problem(max_query=26, max_ref=120, min_query=12), scale=st.sampled_from([1500.0, 2600.5]), go=st.integers(-40000, -1))
def test_int32_lanes(prob, scale, go):
    queries, refs, pairs = prob
    params = ScanParams(score_threshold=20_000, scale=scale, gap_open=go, gap_extend=-4)
    assert lane_type(["UGAGGUAGUAGGUUGUAUAGUU"], params) == np.int32
    queries = [*queries, "UGAGGUAGUAGGUUGUAUAGUU"]  # every block of the chunk runs in int32 lanes
    assert_same(simd_align(queries, refs, pairs, params), scalar_align(queries, refs, pairs, params))


def test_int64_lanes_against_reference():
    """Scores beyond int32 (the scalar engine's widest type): only the plain-Python reference applies."""
    query = "UGAGGUAGUAGGUUGUAUAGUU"
    ref = "GGAAC" + "".join(COMP[c] for c in reversed(query)) + "CCUAGAACUAUACAACCUACUACCUCAGG"
    params = ScanParams(score_threshold=2_000_000_000, scale=3.0e8, gap_open=0, gap_extend=-1)
    assert lane_type([query], params) == np.int64
    got = simd_align([query], [ref], [(0, 0)], params)
    assert got.survivor_count() > 0
    assert as_tuples(got, 0) == reference_alignments(query, ref, 2_000_000_000, 3.0e8, 0, -1)


def planted_reference(rng: np.random.Generator, queries: list[str], length: int, gap: int = 0) -> str:
    """Random sequence with a site of every query; ``gap`` random letters split each site in two."""
    out = []
    for q in queries:
        s = "".join(COMP[c] for c in reversed(q))
        half = len(s) // 2
        out.append("".join(rng.choice(list("ACGU"), int(rng.integers(0, 60)))))
        out.append(s[:half] + "".join(rng.choice(list("ACGU"), gap)) + s[half:])
    body = "".join(out)
    return body + "".join(rng.choice(list("ACGUN"), max(0, length - len(body))))


def test_more_pairs_than_lanes_mixed_lengths_and_threads():
    rng = np.random.default_rng(3)
    lengths = [1, 2, 3, 4, 5, 7, 8, 9, 12, 17, 20, 21, 22, 22, 23, 24, 25, 30, 40, 64, 65, 80, 100] * 3
    queries = ["".join(rng.choice(list("ACGU"), n)) for n in lengths]
    refs = [planted_reference(rng, queries[:30], 3000), planted_reference(rng, queries[30:], 2500), "ACGU", "N" * 40]
    pairs = [(q, r) for r in range(len(refs)) for q in range(len(queries))] + [(5, 0), (5, 0), (60, 1)]
    params = ScanParams(score_threshold=70)
    expected = scalar_align(queries, refs, pairs, params)
    assert expected.survivor_count() > 100
    assert_same(simd_align(queries, refs, pairs, params), expected)
    assert_same(simd_align(queries, refs, pairs, params, threads=3), expected)
    # Few pairs per reference (lanes share a query instead), and a chunk mixing both layouts.
    few = [(q, r) for q in range(len(queries)) for r in range(len(refs)) if q % 7 == r] + [(3, 1), (3, 1)]
    mixed = [(q, 0) for q in range(len(queries))] + few
    for chosen in (few, mixed):
        assert_same(simd_align(queries, refs, chosen, params), scalar_align(queries, refs, chosen, params))


@pytest.mark.parametrize("gaps", [(0, 0), (-1, 0), (-4, 0)])
def test_long_gaps_leave_the_first_traceback_window(gaps):
    """Cheap gaps and sites split by hundreds of letters: tracebacks longer than a window."""
    rng = np.random.default_rng(11)
    queries = ["".join(rng.choice(list("ACGU"), 22)) for _ in range(4)]
    refs = [planted_reference(rng, queries, 4000, gap=g) for g in (70, 150, 400)]
    pairs = [(q, r) for q in range(4) for r in range(3)]
    params = ScanParams(score_threshold=60, gap_open=gaps[0], gap_extend=gaps[1])
    expected = scalar_align(queries, refs, pairs, params)
    spans = expected.j_end - expected.j_start
    assert spans.max() > simd_score.CKPT + simd_traceback.TRACE_MARGIN + 22
    assert_same(simd_align(queries, refs, pairs, params), expected)
    # Sparse checkpoints (every 1024 columns or more): windows reach much further back.
    assert_same(simd_align(queries, refs, pairs, params, checkpoint_bytes=30_000), expected)


@pytest.mark.parametrize("threshold", [0, -3, 1])
def test_thresholds_at_or_below_zero(threshold):
    queries = ["UGAGGUAGUAGGUUGUAUAGUU", "ACG", "NNNNNNNNNN"]
    refs = ["AACUAUACAACCUACUACCUCAAGG", "GGGG", "ACGUNACGU"]
    pairs = [(q, r) for q in range(3) for r in range(3)]
    params = ScanParams(score_threshold=threshold)
    assert_same(simd_align(queries, refs, pairs, params), scalar_align(queries, refs, pairs, params))


def test_empty_chunk_and_threshold_beyond_any_score():
    assert SimdEngine().align(sequence_set(["ACGU"]), sequence_set(["ACGU"]), np.zeros((0, 2), np.int64),
                              ScanParams()).n_pairs == 0
    got = simd_align(["UGAGGUAGUAGGUUGUAUAGUU"], ["AACUAUACAACCUACUACCUCA"], [(0, 0)], ScanParams(score_threshold=99_999))
    assert got.survivor_count() == 0


GOLDEN = sorted(p for p in (Path(__file__).parent / "data" / "miranda").iterdir() if p.is_dir())


def golden_params(args: list[str]) -> ScanParams:
    opts = dict(zip(args, args[1:] + [""]))
    return ScanParams(
        score_threshold=atoi(opts.get("-sc", "140")), scale=strtod(opts.get("-scale", "4.0")),
        gap_open=atoi(opts.get("-go", "-9")), gap_extend=atoi(opts.get("-ge", "-4")), trim=atoi(opts.get("-trim", "0")),
    )


@pytest.mark.parametrize("case", GOLDEN, ids=lambda p: p.name)
def test_golden_cases_same_survivors_as_scalar_engine(case):
    params = golden_params((case / "args.txt").read_text().split())
    queries = [r.sequence.decode("latin-1") for r in read_miranda_fasta(case / "query.fa")]
    refs = [r.sequence.decode("latin-1") for r in read_miranda_fasta(case / "reference.fa")]
    if params.trim:
        refs = [r[: params.trim] for r in refs]
    pairs = [(q, r) for q in range(len(queries)) for r in range(len(refs))]
    expected = scalar_align(queries, refs, pairs, params)
    assert_same(simd_align(queries, refs, pairs, params), expected)
