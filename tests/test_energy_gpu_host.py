"""The CUDA energy kernel's code (energy.cu) built for the CPU with g++ (one lane per warp) against
the Numba engine: golden fold strings, hypothesis strings, long strings, and the dispatch/API."""
from __future__ import annotations

import shutil

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from energy_helpers import any_letters, dcal, fold_strings, golden_rows
from energy_host import HostEngine, build_energy_host
from gamut.cuda import gpu_available
from gamut.errors import DeviceError, InputError, UsageError
from gamut.scanning.energy import cpu as E
from gamut.scanning.energy import gpu as G

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ not installed")


@pytest.fixture(scope="module")
def host(tmp_path_factory) -> HostEngine:
    return HostEngine(build_energy_host(tmp_path_factory.mktemp("energy_host")))


def _cpu(seqs: list[str]) -> np.ndarray:
    return E.duplex_energies_dcal(seqs, engine="compiled", device="cpu", threads=2)


def test_work_area_layout_is_one_definition(host):
    for m in (6, 7, 64, 65, 402):
        for cell_bytes in (2, 4):
            assert host.work_bytes(m, cell_bytes) == G.work_bytes(m, cell_bytes)
            assert G.work_bytes(m, cell_bytes) % 16 == 0


@pytest.mark.parametrize("cell_bytes", [2, 4])
def test_golden_energies_all_rows(host, cell_bytes):
    rows = golden_rows()
    raw, offsets = G._checked(list(rows.sequence))
    got = host.fold(raw, offsets, cell_bytes)  # no refolding: every golden row fits int16 cells
    want = dcal(rows.energy)
    bad = np.nonzero(got != want)[0]
    assert bad.size == 0, [(rows.sequence[k], want[k], got[k]) for k in bad[:5]]


def test_int16_overflow_is_flagged_and_refolded(host):
    """A long perfect G:C stem is below -327.67 kcal/mol: int16 cells flag it, int32 folds it."""
    long_stem = "G" * 120 + "GAAA" + "C" * 120  # 244 nt: int16 cells fit shared memory
    seqs = ["ACGUACGUAGCUAGCUAGCAUGCAUCGAUC", long_stem, "GGGGAAAACCCC", long_stem.lower()]
    raw, offsets = G._checked(seqs)
    flagged = host.fold(raw, offsets, 2)
    assert list(flagged == G.ENERGY_OVERFLOW) == [False, True, False, True]
    want = _cpu(seqs)
    assert want[1] < -32767
    assert np.array_equal(host.energies(seqs), want)
    assert np.array_equal(host.fold(raw, offsets, 4), want)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(fold_strings(), min_size=1, max_size=25))
def test_host_build_matches_numba_mirna_shaped(host, seqs):
    assert np.array_equal(host.energies(seqs), _cpu(seqs))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(any_letters, min_size=1, max_size=20))
def test_host_build_matches_numba_any_letters(host, seqs):
    assert np.array_equal(host.energies(seqs), _cpu(seqs))


def test_long_strings_and_reused_work_area(host):
    """Mixed lengths up to the maximum in one call (the work area is reused uncleared)."""
    rng = np.random.default_rng(13)
    lengths = [G.MAX_LENGTH, 5, 250, 0, 4, 62, 120, 33]
    seqs = ["".join(rng.choice(list("ACGUacguXKN"), size=n)) for n in lengths]
    seqs[2] = "GGGCGC" + "A" * 238 + "GCGCCC"  # a hairpin above 30 nt (log extrapolation)
    assert np.array_equal(host.energies(seqs), _cpu(seqs))


def test_too_long_is_an_error(host):
    with pytest.raises(InputError, match="at most"):
        host.energies(["ACGU" * 100 + "A"])


def test_launch_plan():
    optin = 227 * 1024
    name, warps, shared = G.launch_plan(64, optin)
    assert (name, warps) == ("energy_fold_shared16", 15) and shared <= optin
    name, warps, shared = G.launch_plan(56, optin)
    assert (name, warps) == ("energy_fold_shared16", G.MAX_WARPS) and shared <= optin
    name, warps, shared = G.launch_plan(64, optin, 4)
    assert (name, warps) == ("energy_fold_shared", 8) and shared <= optin
    assert G.launch_plan(200, optin)[0] == "energy_fold_shared16"
    assert G.launch_plan(G.MAX_LENGTH + 2, optin) == G.launch_plan(G.MAX_LENGTH + 2, optin, 4)
    assert G.launch_plan(G.MAX_LENGTH + 2, optin)[0] == "energy_fold_global"
    assert G.BUCKET_M[-1] == G.MAX_LENGTH + 2 and list(G.BUCKET_M) == sorted(set(G.BUCKET_M))


def test_device_keyword():
    seqs = ["GGGGAAAACCCC", "ACGUACGUAGCUAGCUAGCAUGCAUCGAUCGACGUAGC"]
    assert np.array_equal(E.duplex_energies(seqs, device="cpu"), E.duplex_energies(seqs))
    # vienna2004 stays on the CPU whatever the device
    assert np.array_equal(E.duplex_energies(seqs, model="vienna2004", device="cuda", threads=1),
                          E.duplex_energies(seqs, model="vienna2004", threads=1))
    with pytest.raises(UsageError):
        E.duplex_energies(seqs, device="gpu")
    if not gpu_available():
        with pytest.raises(DeviceError):
            E.duplex_energies(seqs, device="cuda")
