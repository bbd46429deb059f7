"""The GPU partition function (gamut.folding.turner.gpu_pf, kernels in plfold.cu) against ViennaRNA
(``fc.pf()``, ``fc.bpp()``), through the host build of its kernels: every launch of the CUDA driver
in the same order, as loops on the CPU. Ensemble energies must agree to 1e-6 relative (ViennaRNA
returns them as floats: 6e-8), every pair probability to 1e-6 absolute, for every option."""
from __future__ import annotations

import math
import random
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

RNA = pytest.importorskip("RNA")

from turner_pf_host import HostPfRunner, build_turner_pf_host  # noqa: E402

from gamut.access.gpu import BatchMemoryError, PackedBatch, Piece, WeightRangeError  # noqa: E402
from gamut.errors import InputError  # noqa: E402
from gamut.folding.turner import gpu_pf  # noqa: E402
from gamut.folding.turner.gpu_pf import pair_rows, pf_batch, plan_batches, read_sequences  # noqa: E402
from gamut.folding.turner.options import TurnerOptions  # noqa: E402
from gamut.io import read_fasta  # noqa: E402

HAIRPINS = Path(__file__).resolve().parent / "data" / "fold" / "pf_human_hairpins.fa"
ENERGY_RELATIVE = 1e-6
PROBABILITY_ABSOLUTE = 1e-6


@pytest.fixture(scope="module")
def libraries(tmp_path_factory):
    """Host libraries by (dangles, noLP), built on first use."""
    folder = tmp_path_factory.mktemp("turner_pf")
    built: dict[tuple[int, bool], str] = {}

    def get(options: TurnerOptions) -> str:
        key = (options.dangles, options.no_lp)
        if key not in built:
            built[key] = build_turner_pf_host(folder, options)
        return built[key]

    return get


def vienna(sequence: str, options: TurnerOptions) -> tuple[float, np.ndarray]:
    """ViennaRNA's ensemble energy and (n, n) pair probabilities (upper triangle) of ``sequence`` read
    as RNAfold reads it: T as U (RNAfold converts T; the Python API leaves it, and then no special
    hairpin with a T matches ViennaRNA's tables)."""
    if not sequence:
        return 0.0, np.zeros((0, 0))
    fc = RNA.fold_compound(sequence.upper().replace("T", "U"), options.model_details())
    # As RNAfold -p: Boltzmann factors scaled around the MFE. Without it ViennaRNA's own partition
    # function of a long sequence leaves the range of doubles (3,000 nt: it returned 100000.0).
    fc.exp_params_rescale(fc.mfe()[1])
    energy = fc.pf()[1]
    return energy, np.triu(np.array(fc.bpp())[1:, 1:], 1)


def assert_vienna(sequences: list[str], options: TurnerOptions, results) -> None:
    assert len(results) == len(sequences)
    for index, (sequence, result) in enumerate(zip(sequences, results)):
        energy, probabilities = vienna(sequence, options)
        n = len(sequence)
        where = f"sequence {index} (n={n}, {options})"
        assert result.probabilities.shape == (n, n) and result.probabilities.dtype == np.float64, where
        assert abs(result.ensemble_energy - energy) <= ENERGY_RELATIVE * abs(energy) + 1e-12, \
            f"{where}: ensemble energy {result.ensemble_energy!r}, ViennaRNA {energy!r}"
        if n:
            assert np.array_equal(result.probabilities, np.triu(result.probabilities, 1)), where
            worst = float(np.max(np.abs(result.probabilities - probabilities)))
            assert worst <= PROBABILITY_ABSOLUTE, f"{where}: probabilities differ by {worst:.3g}"


def fold(libraries, sequences: list[str], options: TurnerOptions, **runner):
    return pf_batch(sequences, options, runner=HostPfRunner(libraries(options), options, **runner))


def random_sequence(rng: random.Random, n: int, letters: str = "ACGU") -> str:
    return "".join(rng.choice(letters) for _ in range(n))


OPTIONS = st.builds(TurnerOptions, temperature=st.sampled_from([37.0, 24.5, 50.0, 0.0, 70.0]),
                    dangles=st.sampled_from([0, 2]), no_lp=st.booleans(),
                    max_bp_span=st.one_of(st.just(-1), st.integers(4, 160)))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_host_build_is_vienna_on_random_sequences_with_every_option(libraries, data):
    options = data.draw(st.one_of(st.just(TurnerOptions()), OPTIONS), label="options")
    letters = data.draw(st.sampled_from(["ACGU", "GC", "ACGUNacgut", "AUGCT"]), label="letters")
    sequences = data.draw(st.lists(st.text(letters, min_size=1, max_size=150), min_size=1, max_size=4),
                          label="sequences")
    assert_vienna(sequences, options, fold(libraries, sequences, options))


@pytest.mark.parametrize("options", [TurnerOptions(), TurnerOptions(dangles=0), TurnerOptions(temperature=20.0),
                                     TurnerOptions(no_lp=True), TurnerOptions(max_bp_span=150)], ids=str)
def test_host_build_is_vienna_on_longer_sequences(libraries, options):
    rng = random.Random(46)
    sequences = [random_sequence(rng, 300), random_sequence(rng, 450, "ACGUN"), random_sequence(rng, 600)]
    runner = HostPfRunner(libraries(options), options)
    assert_vienna(sequences, options, pf_batch(sequences, options, runner=runner))
    # all three estimated from their pieces first (one batch), then folded together
    assert [b[4] for b in runner.batches] == [False, True]


def test_host_build_is_vienna_on_human_hairpins(libraries):
    hairpins = [record.sequence for record in read_fasta(HAIRPINS)]
    assert len(hairpins) == 40
    for options in (TurnerOptions(), TurnerOptions(no_lp=True, dangles=0, temperature=30.0)):
        assert_vienna(hairpins, options, fold(libraries, hairpins, options))


def test_strong_sequences_are_scaled_into_the_range_of_doubles(libraries):
    """500 letters of G and C weigh about e^1400, past the range of doubles unscaled; a sequence of
    mixed strength is scaled from its pieces' partition functions."""
    rng = random.Random(7)
    sequences = [random_sequence(rng, 500, "GC"), random_sequence(rng, 250, "GC") + random_sequence(rng, 250, "AU")]
    options = TurnerOptions()
    runner = HostPfRunner(libraries(options), options)
    results = pf_batch(sequences, options, runner=runner)
    assert_vienna(sequences, options, results)
    assert results[0].ensemble_energy / 0.616 < -700  # scaled indeed
    assert all(scale < math.exp(-1.0) for *_, scale, whole in runner.batches if whole)


def test_batches_of_mixed_lengths_fold_as_single_sequences(libraries):
    rng = random.Random(3)
    sequences = [random_sequence(rng, rng.choice([1, 4, 5, 30, 90, 230]), "ACGUN") for _ in range(25)]
    sequences.insert(7, "")
    options = TurnerOptions()
    runner = HostPfRunner(libraries(options), options, free_bytes=12_000_000)  # a few batches
    together = pf_batch(sequences, options, runner=runner)
    assert sum(whole for *_, whole in runner.batches) > 3 and runner.released
    assert together[7].ensemble_energy == 0.0 and together[7].probabilities.shape == (0, 0)
    for sequence, result in zip(sequences, together):
        alone = fold(libraries, [sequence], options)[0]
        assert result.ensemble_energy == pytest.approx(alone.ensemble_energy, rel=1e-12, abs=1e-14)
        assert np.allclose(result.probabilities, alone.probabilities, rtol=0, atol=1e-14)
    assert_vienna(sequences, options, together)


def test_letters_are_read_as_rnafold_reads_them():
    codes = read_sequences(["ACGUTN", "acgutn", ""])
    assert codes[0].tolist() == [1, 2, 3, 4, 4, 0] and codes[1].tolist() == codes[0].tolist() and codes[2].size == 0
    for bad, where in (("ACGRU", "'R' at position 4"), ("AC GU", "' ' at position 3"), ("ACGé", "'é' at position 4")):
        with pytest.raises(InputError, match=f"sequence 1: {where} is not an RNA letter"):
            pf_batch(["ACGU", bad], TurnerOptions(), runner=None)
    assert pf_batch(["", ""], TurnerOptions())[1].ensemble_energy == 0.0  # nothing to fold: no device


def test_a_sequence_too_long_for_the_memory_at_hand_is_one_error():
    options = TurnerOptions()
    need = gpu_pf.batch_bytes(3000, 3000, 3000, 1, 3000 * 3000)
    assert 1.2e9 < need < 1.4e9  # 15 doubles a cell of (span, position), the matrix, a little more
    with pytest.raises(InputError, match=r"sequence 1 \(3,000 letters\) is too long for the GPU partition function: "
                                         r"it needs 1\.3 GB of GPU memory, 0\.5 GB are at hand"):
        plan_batches([10, 3000], options, 500_000_000)
    assert plan_batches([10, 3000], TurnerOptions(max_bp_span=100), 500_000_000) == [[1, 0]]


def test_batches_are_planned_longest_first_within_the_budget():
    lengths = [50, 0, 400, 60, 400, 10]
    options = TurnerOptions()
    one = gpu_pf.batch_bytes(400, 400, 400, 1, 400 * 400)
    groups = plan_batches(lengths, options, one + 1)
    assert groups == [[2], [4], [3, 0, 5]]
    assert all(gpu_pf.batch_bytes(sum(lengths[k] for k in g), lengths[g[0]], lengths[g[0]], len(g),
                                  sum(lengths[k] ** 2 for k in g)) <= one + 1 for g in groups)
    assert plan_batches(lengths, options, 10**12) == [[2, 4, 3, 0, 5]]


def test_pair_rows_place_each_matrix_after_the_partition_functions():
    codes = read_sequences(["ACGUA", "AC", "ACG"])
    batch = PackedBatch.pack([Piece(0, 0, 5, 0, 5), Piece(1, 0, 2, 0, 2), Piece(2, 0, 3, 0, 3)], codes)
    rows, total = pair_rows(batch)
    assert total == 3 + 25 + 4 + 9
    assert rows.tolist() == [3, 9, 15, 21, 27, 28, 31, 32, 36, 40]


class FlakyRunner:
    """A runner whose batches of more than one piece, or every batch, leave the range of doubles."""

    def __init__(self, always: bool, error=WeightRangeError) -> None:
        self.always, self.error, self.calls = always, error, []

    def free_bytes(self) -> int:
        return 1 << 30

    def release(self) -> None:
        pass

    def partition(self, batch, window, span, scale, rows, lanes):
        self.calls.append((len(batch.pieces), scale, rows is not None))
        if self.always or len(batch.pieces) > 1:
            raise self.error("out of range")
        out = np.zeros(rows[1])
        out[0] = 1.0
        return out


def test_a_batch_out_of_range_is_folded_in_halves_then_at_other_scales():
    results = pf_batch(["ACGUACGUAC", "GGGGAAACCCC", "A"], TurnerOptions(), runner=FlakyRunner(False))
    assert [r.probabilities.shape for r in results] == [(10, 10), (11, 11), (1, 1)]
    runner = FlakyRunner(True)
    with pytest.raises(InputError, match=r"sequence 1 \(11 letters\): the GPU partition function failed: its "
                                         r"Boltzmann weights left the range of doubles at every scale tried"):
        pf_batch(["ACGUACGUAC", "GGGGAAACCCC"], TurnerOptions(), runner=runner)
    alone = [scale for count, scale, _ in runner.calls if count == 1]
    assert len(alone) == len(gpu_pf.RETRY_GAINS) and len(set(alone)) == len(alone)
    with pytest.raises(InputError, match="sequence 1 .* it did not fit the GPU's memory"):
        pf_batch(["ACGUACGUAC", "GGGGAAACCCCAAA"], TurnerOptions(), runner=FlakyRunner(True, BatchMemoryError))


def test_lanes_split_a_cells_sums_without_changing_them(libraries):
    rng = random.Random(11)
    sequences = [random_sequence(rng, 260), random_sequence(rng, 120, "ACGUN")]
    options = TurnerOptions(no_lp=True)
    results = {}
    for lanes in (1, 2, 32):
        runner = HostPfRunner(libraries(options), options)
        results[lanes] = pf_batch(sequences, options, runner=runner, lanes=lanes)
        assert runner.lanes[-1] == lanes
    for lanes in (2, 32):
        for one, split in zip(results[1], results[lanes]):
            assert split.ensemble_energy == pytest.approx(one.ensemble_energy, rel=1e-13)
            assert np.allclose(split.probabilities, one.probabilities, rtol=0, atol=1e-14)
    assert_vienna(sequences, options, results[32])


def test_lanes_go_to_long_spans_on_few_positions():
    assert gpu_pf.lanes_for(3000, 3000) == 32
    assert gpu_pf.lanes_for(3000, 60) == 4  # each lane keeps 8 terms or more
    assert gpu_pf.lanes_for(8_000_000, 50) == 1 and gpu_pf.lanes_for(300_000, 3000) == 1
    assert gpu_pf.lanes_for(20_000, 500) == 16


@pytest.mark.parametrize("options", [TurnerOptions(), TurnerOptions(dangles=0, no_lp=True)], ids=str)
def test_kernels_compile_for_hopper_without_spills(options):
    """The CUDA build of the options' kernels (NVRTC alone, no GPU; skipped where NVRTC is absent)."""
    import re

    from test_fold_kernel_compile import nvrtc_compile

    from gamut.access.gpu import KERNELS
    from gamut.cuda.kernels import kernel_source

    rc, text = nvrtc_compile(kernel_source("plfold.cu").encode(), "plfold.cu",
                             ["--ptxas-options=-v", *gpu_pf.kernel_defines(options)])
    assert rc == 0, text
    assert all(f"'{name}'" in text for name in KERNELS)
    assert re.findall(r"(\d+) bytes spill stores", text) == ["0"] * len(KERNELS), text
