"""The CUDA energy engine on a GPU against the compiled CPU engine and the golden energies."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from energy_helpers import any_letters, dcal, fold_strings, golden_rows
from gamut.errors import InputError
from gamut.scanning.energy import cpu as E
from gamut.scanning.energy import gpu as G

pytestmark = pytest.mark.gpu


def _cpu(seqs: list[str]) -> np.ndarray:
    return E.duplex_energies_dcal(seqs, engine="compiled", device="cpu")


def test_golden_energies_all_rows():
    rows = golden_rows()
    seqs = list(rows.sequence)
    timing = G.Timing()
    got = G.gpu_energies(seqs, timing=timing)
    want = dcal(rows.energy)
    bad = np.nonzero(got != want)[0]
    assert bad.size == 0, [(seqs[k], want[k], got[k]) for k in bad[:5]]
    assert np.array_equal(E.duplex_energies_dcal(seqs, device="cuda"), want)
    assert np.array_equal(E.duplex_energies(seqs[:500], device="cuda"), rows.energy[:500].to_numpy())
    assert len(timing.launches) >= 2  # 45-62 nt and the longer random rows


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(fold_strings(), min_size=1, max_size=200))
def test_gpu_matches_cpu_mirna_shaped(seqs):
    assert np.array_equal(G.gpu_energies(seqs), _cpu(seqs))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(any_letters, min_size=1, max_size=100))
def test_gpu_matches_cpu_any_letters(seqs):
    assert np.array_equal(G.gpu_energies(seqs), _cpu(seqs))


def test_every_bucket_and_both_kernels():
    """Lengths in every launch bucket (shared-memory and global-scratch kernels), shuffled."""
    rng = np.random.default_rng(7)
    lengths = list(rng.integers(0, G.MAX_LENGTH + 1, 60)) + [0, 4, 5, 62, 63, 94, 126, 190, 254, G.MAX_LENGTH]
    seqs = ["".join(rng.choice(list("ACGUacguXKN"), size=int(n))) for n in lengths]
    timing = G.Timing()
    got = G.gpu_energies(seqs, timing=timing)
    assert np.array_equal(got, _cpu(seqs))
    assert {launch["kernel"] for launch in timing.launches} == {"energy_fold_shared16", "energy_fold_global"}


def test_int16_overflow_refolds_with_int32_cells():
    long_stem = "G" * 120 + "GAAA" + "C" * 120  # 244 nt: int16 cells fit shared memory
    seqs = ["GGGGAAAACCCC", long_stem, "ACGUACGUAGCUAGCUAGCAUGCAUCGAUC" * 4]
    timing = G.Timing()
    got = G.gpu_energies(seqs, timing=timing)
    want = _cpu(seqs)
    assert want[1] < -32767 and np.array_equal(got, want)
    # int16 launches for every string, then one int32 launch (global scratch at this length) for
    # the overflowed one
    assert {launch["kernel"] for launch in timing.launches[:-1]} == {"energy_fold_shared16"}
    assert timing.launches[-1]["kernel"] == "energy_fold_global" and timing.launches[-1]["strings"] == 1


def test_large_batch_many_blocks():
    rows = golden_rows()
    seqs = list(rows.sequence[:15000]) * 20  # 300,000 strings: grid-stride loops over the batch
    got = G.gpu_energies(seqs)
    assert np.array_equal(got, np.tile(dcal(rows.energy[:15000]), 20))


def test_empty_and_too_long():
    assert G.gpu_energies([]).shape == (0,)
    assert E.duplex_energies([], device="cuda").shape == (0,)
    with pytest.raises(InputError, match="at most"):
        G.gpu_energies(["A" * (G.MAX_LENGTH + 1)])


def test_strings_too_long_for_the_gpu_fold_on_the_cpu_among_the_rest():
    """Long queries make duplexes longer than the GPU engine takes: the device path folds those on
    the CPU and the rest on the GPU, every energy equal to the CPU engine's."""
    rng = np.random.default_rng(27)
    seqs = ["".join(rng.choice(list("ACGU"), n)) + "XXXXXXX" + "".join(rng.choice(list("ACGU"), n))
            for n in (20, 300, 25, 260, 30)]
    assert max(map(len, seqs)) > G.MAX_LENGTH >= min(map(len, seqs))
    letters = np.frombuffer("".join(seqs).encode(), np.uint8)
    offsets = np.concatenate(([0], np.cumsum([len(s) for s in seqs]))).astype(np.int64)
    on_gpu = E.packed_energies_dcal(letters, offsets, device="cuda")
    on_cpu = E.packed_energies_dcal(letters, offsets, device="cpu")
    assert np.array_equal(on_gpu, on_cpu)
