"""Size limits and consistency checks of the spliced alignment (issue #17), on the CPU.

The GPU kernel indexes exon-stream rows, exon counts and target columns in int32 and keeps scores
in int32 cells: sizes past those limits raise a clear error naming the limit, and a forward pass
whose ``last``/``pred`` arrays disagree with their traceback is reported, never returned.
"""
from __future__ import annotations

import numpy as np
import pytest

from gamut.errors import DeviceError, InputError
from gamut.splicing import api
from gamut.splicing import cpu
from gamut.splicing import engines
from gamut.splicing import gpu_layout
from gamut.splicing.model import SCORE_LIMIT, ScoreParams, make_case
from splice_schedule import build_plan


def small_case(seed: int = 3):
    rng = np.random.default_rng(seed)
    base = rng.integers(0, 4, 400).astype(np.uint8)
    exons = [(10, 60), (40, 90), (100, 180), (150, 220), (230, 300), (310, 390)]
    target = np.concatenate([base[10:60], base[100:180], base[310:390]])
    return base, exons, target


def test_int32_packing_names_the_limit():
    assert gpu_layout.int32_for_kernel([0, 5, 2**31 - 1], "rows").dtype == np.int32
    with pytest.raises(DeviceError, match=r"rows reach 2,147,483,648; the GPU engine handles at most 2,147,483,647"):
        gpu_layout.int32_for_kernel([1, 2**31], "rows")
    with pytest.raises(DeviceError, match="at most 99"):
        gpu_layout.int32_for_kernel([100], "rows", 99)


def test_packed_batch_checks_the_stream_rows(monkeypatch):
    params = ScoreParams()
    case = make_case(*small_case(), params)
    rows = build_plan(case.base, case.starts, case.ends, 0).rows
    assert gpu_layout.PackedBatch([case], 8, 0).stream_rows.tolist() == [rows]
    monkeypatch.setattr(gpu_layout, "MAX_STREAM_ROWS", rows - 1)
    with pytest.raises(DeviceError, match="exon-stream rows of a case"):
        gpu_layout.PackedBatch([case], 8, 0)


def test_cases_built_without_parameters_are_checked_for_score_overflow():
    rng = np.random.default_rng(1)
    base = rng.integers(0, 4, 30_000).astype(np.uint8)
    case = make_case(base, [(0, 100)], base[:100])  # no parameters: not checked here
    params = ScoreParams(gap=-10_000)
    assert (base.size + 102) * params.max_abs >= SCORE_LIMIT
    with pytest.raises(InputError, match="scores could overflow 32-bit cells"):
        api.splice_many([case], gap=-10_000, engine="fast")
    with pytest.raises(InputError, match="scores could overflow 32-bit cells"):
        make_case(base, [(0, 100)], base[:100], params)
    assert len(api.splice_many([case], engine="fast")) == 1  # default scores fit


def test_traceback_rejects_inconsistent_arrays(monkeypatch):
    """A predecessor that cannot precede stops the CPU traceback; an optimum no alignment reaches
    is caught when the results are built (one check for every engine)."""
    params = ScoreParams()
    case = make_case(*small_case(), params)
    last, pred = cpu.forward_fast(case, params.matrix, params.gap)
    score = cpu.traceback(case, params.matrix, params.gap, last, pred)[0]
    assert score == last[:, -1].max()
    bad = pred.copy()
    bad[-1, :] = case.n_exons - 1  # an exon preceding itself: would loop
    with pytest.raises(RuntimeError, match="pred names an exon that cannot precede"):
        cpu.traceback(case, params.matrix, params.gap, last, bad)

    def wrong_forward(cases, params, threads=None):
        return [(last + 1, pred) for _ in cases]  # the score no alignment reaches

    monkeypatch.setitem(engines.ENGINES, "fast", engines.CpuEngine("fast", wrong_forward))
    with pytest.raises(RuntimeError, match="alignment's score is not the reported optimum"):
        api.solve([case], params, "fast")


def test_blocks_per_sm_lower_bound():
    """The fallback occupancy bound takes the tightest of threads, registers, shared memory, blocks."""
    from gamut.splicing.gpu_layout import sm_occupancy

    h100 = {"MaxThreadsPerMultiProcessor": 2048, "MaxRegistersPerMultiprocessor": 65536,
            "MaxSharedMemoryPerMultiprocessor": 233472, "MaxBlocksPerMultiprocessor": 32}
    assert sm_occupancy({"num_regs": 32, "shared_size_bytes": 0}, h100, 32, 0) == 32  # block limit
    assert sm_occupancy({"num_regs": 64, "shared_size_bytes": 0}, h100, 512, 0) == 2  # registers
    assert sm_occupancy({"num_regs": 16, "shared_size_bytes": 0}, h100, 1024, 0) == 2  # threads
    assert sm_occupancy({"num_regs": 16, "shared_size_bytes": 1024}, h100, 128, 100_000) == 2  # shared
    assert sm_occupancy({"num_regs": 16, "shared_size_bytes": 0}, h100, 128, 300_000) == 0
