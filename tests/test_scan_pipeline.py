"""The columnar pipeline's pieces: chunking of the pair space, text assembly and exact number text."""
from __future__ import annotations

import math
import pickle

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from gamut.io.textcols import StringColumn, TextBuilder, gather, pick
from gamut.scanning.fasta import SeqRecord
from gamut.scanning.pair_run import PairRun, run_of
from gamut.scanning.params import ScanParams
from gamut.scanning.pipeline.scan_loop import ScanInput


def _input(q_lengths, r_lengths, restrict=None) -> ScanInput:
    queries = [SeqRecord(f"q{k}", "", b"A" * n) for k, n in enumerate(q_lengths)]
    refs = [SeqRecord(f"r{k}", "", b"C" * n) for k, n in enumerate(r_lengths)]
    return ScanInput(queries, refs, ScanParams(restrict=restrict))


@settings(max_examples=200, deadline=None)
@given(q=st.lists(st.integers(0, 30), min_size=1, max_size=6), r=st.lists(st.integers(0, 200), min_size=1, max_size=9),
       cells=st.integers(1, 3000), pairs=st.integers(1, 20))
def test_chunks_cover_every_pair_once_in_order(q, r, cells, pairs):
    scan_input = _input(q, r)
    chunks = list(scan_input.chunks(cells, pairs))
    got = np.concatenate(chunks) if chunks else np.zeros((0, 2), np.int64)
    want = np.array([(a, b) for a in range(len(q)) for b in range(len(r))], np.int64)
    assert np.array_equal(got, want)
    assert all(0 < len(c) <= pairs for c in chunks)
    ql, rl = np.array(q), np.array(r)
    for c in chunks[:-1]:  # every chunk but the last reaches its cell budget or its pair cap
        assert len(c) == pairs or int((ql[c[:, 0]] * rl[c[:, 1]]).sum()) >= cells
    assert scan_input.n_pairs == len(want)
    assert scan_input.total_cells() == int(ql.sum() * rl.sum())


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_spans_of_a_range_cover_it_and_count_its_cells(data):
    """spans(start, stop) (a partition's chunks, unlisted) cover pairs start..stop-1 in order within
    the budgets, span_cells counts what the listed pairs hold, query_of names each pair's query;
    restricted scans too."""
    q = data.draw(st.lists(st.integers(0, 30), min_size=1, max_size=6))
    r = data.draw(st.lists(st.integers(0, 200), min_size=1, max_size=9))
    allowed = None
    if data.draw(st.booleans()):
        names = [(f"q{a}", f"r{b}") for a in range(len(q)) for b in range(len(r))]
        allowed = frozenset(data.draw(st.lists(st.sampled_from(names), min_size=1, max_size=20)))
    si = _input(q, r, allowed)
    n = si.n_pairs
    start = data.draw(st.integers(0, n))
    stop = data.draw(st.integers(start, n))
    cells, pairs = data.draw(st.integers(1, 3000)), data.draw(st.integers(1, 20))
    spans = list(si.spans(cells, pairs, start, stop))
    assert [k for a, b in spans for k in range(a, b)] == list(range(start, stop))
    listed = si.pair_range(0, n)
    ql, rl = np.array(q), np.array(r)
    cost = ql[listed[:, 0]] * rl[listed[:, 1]]
    for a, b in spans:
        assert 0 < b - a <= pairs
        assert si.span_cells(a, b) == int(cost[a:b].sum())
        if (a, b) != spans[-1]:  # every run but the last reaches its cell budget or its pair cap
            assert b - a == pairs or int(cost[a:b].sum()) >= cells
    assert [c.tolist() for c in si.chunks(cells, pairs, start, stop)] == [listed[a:b].tolist() for a, b in spans]
    assert all(si.query_of(k) == listed[k, 0] for k in range(n))
    assert si.span_cells(0, n) == si.total_cells()


@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_chunks_of_an_unrestricted_scan_are_pair_runs(data):
    """Every chunk of an unrestricted scan is a read-only PairRun that names its first pair; what
    is derived from it (slices, copies, arithmetic, pickles) is plain pairs; chunk_cells counts its cells."""
    q = data.draw(st.lists(st.integers(0, 30), min_size=1, max_size=6))
    r = data.draw(st.lists(st.integers(0, 200), min_size=1, max_size=9))
    si = _input(q, r)
    n = si.n_pairs
    start = data.draw(st.integers(0, n))
    stop = data.draw(st.integers(start, n))
    cells, pairs = data.draw(st.integers(1, 3000)), data.draw(st.integers(1, 20))
    spans = list(si.spans(cells, pairs, start, stop))
    ql, rl = np.array(q), np.array(r)
    for (a, b), chunk in zip(spans, si.chunks(cells, pairs, start, stop), strict=True):
        assert isinstance(chunk, PairRun) and run_of(chunk, len(r)) == a
        assert run_of(chunk, len(r) + 1) is None
        assert chunk.tolist() == [[k // len(r), k % len(r)] for k in range(a, b)]
        assert not chunk.flags.writeable
        for derived in (chunk[1:], chunk[:, 0:2], chunk.copy(), chunk + 0, pickle.loads(pickle.dumps(chunk))):
            assert run_of(derived, len(r)) is None
        assert np.array_equal(pickle.loads(pickle.dumps(chunk)), chunk)
        assert si.chunk_cells(chunk) == int((ql[chunk[:, 0]] * rl[chunk[:, 1]]).sum())
        assert si.chunk_cells(np.array(chunk)) == si.chunk_cells(chunk)
        if b - a > 1:  # the GPU engine's grid path takes the run as it is, or finds it by checking
            from gamut.scanning.engines.gpu_grid import GridChunk

            assert GridChunk.of_pairs(chunk, len(r), run_of(chunk, len(r))) == GridChunk.of_pairs(np.array(chunk), len(r))


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_restricted_chunks_follow_output_order(data):
    q = data.draw(st.lists(st.integers(1, 20), min_size=1, max_size=5))
    r = data.draw(st.lists(st.integers(1, 50), min_size=1, max_size=6))
    names = [(f"q{a}", f"r{b}") for a in range(len(q)) for b in range(len(r))]
    allowed = frozenset(data.draw(st.lists(st.sampled_from(names), max_size=12)) + [("q0", "missing")])
    scan_input = _input(q, r, allowed)
    got = [tuple(p) for c in scan_input.chunks(data.draw(st.integers(1, 500)), 3) for p in c.tolist()]
    want = [(a, b) for a in range(len(q)) for b in range(len(r)) if (f"q{a}", f"r{b}") in allowed]
    assert got == want and scan_input.n_pairs == len(want)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.floats(width=32), st.floats(-1e6, 1e6), st.floats(),
                          st.integers(-10**9, 10**9).map(lambda k: k / 100),
                          st.sampled_from([0.0, -0.0, -0.001, 0.125, 0.005, 2.5, 0.0005, 1234.5675, 2.0**62 / 1000 * 0.999,
                                           2.0**62 / 100, 1e300])),
                min_size=1, max_size=8),
       st.sampled_from([0, 2, 3, 6]), st.booleans())
def test_fixed_text_is_printf(values, decimals, as_column):
    """``fixed`` (numbers the render writes, or a column of strings where a value is out of its
    range) and ``fixed_column``: printf's ``%.Nf`` of every value, NaN and infinities included."""
    b = TextBuilder()
    array = np.array(values)
    piece = b.fixed_column(array, decimals) if as_column else b.fixed(array, decimals)
    b.records(np.arange(len(values)), 0, 0, [piece, ";"])
    assert b.render().decode() == "".join(format(v, f".{decimals}f") + ";" for v in values)


def test_integers_of_every_int64():
    """The render writes any int64 as ``str`` does, the smallest too (its magnitude is no int64)."""
    every = np.array([0, -1, 9, 10, -10, 2**63 - 1, -2**63, -2**63 + 1, 1234567890123])
    for values in (every, every[every != -2**63]):  # with the smallest, a column of strings is made
        for make in (TextBuilder.integers, TextBuilder.integer_column):
            b = TextBuilder()
            b.records(np.arange(values.size), 0, 0, [make(b, values), ","])
            assert b.render().decode() == "".join(f"{v}," for v in values.tolist())


_piece_text = st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=40)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.lists(st.one_of(_piece_text, st.lists(_piece_text, min_size=1, max_size=1)),
                                   min_size=1, max_size=6),
                          st.lists(st.integers(0, 5), min_size=1, max_size=30), st.integers(0, 3)),
                min_size=1, max_size=4),
       st.booleans())
def test_records_render_as_python_joins_them(groups, parallel):
    """Rendered records (pieces of 0 to 40 bytes, copied in words where a row has room, byte by
    byte at its end) are exactly Python's join of their pieces in (major, slot, minor) order."""
    b = TextBuilder(parallel)
    expected = []
    for gi, (template, majors, slot) in enumerate(groups):
        n = len(majors)
        pieces, columns = [], []
        for k, piece in enumerate(template):
            if isinstance(piece, str):
                pieces.append(piece)
                columns.append([piece] * n)
            else:  # a column: a different string per row
                texts = [f"{piece[0]}{r * (k + 1)}"[: 1 + (r * 7 + k) % 41] for r in range(n)]
                pieces.append(b.strings(texts))
                columns.append(texts)
        b.records(np.array(majors), slot, np.arange(n), pieces)
        expected += [((m, slot, r, gi), "".join(c[r] for c in columns)) for r, m in enumerate(majors)]
    expected.sort(key=lambda item: item[0][:3])
    assert b.render().decode() == "".join(text for _, text in expected)


def test_records_come_out_in_key_order():
    b = TextBuilder()
    column = StringColumn(["alpha", "b", ""])
    b.records(np.array([1, 0]), 2, np.array([5, 4]), ["<", pick(b, column, np.array([1, 0])), ">"])
    b.records(np.array([0, 1]), 1, 0, ["[", b.integers(np.array([-12, 7])), "]"])
    b.records(np.array([0]), 2, 3, [pick(b, column, np.array([2])), "!"])
    assert b.render() == b"[-12]!<alpha>[7]<b>"
    data, starts = gather(np.frombuffer(b"hello world", np.uint8), np.array([6, 0]), np.array([5, 5]))
    assert data.tobytes() == b"worldhello" and starts.tolist() == [0, 5]
    assert math.isclose(float(TextBuilder().fixed_column(np.array([1.0]), 2)[1][0]), 4)  # "1.00"


@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_concat_keeps_every_pairs_survivors_without_per_pair_arrays(data):
    """ChunkAlignments.concat of parts over disjoint pair subsets (dense or sparse parts, pairs
    with and without survivors) gives each pair exactly its part's survivors, in order; its
    sparse form lists only pairs with survivors and holds nothing per pair of the chunk."""
    from gamut.scanning.alignments import ChunkAlignments

    n = data.draw(st.integers(0, 40))
    owner = data.draw(st.lists(st.integers(0, 3), min_size=n, max_size=n))
    parts, index, want = [], [], {}
    for m in range(4):
        idx = np.array([p for p in range(n) if owner[p] == m], np.int64)
        counts = np.array(data.draw(st.lists(st.integers(0, 3), min_size=len(idx), max_size=len(idx))), np.int64)
        stop = np.cumsum(counts)
        total = int(counts.sum())
        score = np.arange(total, dtype=np.int64) + 1000 * m
        cols = [score + k for k in range(4)]
        ops = np.full(total, m, np.uint8)
        part = ChunkAlignments(stop - counts, stop, score, *cols, np.arange(total), np.arange(total) + 1, ops)
        if data.draw(st.booleans()):  # the same part in the sparse form
            pw, a, b = part.survivor_ranges()
            part = ChunkAlignments(a, b, score, *cols, np.arange(total), np.arange(total) + 1, ops, pairs_with=pw,
                                   size=len(idx))
        for k, p in enumerate(idx.tolist()):
            want[p] = score[stop[k] - counts[k]:stop[k]].tolist()
        parts.append(part)
        index.append(idx)
    got = ChunkAlignments.concat(parts, index, n)
    assert got.n_pairs == n and got.pairs_with is not None
    pairs, start, stop = got.survivor_ranges()
    assert pairs.tolist() == sorted(p for p, rows in want.items() if rows)
    assert got.sv_start.shape == got.pairs_with.shape  # nothing per pair of the chunk
    for p in range(n):
        assert got.pair(p).score.tolist() == want.get(p, []), p
    dense_start, dense_stop = got.dense_ranges()
    assert [got.score[a:b].tolist() for a, b in zip(dense_start, dense_stop)] == [want.get(p, []) for p in range(n)]
    assert ChunkAlignments.empty(n).n_pairs == n and ChunkAlignments.empty(n).survivor_count() == 0
