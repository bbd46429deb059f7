"""The GPU MFE engine on a CUDA device (``gpu`` tests): the same sets as the host build's tests, in
one call each (mixed lengths in one batch, long sequences by diagonals), against ViennaRNA."""
from __future__ import annotations

import pytest

pytest.importorskip("RNA")

import numpy as np  # noqa: E402
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from turner_mfe_reference import OPTION_SETS, check_folds, hsa_hairpins, random_rnas  # noqa: E402

from gamut.folding.turner.batch_tuning import BatchTuning  # noqa: E402
from gamut.folding.turner.gpu_mfe import CupyRunner, mfe_batch  # noqa: E402
from gamut.folding.turner.options import TurnerOptions  # noqa: E402

pytestmark = pytest.mark.gpu

OPTION_IDS = [f"T{o.temperature:g}-d{o.dangles}-lp{int(not o.no_lp)}-span{o.max_bp_span}" for o in OPTION_SETS]


@pytest.fixture(scope="module")
def runner() -> CupyRunner:
    return CupyRunner(0)


def mixed_set(seed: int) -> list[str]:
    """Random RNAs of 1-200 nt with N, lowercase and T, then 50 human hairpins, mixed."""
    rng = np.random.default_rng(seed)
    alphabet = np.array(list("ACGUACGUACGUacgutTN"))
    out = ["".join(rng.choice(alphabet, size=int(n))) for n in rng.integers(1, 201, size=300)]
    out += [s for _, s in hsa_hairpins()[::31]]
    return [out[x] for x in rng.permutation(len(out))]


@pytest.mark.parametrize("options", OPTION_SETS, ids=OPTION_IDS)
def test_mixed_batch(runner, options):
    sequences = mixed_set(46)
    energies, structures = mfe_batch(sequences, options, runner=runner)
    check_folds(sequences, options, energies, structures)


def test_every_human_hairpin(runner):
    sequences = [s for _, s in hsa_hairpins()]
    energies, structures = mfe_batch(sequences, TurnerOptions(), runner=runner)
    check_folds(sequences, TurnerOptions(), energies, structures)


@pytest.mark.parametrize("options", [OPTION_SETS[0], OPTION_SETS[1], OPTION_SETS[2]], ids=OPTION_IDS[:3])
def test_long_by_diagonals(runner, options):
    """1,500 and 3,000 nt by diagonals; 600-1000 nt both ways (batch and diagonals) alike."""
    sequences = random_rnas(1, 1500, 1500, seed=7) + random_rnas(1, 3000, 3000, seed=8)
    energies, structures = mfe_batch(sequences, options, runner=runner)
    check_folds(sequences, options, energies, structures)
    medium = random_rnas(4, 600, 1000, seed=9)
    batch_e, batch_s = mfe_batch(medium, options, runner=runner)
    long_e, long_s = mfe_batch(medium, options, runner=runner, long_from=600)
    np.testing.assert_array_equal(batch_e, long_e)
    check_folds(medium, options, batch_e, batch_s)
    check_folds(medium, options, long_e, long_s)


def test_many_windows_in_one_launch(runner):
    """20,000 windows of 50 nt (blocks loop over sequences): a sample checked against ViennaRNA."""
    rng = np.random.default_rng(3)
    sequences = ["".join(rng.choice(list("ACGU"), size=50)) for _ in range(20_000)]
    energies, structures = mfe_batch(sequences, TurnerOptions(), runner=runner)
    picks = list(range(0, 20_000, 97))
    check_folds([sequences[x] for x in picks], TurnerOptions(), energies[picks], [structures[x] for x in picks])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.text("ACGUNacgutT", min_size=1, max_size=600), min_size=1, max_size=6),
       st.sampled_from(OPTION_SETS))
def test_hypothesis_batches_up_to_600_nt(runner, sequences, options):
    """The issue's hypothesis set: 1-600 nt, every letter the model reads, any option set."""
    energies, structures = mfe_batch(sequences, options, runner=runner)
    check_folds(sequences, options, energies, structures)


@pytest.mark.parametrize("tuning", [BatchTuning(warps=1), BatchTuning(warps=4, blocks_per_sm=4),
                                    BatchTuning(shared_upto=64), BatchTuning(warps=2, shared_upto=64),
                                    BatchTuning(shared_upto=256, blocks_per_sm=1)], ids=lambda t: t.label())
def test_batch_variants_equal_the_default_launch(tuning):
    """The batch launch's measurement variants (GAMUT_TMFE_*): the default launch's energies and
    structures exactly, on the mixed set (every class up to 200 nt) and on 20,000 windows of 50 nt."""
    rng = np.random.default_rng(4)
    windows = ["".join(rng.choice(list("ACGU"), size=50)) for _ in range(20_000)]
    default, variant = CupyRunner(0, BatchTuning()), CupyRunner(0, tuning)
    for sequences in (mixed_set(47), windows):
        for options in (TurnerOptions(), TurnerOptions(no_lp=True)):
            expected = mfe_batch(sequences, options, runner=default)
            energies, structures = mfe_batch(sequences, options, runner=variant)
            np.testing.assert_array_equal(energies, expected[0])
            assert structures == expected[1]
            if sequences is windows and not options.no_lp:
                picks = list(range(0, 20_000, 199))
                check_folds([windows[x] for x in picks], options, energies[picks], [structures[x] for x in picks])
