"""The batch launches' measurement variants (gamut.folding.turner.batch_tuning, GAMUT_TMFE_*): their
shapes as gpu_mfe plans them, and their kernels' bodies (tmfe_batch_shared, tmfe_batch_warps) in
the host build: the same energies and structures as the default launch, ViennaRNA's. The host has
no shared memory: there a shared work area is an ordinary buffer, so these tests check everything
of the shared variants but the memory space."""
from __future__ import annotations

import pytest

pytest.importorskip("RNA")

import numpy as np  # noqa: E402
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from turner_mfe_host import HOST_SHARED_LIMITS, HostRunner, build_turner_mfe_host  # noqa: E402
from turner_mfe_reference import OPTION_SETS, check_folds, hsa_hairpins, random_rnas  # noqa: E402

from gamut.errors import InputError  # noqa: E402
from gamut.folding.turner import gpu_mfe  # noqa: E402
from gamut.folding.turner.batch_tuning import BatchShape, BatchTuning, resident_blocks  # noqa: E402
from gamut.folding.turner.gpu_mfe import SequenceMemoryError, mfe_batch  # noqa: E402
from gamut.folding.turner.options import TurnerOptions  # noqa: E402

#: Every kernel variant: warp groups alone, in blocks of several warps, shared areas for a block,
#: for warps, for the longer classes too, and fewer blocks with each.
TUNINGS = (
    BatchTuning(warps=1),
    BatchTuning(warps=4),
    BatchTuning(shared_upto=64),
    BatchTuning(warps=3, shared_upto=64),
    BatchTuning(shared_upto=300, blocks_per_sm=1),
    BatchTuning(blocks_per_sm=1, warps=2),
    BatchTuning(blocks_per_sm=2),
)
TUNING_IDS = [t.label() for t in TUNINGS]


@pytest.fixture(scope="module")
def library(tmp_path_factory) -> str:
    return build_turner_mfe_host(tmp_path_factory.mktemp("turner_mfe_variants"))


def fold(library: str, sequences: list[str], options: TurnerOptions, tuning: BatchTuning | None = None,
         sms: int = 1):
    runner = HostRunner(library, sms=sms, tuning=tuning)
    energies, structures = mfe_batch(sequences, options, runner=runner)
    return energies, structures, runner


def expected_kernel(tuning: BatchTuning, nmax: int, no_lp: bool) -> str:
    """The kernel of a launch of at most nmax letters (a warp a block up to 64 nt; shared areas where
    the knob and a block's shared memory allow)."""
    if tuning.warps and nmax <= 64:
        return "tmfe_batch_warps"
    fits = 4 * gpu_mfe.work_ints(nmax, no_lp) <= HOST_SHARED_LIMITS[0]
    return "tmfe_batch_shared" if tuning.shared_upto and nmax <= tuning.shared_upto and fits else "tmfe_batch"


@pytest.mark.parametrize("tuning", TUNINGS, ids=TUNING_IDS)
def test_variants_fold_as_the_default_launch(library, tuning):
    """Every length class (1-200 nt) in one call, more sequences than groups (areas reused), with
    the default options and noLP (one more array in the work area): ViennaRNA's answers, the
    default launch's exactly, each launch by the kernel its knobs choose."""
    sequences = random_rnas(90, 1, 200, seed=11) + random_rnas(150, 10, 64, seed=12)
    sequences += [s for _, s in hsa_hairpins()[:40]]
    for options in (TurnerOptions(), TurnerOptions(no_lp=True, dangles=0)):
        energies, structures, runner = fold(library, sequences, options, tuning, sms=2)
        check_folds(sequences, options, energies, structures)
        base_e, base_s, _ = fold(library, sequences, options, sms=2)
        np.testing.assert_array_equal(energies, base_e)
        assert structures == base_s
        assert len(runner.shapes) == 3  # up to 64, 128 and 256 nt
        for (_, count, nmax, _), shape in zip(runner.launches, runner.shapes):
            assert shape.kernel == expected_kernel(tuning, nmax, options.no_lp)
        first = runner.launches[0]
        assert runner.shapes[0].blocks * runner.shapes[0].groups < first[1]  # groups fold several sequences


@pytest.mark.parametrize("options", OPTION_SETS, ids=[str(x) for x in range(len(OPTION_SETS))])
@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sequences=st.lists(st.text(alphabet=st.sampled_from("ACGUACGUacgutTN"), min_size=0, max_size=64),
                          min_size=1, max_size=12))
def test_warps_with_shared_areas_equal_viennarna(library, options, sequences):
    """The variant with most changes (warps, shared areas, one block) on hypothesis batches."""
    energies, structures, runner = fold(library, sequences, options,
                                        BatchTuning(warps=2, shared_upto=64, blocks_per_sm=1))
    check_folds(sequences, options, energies, structures)
    assert all(s.kernel == "tmfe_batch_warps" and s.in_shared for s in runner.shapes)


def test_warp_areas_are_the_groups_own(library):
    """tmfe_batch_warps' areas: group (block, warp) its own, inside the launch's (global) or the
    block's (shared) memory. (The host runs groups in turn, so shared areas would not show there.)"""
    import ctypes

    lib = ctypes.CDLL(library)
    lib.host_tmfe_warp_area.restype = ctypes.c_longlong
    size, blocks, groups = 1000, 5, 3
    for in_shared, span in ((0, blocks * groups), (1, groups)):
        starts = [lib.host_tmfe_warp_area(ctypes.c_longlong(size), b, groups, x, in_shared)
                  for b in range(blocks) for x in range(groups)]
        assert sorted(set(starts)) == [k * size for k in range(span)]
        if in_shared:  # a block's warps apart
            assert all(len({starts[b * groups + x] for x in range(groups)}) == groups for b in range(blocks))


class Device:
    """A Runner's planning side: 132 multiprocessors, free memory and register counts as given."""

    def __init__(self, tuning: BatchTuning, free: int = 1 << 34, regs: int = 44) -> None:
        self.tuning, self._free, self.regs = tuning, free, regs

    def free_bytes(self) -> int:
        return self._free

    def multiprocessors(self) -> int:
        return 132

    def shared_limits(self) -> tuple[int, int]:
        return HOST_SHARED_LIMITS

    def resident_blocks(self, kernel: str, threads: int, shared_bytes: int) -> int:
        return resident_blocks(self.regs, 16, threads, shared_bytes, HOST_SHARED_LIMITS[1])


def shapes(sequences: list[str], tuning: BatchTuning, **device) -> list[BatchShape]:
    job = gpu_mfe.plan(sequences, TurnerOptions())
    return gpu_mfe.launch_shapes(job, Device(tuning, **device))


def test_default_shape_is_the_plain_launch():
    """Unset knobs: tmfe_batch, 32 one-warp blocks a multiprocessor (1,024 threads), areas in global memory."""
    got = shapes(["A" * 50] * 10_000 + ["C" * 100] * 10, BatchTuning())
    assert got == [BatchShape("tmfe_batch", 132 * 32, 32), BatchShape("tmfe_batch", 10, 64)]


def test_shapes_of_the_knobs():
    windows = ["A" * 50] * 100_000
    area = 4 * gpu_mfe.work_ints(50, False)
    assert shapes(windows, BatchTuning(blocks_per_sm=12)) == [BatchShape("tmfe_batch", 132 * 12, 32)]
    # 32 blocks of 64 threads: 64 warps of 48 registers a thread do not fit; 21 blocks do
    assert shapes(["A" * 100] * 10_000, BatchTuning(blocks_per_sm=32)) == [BatchShape("tmfe_batch", 132 * 21, 64)]
    # warps: 4 a block, 8 blocks (1,024 threads) where 44 registers a thread let 32 warps in
    assert shapes(windows, BatchTuning(warps=4)) == [BatchShape("tmfe_batch_warps", 132 * 8, 128, 4)]
    # 72 registers a thread: 28 warps a multiprocessor, 7 blocks of 4
    assert shapes(windows, BatchTuning(warps=4), regs=72) == [BatchShape("tmfe_batch_warps", 132 * 7, 128, 4)]
    # shared areas: as many blocks as the multiprocessor's shared memory holds
    per_sm = HOST_SHARED_LIMITS[1] // (area + 16 + 1024)
    assert shapes(windows, BatchTuning(shared_upto=64)) == [BatchShape("tmfe_batch_shared", 132 * per_sm, 32, 1, area)]
    per_sm = HOST_SHARED_LIMITS[1] // (3 * area + 16 + 1024)
    assert shapes(windows, BatchTuning(shared_upto=64, warps=3)) == [
        BatchShape("tmfe_batch_warps", 132 * per_sm, 96, 3, 3 * area)]
    # a launch longer than shared_upto, or whose area does not fit a block's shared memory: global
    assert shapes(windows, BatchTuning(shared_upto=49))[0].kernel == "tmfe_batch"
    big = shapes(["A" * 200] * 10, BatchTuning(shared_upto=1000))
    assert big == [BatchShape("tmfe_batch", 10, 128)]
    # a small batch: no more blocks than sequences (groups of warps rounded up)
    assert shapes(["A" * 50] * 9, BatchTuning(warps=4)) == [BatchShape("tmfe_batch_warps", 3, 128, 4)]


def test_variant_blocks_are_all_resident():
    """A batch's blocks loop over their shares: a variant never asks for more than fit at once."""
    windows = ["A" * 60] * 1_000_000
    for tuning in TUNINGS + (BatchTuning(blocks_per_sm=32, warps=8), BatchTuning(shared_upto=64, blocks_per_sm=32),
                             BatchTuning(blocks_per_sm=32)):
        for regs in (40, 70, 128):
            (shape,) = shapes(windows, tuning, regs=regs)
            if shape.kernel != "tmfe_batch" or tuning.blocks_per_sm:
                per_sm = resident_blocks(regs, 16, shape.threads, shape.shared_bytes, HOST_SHARED_LIMITS[1])
                assert shape.blocks <= 132 * per_sm


def test_global_areas_are_limited_by_the_memory_at_hand():
    area = 4 * gpu_mfe.work_ints(50, False)
    free = int((50 * area * 4 + 2 * 50 * 10_000 + 16 * 10_000) / gpu_mfe.MEMORY_SHARE) + 1000
    (shape,) = shapes(["A" * 50] * 10_000, BatchTuning(warps=4), free=free)
    assert shape.blocks == 50 and shape.global_areas == 200
    with pytest.raises(SequenceMemoryError, match=r"sequences of 50 letters need"):
        shapes(["A" * 50] * 10, BatchTuning(warps=4), free=area)
    (shape,) = shapes(["A" * 50] * 10_000, BatchTuning(shared_upto=64), free=area)  # shared: no global areas
    assert shape.in_shared and shape.global_areas == 0


def test_knobs_from_the_environment():
    assert BatchTuning.from_env({}) == BatchTuning()
    env = {"GAMUT_TMFE_BLOCKS_PER_SM": "12", "GAMUT_TMFE_WARPS": " 4 ", "GAMUT_TMFE_SHARED_UPTO": "64"}
    assert BatchTuning.from_env(env) == BatchTuning(blocks_per_sm=12, warps=4, shared_upto=64)
    assert BatchTuning.from_env(env).label() == "bps12+w4+shared64"
    assert BatchTuning.from_env({"GAMUT_TMFE_WARPS": ""}) == BatchTuning()
    for name, value in (("GAMUT_TMFE_WARPS", "33"), ("GAMUT_TMFE_BLOCKS_PER_SM", "0"),
                        ("GAMUT_TMFE_SHARED_UPTO", "yes")):
        with pytest.raises(InputError, match=rf"{name}='{value}': expected a whole number"):
            BatchTuning.from_env({name: value})
