"""Spliced-alignment engines: reference, fast (serial, tiled multicore, batch) and the GPU schedule.

The GPU kernel's schedule is checked on the CPU through a NumPy emulation
(``tests/splice_schedule.py``); the kernel itself is tested in ``test_splice_gpu.py``.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from splice_helpers import brute_force, case_lists, reference_cigar, reference_fields, rescore
from splice_schedule import emulate_forward

from gamut.splicing import cpu
from gamut.splicing.api import solve
from splice_generate import paper_like_cases
from gamut.splicing.model import ScoreParams, make_case


@st.composite
def cases(draw, max_base=40, max_exons=6, max_target=24):
    base = draw(st.lists(st.integers(0, 4), min_size=1, max_size=max_base))
    exons = []
    for _ in range(draw(st.integers(1, max_exons))):
        start = draw(st.integers(0, len(base) - 1))
        end = draw(st.integers(start + 1, min(len(base), start + 12)))
        exons.append((start, end))
    target = draw(st.lists(st.integers(0, 4), min_size=1, max_size=max_target))
    params = ScoreParams(
        match=draw(st.integers(0, 3)), mismatch=draw(st.integers(-3, 1)), gap=draw(st.integers(-3, -1)))
    return np.asarray(base, np.uint8), exons, np.asarray(target, np.uint8), params


def tiled(case, params, n_chunks, block_rows):
    last, pred = cpu._arrays(case)
    cpu._tiled_forward(case.base, case.starts, case.ends, case.target, params.matrix, np.int32(params.gap),
                       last, pred, n_chunks, block_rows)
    return last, pred


def all_engines(case, params):
    ref = cpu.forward_reference(case, params.matrix, params.gap)
    serial = cpu.forward_fast(case, params.matrix, params.gap, parallel=False)
    n1 = case.target.size + 1
    others = {"serial": serial, "tiled 1x1": tiled(case, params, 1, 1)}
    for n_chunks, block_rows in ((2, 3), (5, 7), (3, 64)):
        if n_chunks <= n1:
            others[f"tiled {n_chunks}x{block_rows}"] = tiled(case, params, n_chunks, block_rows)
    return ref, others


@settings(max_examples=80, deadline=None)
@given(cases())
def test_engines_agree_and_match_brute_force(data):
    base, exons, target, params = data
    case = make_case(base, exons, target, params)
    (ref_last, ref_pred), others = all_engines(case, params)
    for name, (last, pred) in others.items():
        np.testing.assert_array_equal(last, ref_last, err_msg=name)
        np.testing.assert_array_equal(pred, ref_pred, err_msg=name)
    result = solve([case], params, "reference")[0]
    assert result.score == brute_force(base, exons, target, params.matrix, params.gap)
    assert rescore(result, base, target, params.matrix, params.gap) == result.score
    starts_ends = [exons[k] for k in result.chain]
    assert all(a[1] <= b[0] for a, b in zip(starts_ends, starts_ends[1:]))
    assert result.exons == starts_ends


@settings(max_examples=60, deadline=None)
@given(cases(max_base=60, max_exons=8, max_target=40), st.integers(1, 4), st.integers(1, 3),
       st.sampled_from([1, 2, 4]), st.integers(0, 3))
def test_gpu_schedule_emulation_matches_reference(data, lanes, cols, rows, slots):
    base, exons, target, params = data
    case = make_case(base, exons, target, params)
    ref_last, ref_pred = cpu.forward_reference(case, params.matrix, params.gap)
    last, pred = emulate_forward(case, params.matrix, params.gap, lanes=lanes, cols=cols, rows=rows, slots=slots)
    np.testing.assert_array_equal(last, ref_last)
    np.testing.assert_array_equal(pred, ref_pred)


def test_generated_cases_all_engines_identical():
    params = ScoreParams()
    generated = paper_like_cases(24, seed=11, scale=0.15)
    prepared = [make_case(g.base, g.exons, g.target, params, name=g.name) for g in generated]
    batch = cpu.forward_fast_many(prepared, params.matrix, params.gap, threads=2)
    for case, (last, pred) in zip(prepared, batch):
        (ref_last, ref_pred), others = all_engines(case, params)
        np.testing.assert_array_equal(last, ref_last)
        np.testing.assert_array_equal(pred, ref_pred)
        for name, (l2, p2) in others.items():
            np.testing.assert_array_equal(l2, ref_last, err_msg=name)
            np.testing.assert_array_equal(p2, ref_pred, err_msg=name)
    ref = solve(prepared, params, "reference")
    fast = solve(prepared, params, "fast")
    assert [(r.score, r.chain, r.alignment.base) for r in ref] == [(r.score, r.chain, r.alignment.base) for r in fast]


def test_emulated_schedule_on_generated_case_with_many_chunks():
    params = ScoreParams(match=2, mismatch=-1, gap=-2)
    g = paper_like_cases(1, seed=5, scale=0.05)[0]
    case = make_case(g.base, g.exons, g.target, params)
    ref = cpu.forward_fast(case, params.matrix, params.gap)
    last, pred = emulate_forward(case, params.matrix, params.gap, lanes=3, cols=2, rows=4, slots=2)
    np.testing.assert_array_equal(last, ref[0])
    np.testing.assert_array_equal(pred, ref[1])


def test_unmutated_gene_is_found_exactly():
    from splice_generate import generate_base

    rng = np.random.default_rng(3)
    base, exons, true_exons = generate_base(rng, base_length=4000, n_exons=30, gene_length=300, exon_mean=40)
    target = np.concatenate([base[exons[k, 0]:exons[k, 1]] for k in true_exons])
    params = ScoreParams()
    result = solve([make_case(base, exons, target, params)], params, "fast")[0]
    assert result.score == target.size * params.match
    assert result.alignment.base == result.alignment.target


@pytest.mark.parametrize("forward", [cpu.forward_reference, cpu.forward_fast])
def test_tie_rule_smallest_predecessor_index(forward):
    params = ScoreParams(match=1, mismatch=-1, gap=-1)
    base = np.asarray([0, 1, 0, 1], np.uint8)  # ACAC
    target = np.asarray([0, 1], np.uint8)  # AC
    # Inputs 1 and 2 are the same AC exon at 0-2 (sorted 0 and 1); input 0 is AC at 2-4 (sorted 2).
    case = make_case(base, [(2, 4), (0, 2), (0, 2)], target, params)
    last, pred = forward(case, params.matrix, params.gap)
    np.testing.assert_array_equal(last[:2], [[-2, 0, 2], [-2, 0, 2]])
    np.testing.assert_array_equal(pred[2], [-1, 0, 0])  # ties between sorted 0 and 1 go to 0
    result = solve([case], params, "fast")[0]
    assert result.score == 2 and result.chain == [1]  # best final exons tie: sorted 0 = input 1


@pytest.mark.parametrize("forward", [cpu.forward_reference, cpu.forward_fast])
def test_tie_rule_prefers_chain_start(forward):
    params = ScoreParams(match=1, mismatch=-1, gap=-1)
    case = make_case(np.asarray([0, 1], np.uint8), [(0, 1), (1, 2)], np.asarray([2], np.uint8), params)
    last, pred = forward(case, params.matrix, params.gap)
    np.testing.assert_array_equal(last[0], [-1, -1])
    # Entering exon 1 at column 1: chain start (1 * gap = -1) ties exon 0's last row (-1).
    np.testing.assert_array_equal(pred[1], [-1, -1])


def test_gpu_batch_packing_layout():
    """The concatenated arrays handed to the kernel describe every case exactly (no GPU needed)."""
    from gamut.splicing.gpu_layout import PackedBatch
    from splice_schedule import build_plan

    params = ScoreParams()
    generated = paper_like_cases(7, seed=2, scale=0.1)
    prepared = [make_case(g.base, g.exons, g.target, params) for g in generated]
    packed = PackedBatch(prepared, cols=4, slots=3)
    assert sorted(packed.case_order.tolist()) == list(range(7))
    cells = [prepared[i].cells for i in packed.case_order]
    assert cells == sorted(cells, reverse=True)
    for i, case in enumerate(prepared):
        e0, e1 = packed.exon_off[i], packed.exon_off[i + 1]
        plan = build_plan(case.base, case.starts, case.ends, 3)
        np.testing.assert_array_equal(packed.stream[packed.stream_off[i]:][:packed.stream_rows[i]], plan.stream)
        assert packed.stream_off[i] % 4 == 0 and packed.stream_rows[i] == plan.rows
        np.testing.assert_array_equal(packed.target[packed.target_off[i]:packed.target_off[i + 1]], case.target)
        np.testing.assert_array_equal(packed.fin[e0:e1], plan.fin)
        ptr = packed.fold_ptr[e0 + i:e1 + i + 1]
        np.testing.assert_array_equal(packed.fold[ptr[0]:ptr[-1]], plan.fold)
        np.testing.assert_array_equal(ptr - ptr[0], plan.fold_ptr)
        assert packed.n_exons[i] == case.n_exons and packed.target_len[i] == case.target.size
        assert packed.out_off[i + 1] - packed.out_off[i] == case.n_exons * (case.target.size + 1)
        chunks = -(-(case.target.size + 1) // 128)
        assert packed.chunks[i] == chunks
        assert packed.bound_off[i + 1] - packed.bound_off[i] == chunks * plan.rows


def test_cases_with_one_base_and_exons_share_a_stream():
    """Targets against one base and exon set (reads of a locus) read one stream; a case on that
    base with other exons gets its own; each case reads its own plan."""
    from gamut.splicing.gpu_layout import PackedBatch
    from splice_schedule import build_plan

    g = paper_like_cases(2, seed=4, scale=0.1)
    shared = make_case(g[0].base, g[0].exons, g[0].target)
    other = make_case(g[0].base, g[0].exons[:-1], g[0].target)
    cases = [shared, replace(shared, target=g[1].target), other, replace(shared, name="again"),
             make_case(g[0].base[::-1], g[0].exons, g[0].target)]  # another base: its own stream
    packed = PackedBatch(cases, cols=4, slots=2)
    plans = [build_plan(c.base, c.starts, c.ends, 2) for c in cases]
    assert packed.stream.size == plans[0].rows + plans[2].rows + plans[4].rows
    assert packed.stream_off[0] == packed.stream_off[1] == packed.stream_off[3] != packed.stream_off[2]
    for i, plan in enumerate(plans):
        np.testing.assert_array_equal(packed.stream[packed.stream_off[i]:][:packed.stream_rows[i]], plan.stream)


@settings(max_examples=60, deadline=None)
@given(cases(max_base=60, max_exons=10), st.sampled_from([1, 2, 4]), st.integers(0, 3))
def test_stream_plan_folds_exactly_the_predecessors(data, rows, slots):
    """Replaying the plan: at each entry the folded set is {l : end_l <= start_k} (minus exons no
    one can follow), parked rows are never overwritten before they are read, and the stream
    holds every exon's symbols between its entry row and its padding."""
    from gamut.splicing.stream import ENTRY_CODE, FINISH_BIT, FOLD_NEVER, FOLD_NOW, PAD_CODE
    from splice_schedule import build_plan

    base, exons, target, params = data
    case = make_case(base, exons, target, params)
    st_, en = case.starts, case.ends
    plan = build_plan(case.base, st_, en, slots, rows)
    assert plan.rows % rows == 0
    pos = 0
    for k in range(case.n_exons):
        length = int(en[k] - st_[k])
        seg = plan.stream[pos:pos + -(-(length + 1) // rows) * rows]
        assert seg[0] == ENTRY_CODE
        np.testing.assert_array_equal(seg[1:length + 1] & 7, case.base[st_[k]:en[k]])
        assert seg[length] & FINISH_BIT and not np.any(seg[1:length] & FINISH_BIT)
        assert np.all(seg[length + 1:] == PAD_CODE)
        pos += seg.size
    assert pos == plan.rows
    folded, slot_of = set(), {}
    for k in range(case.n_exons):
        for l, slot in plan.fold[plan.fold_ptr[k]:plan.fold_ptr[k + 1]].tolist():
            if slot >= 0:
                assert slot_of.pop(slot) == l
            folded.add(l)
        followers = {l for l in range(case.n_exons) if en[l] <= st_[k]}
        assert folded == {l for l in followers if plan.fin[l] != FOLD_NEVER}
        assert all(plan.fin[l] != FOLD_NEVER for l in followers)
        if plan.fin[k] == FOLD_NOW:
            folded.add(k)
        elif plan.fin[k] >= 0:
            assert plan.fin[k] < slots and plan.fin[k] not in slot_of
            slot_of[int(plan.fin[k])] = k


@pytest.mark.parametrize("scale", [0.1, 1.0])
def test_generator_makes_only_valid_exons(scale):
    """Every generated exon is non-empty and inside its base (a shifted decoy once ended up empty)."""
    for g in paper_like_cases(300, seed=0, scale=scale):
        assert (g.exons[:, 0] >= 0).all() and (g.exons[:, 1] > g.exons[:, 0]).all(), g.name
        assert (g.exons[:, 1] <= g.base.size).all(), g.name
        make_case(g.base, g.exons, g.target, ScoreParams(), name=g.name)


@pytest.mark.parametrize("engine", ["reference", "fast"])
def test_traceback_prefers_diagonal_then_vertical(engine):
    """Inside an exon, ties go to the diagonal move, then vertical, then horizontal."""
    import gamut

    # Target A against exon AA: matching either A scores 0; the diagonal move at the last cell wins.
    r = gamut.splice("AA", [(0, 2)], "A", match=1, mismatch=-1, gap=-1, engine=engine)
    assert (r.score, r.alignment.base, r.alignment.target) == (0, "AA", "-A")
    # Target AA against exon A: vertical (A against a gap) and horizontal tie only at the start;
    # the last cell's diagonal takes the second target A.
    r = gamut.splice("A", [(0, 1)], "AA", match=1, mismatch=-1, gap=-1, engine=engine)
    assert (r.score, r.alignment.base, r.alignment.target) == (0, "-A", "AA")


@settings(max_examples=60, deadline=None)
@given(case_lists(max_target=60))
def test_results_hold_the_traceback_column_by_column(data):
    """The batch result builder (one compiled pass for all cases) gives, for every case, the
    positions, aligned strings and target spans that the traceback defines."""
    cases, params = data
    results = solve(cases, params, "fast")
    for case, result in zip(cases, results):
        last, pred = cpu.forward_fast(case, params.matrix, params.gap)
        score, chain, ops = cpu.traceback(case, params.matrix, params.gap, last, pred)
        bpos, tpos, b_text, t_text, spans = reference_fields(case, chain, ops)
        assert result.score == score and result.chain == [int(case.order[k]) for k in chain]
        assert result.exons == [(int(case.starts[k]), int(case.ends[k])) for k in chain]
        assert result.alignment.base_pos.tolist() == bpos and result.alignment.target_pos.tolist() == tpos
        assert (result.alignment.base, result.alignment.target) == (b_text, t_text)
        assert result.target_spans == spans
        assert result.cells == case.cells and result.engine == "fast"
        assert result.alignment.cigar == reference_cigar(bpos, tpos)
        assert result.alignment.matches == sum(b == t and b not in "-N" for b, t in zip(b_text, t_text))
