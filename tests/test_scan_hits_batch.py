"""The chunk post-processing (:func:`chunk_hits`) against the per-pair reference (:func:`pair_hits`)."""
from __future__ import annotations

from dataclasses import fields

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gamut.scanning.alignments import ChunkAlignments, PairAlignments
from gamut.scanning.alphabet import encode
from scan_cpu_engine import CpuEngine
from scan_reference import strict_seed_ok as reference_strict_seed_ok
from gamut.scanning.hits import Hit, SequenceSet, chunk_hits, pair_hits, strict_seed_ok
from gamut.scanning.params import ScanParams

# Query alphabets: real bases only, with T/U and case mixes, with N/X and IUPAC letters.
QUERY_ALPHABETS = ("ACGU", "ACGUacguTt", "ACGUACGUACGUACGUTtNX", "ACGUACGUACGUacgutTNnXRYKMSWBDHV")
BACKGROUND = np.frombuffer(b"ACGUACGUACGUTacgutNXnrykmswbdhv", np.uint8)
COMPLEMENT = {"A": "U", "C": "G", "G": "C", "U": "A", "T": "A"}


def site_for(query: str, rng: np.random.Generator) -> bytes:
    """The query's complement (reference 5'->3'), with substitutions, wobbles, bulges and case changes."""
    site = [COMPLEMENT.get(c.upper(), "ACGU"[int(rng.integers(4))]) for c in reversed(query)]
    for _ in range(int(rng.integers(0, 5))):
        pos = int(rng.integers(len(site)))
        kind = int(rng.integers(5))
        if kind == 0:
            site[pos] = "ACGUNXt"[int(rng.integers(7))]
        elif kind == 1:
            site.insert(pos, "".join("ACGU"[int(x)] for x in rng.integers(0, 4, int(rng.integers(1, 4)))))
        elif kind == 2 and len(site) > 4:
            del site[pos]
        elif kind == 3:
            site[pos] = {"U": "C", "C": "U", "A": "G", "G": "A"}.get(site[pos], site[pos])
        else:
            site[pos] = site[pos].lower()
    return "".join(site).encode()


def make_reference(queries: list[str], length: int, rng: np.random.Generator) -> bytes:
    """Random letters with planted sites, some cut off at either end (flanks then run off the reference)."""
    ref = bytearray(BACKGROUND[rng.integers(0, BACKGROUND.shape[0], length)].tobytes())
    for _ in range(int(rng.integers(0, 5))):
        site = site_for(queries[int(rng.integers(len(queries)))], rng)
        where = int(rng.integers(4))
        if where == 0:  # at the very start, its first letters missing
            site = site[int(rng.integers(0, 4)) :]
            ref[: len(site)] = site
        elif where == 1:  # at the very end, its last letters missing
            site = site[: len(site) - int(rng.integers(0, 4))]
            ref[max(0, len(ref) - len(site)) :] = site
        else:
            pos = int(rng.integers(0, max(1, len(ref) - len(site) + 1)))
            ref[pos : pos + len(site)] = site
    return bytes(ref[: max(length, 1)])


def oracle(queries: list[bytes], refs: list[bytes], pairs: np.ndarray, found: list[PairAlignments]) -> list[list[Hit]]:
    return [
        pair_hits(f"q{a}", queries[a], encode(queries[a]), f"r{b}", refs[b], encode(refs[b]), f)
        for (a, b), f in zip(pairs.tolist(), found)
    ]


def fast(queries: list[bytes], refs: list[bytes], pairs: np.ndarray, found: ChunkAlignments) -> list[list[Hit]]:
    qs = SequenceSet.build([f"q{k}" for k in range(len(queries))], queries, [encode(q) for q in queries])
    rs = SequenceSet.build([f"r{k}" for k in range(len(refs))], refs, [encode(r) for r in refs])
    table = chunk_hits(qs, rs, pairs, found)
    return table.hits(qs.ids, rs.ids, pairs)


def shuffled(found: ChunkAlignments, rng: np.random.Generator) -> ChunkAlignments:
    """The same survivors with pairs' row blocks and op runs in a random order (as the GPU engine's
    batches leave them): only ``sv_start``/``sv_stop`` and ``op_start``/``op_end`` say where they are."""
    n = found.n_pairs
    order = rng.permutation(n)
    sv_start, sv_stop = found.dense_ranges()
    counts = sv_stop - sv_start
    rows = np.concatenate([np.arange(sv_start[p], sv_stop[p]) for p in order] or [np.zeros(0, np.int64)])
    new_stop = np.zeros(n, np.int64)
    new_stop[order] = np.cumsum(counts[order])
    op_perm = rng.permutation(rows.shape[0])  # op runs stored in yet another order
    lengths = (found.op_end - found.op_start)[rows]
    run_start = np.zeros(rows.shape[0], np.int64)
    run_start[op_perm] = np.cumsum(lengths[op_perm]) - lengths[op_perm]
    ops = np.zeros(int(lengths.sum()), np.uint8)
    for k, r in enumerate(rows.tolist()):
        ops[run_start[k]:run_start[k] + lengths[k]] = found.ops[found.op_start[r]:found.op_end[r]]
    pick = lambda f: getattr(found, f)[rows]  # noqa: E731
    return ChunkAlignments(new_stop - counts, new_stop, pick("score"), pick("i_end"), pick("j_end"), pick("i_start"),
                           pick("j_start"), run_start, run_start + lengths, ops)


def assert_same(got: list[list[Hit]], expected: list[list[Hit]]) -> None:
    assert len(got) == len(expected)
    for g_pair, e_pair in zip(got, expected):
        assert len(g_pair) == len(e_pair)
        for g, e in zip(g_pair, e_pair):
            for f in fields(Hit):
                a, b = getattr(g, f.name), getattr(e, f.name)
                assert type(a) is type(b) and a == b, (f.name, a, b)


def run_both(queries: list[bytes], refs: list[bytes], params: ScanParams) -> list[list[Hit]]:
    pairs = np.array([(a, b) for a in range(len(queries)) for b in range(len(refs))], np.int64).reshape(-1, 2)
    found = CpuEngine(1).align(SequenceSet.from_codes([encode(q) for q in queries]),
                               SequenceSet.from_codes([encode(r) for r in refs]), pairs, params)
    expected = oracle(queries, refs, pairs, [found.pair(p) for p in range(found.n_pairs)])
    assert_same(fast(queries, refs, pairs, found), expected)
    assert_same(fast(queries, refs, pairs, shuffled(found, np.random.default_rng(len(pairs)))), expected)
    return expected


@st.composite
def scan_case(draw):
    query = st.sampled_from(QUERY_ALPHABETS).flatmap(lambda a: st.text(st.sampled_from(a), min_size=4, max_size=40))
    queries = draw(st.lists(query, min_size=1, max_size=3))
    lengths = draw(st.lists(st.one_of(st.integers(1, 60), st.integers(1, 3000)), min_size=1, max_size=3))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    refs = [make_reference(queries, n, rng) for n in lengths]
    return [q.encode() for q in queries], refs


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    case=scan_case(),
    threshold=st.integers(20, 160),
    scale=st.sampled_from([4.0, 2.5, 1.0, 3.3]),
    gaps=st.sampled_from([(-9, -4), (-6, -2), (-4, -4), (0, 0), (-12, -1)]),
    strict=st.booleans(),
)
def test_chunk_hits_equal_pair_hits(case, threshold, scale, gaps, strict):
    queries, refs = case
    params = ScanParams(score_threshold=threshold, scale=scale, gap_open=gaps[0], gap_extend=gaps[1], strict=strict)
    run_both(queries, refs, params)


def test_empty_pairs_and_flanks_off_both_ends():
    query = "UGAGGUAGUAGGUUGUAUAGUU"
    site = "".join(COMPLEMENT[c] for c in reversed(query))
    refs = [
        b"N" * 40,  # no survivors
        site[3:].encode() + b"GGAACC",  # the 3' flank runs off the reference start
        b"CCAAGG" + site[:-3].encode(),  # the 5' flank runs off the reference end
        site[2:-2].encode(),  # both
        b"A",
    ]
    expected = run_both([query.encode(), b"NNNNNN"], refs, ScanParams(score_threshold=60))
    assert [len(h) for h in expected] == [0, 1, 1, 1, 0, 0, 0, 0, 0, 0]
    assert expected[1][0].aln_utr.startswith("-") and expected[2][0].aln_utr.endswith("-")
    assert expected[3][0].aln_utr.startswith("-") and expected[3][0].aln_utr.endswith("-")


def test_no_pairs_and_only_empty_results():
    queries, refs = [b"ACGUACGU"], [b"ACGU"]
    empty = np.zeros((0, 2), np.int64)
    assert fast(queries, refs, empty, ChunkAlignments.empty(0)) == []
    assert fast(queries, refs, np.array([[0, 0]]), ChunkAlignments.empty(1)) == [[]]


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_strict_seed_rule_matches_the_reference(data):
    """The compiled strict rule (used for every hit) against its literal transcription (lines
    mostly Watson-Crick paired, so that both outcomes are common)."""
    body = data.draw(st.lists(st.tuples(st.sampled_from("ACGUACGUACGU-"), st.sampled_from("||||||||: ")), min_size=1, max_size=24))
    n3 = data.draw(st.integers(0, 6))
    n5 = data.draw(st.integers(0, 6))
    query_line = "a" * n3 + "".join(q for q, _ in body) + "c" * n5
    map_line = " " * n3 + "".join(" " if q == "-" else m for q, m in body) + " " * n5
    buf = np.frombuffer((query_line + map_line).encode("ascii"), np.uint8)
    width = len(query_line)
    got = strict_seed_ok(buf, 0, width, width, n5, n3)
    assert got == reference_strict_seed_ok(query_line, map_line, n5, n3)
