"""The GPU partition function (gamut.folding.turner.gpu_pf) on a CUDA GPU (``gpu`` tests): ViennaRNA's
ensemble energies to 1e-6 relative and pair probabilities to 1e-6 absolute, for batches of mixed
lengths, every option, and single sequences of 1,000 and 3,000 letters (one cell a warp); the same
numbers as the host build of the kernels (tests/test_turner_pf_host.py)."""
from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("RNA")

from test_turner_pf_host import assert_vienna, random_sequence  # noqa: E402
from turner_pf_host import HostPfRunner, build_turner_pf_host  # noqa: E402

from gamut.folding.turner import gpu_pf  # noqa: E402
from gamut.folding.turner.gpu_pf import CupyPfRunner, pf_batch  # noqa: E402
from gamut.folding.turner.options import TurnerOptions  # noqa: E402
from gamut.io import read_fasta  # noqa: E402

pytestmark = pytest.mark.gpu


def mixed_batch(seed: int, count: int) -> list[str]:
    rng = random.Random(seed)
    return [random_sequence(rng, rng.choice([1, 3, 5, 20, rng.randint(1, 400)]), "ACGUNacgut") for _ in range(count)]


def test_mixed_lengths_and_hairpins_are_vienna():
    from test_turner_pf_host import HAIRPINS

    sequences = mixed_batch(5, 60) + [record.sequence for record in read_fasta(HAIRPINS)]
    assert_vienna(sequences, TurnerOptions(), pf_batch(sequences, TurnerOptions()))


@pytest.mark.parametrize("options", [TurnerOptions(dangles=0), TurnerOptions(temperature=24.0),
                                     TurnerOptions(no_lp=True), TurnerOptions(max_bp_span=60),
                                     TurnerOptions(temperature=45.0, dangles=0, no_lp=True, max_bp_span=200)], ids=str)
def test_every_option_is_vienna(options):
    sequences = mixed_batch(7, 25)
    assert_vienna(sequences, options, pf_batch(sequences, options))


@pytest.mark.parametrize("n", [1000, 3000])
def test_one_long_sequence_is_vienna(n):
    sequence = random_sequence(random.Random(n), n)
    runner = CupyPfRunner(TurnerOptions())
    result = pf_batch([sequence], TurnerOptions(), runner=runner)
    assert gpu_pf.lanes_for(n, n) == 32
    assert_vienna([sequence], TurnerOptions(), result)


def test_the_gpu_gives_the_host_builds_numbers(tmp_path):
    options = TurnerOptions(no_lp=True)
    sequences = mixed_batch(9, 20) + [random_sequence(random.Random(2), 700)]
    host = pf_batch(sequences, options, runner=HostPfRunner(build_turner_pf_host(tmp_path, options), options))
    for lanes in (None, 1, 32):
        gpu = pf_batch(sequences, options, lanes=lanes)
        for h, g in zip(host, gpu):
            assert g.ensemble_energy == pytest.approx(h.ensemble_energy, rel=1e-12, abs=1e-13)
            assert np.allclose(g.probabilities, h.probabilities, rtol=0, atol=1e-12)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.text("ACGUNacgutT", min_size=1, max_size=600), min_size=1, max_size=4),
       st.sampled_from([TurnerOptions(), TurnerOptions(dangles=0), TurnerOptions(no_lp=True),
                        TurnerOptions(temperature=25.0), TurnerOptions(max_bp_span=40)]))
def test_hypothesis_batches_up_to_600_nt(sequences, options):
    """The issue's hypothesis set: 1-600 nt, every letter the model reads, the options."""
    assert_vienna(sequences, options, pf_batch(sequences, options))
