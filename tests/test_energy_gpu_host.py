"""The CUDA energy kernel's code (energy.cu) built for the CPU with g++ (one lane per warp) against
the Numba engine: golden fold strings, hypothesis strings, long strings, and the dispatch/API."""
from __future__ import annotations

import shutil

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from energy_helpers import any_letters, dcal, fold_strings, golden_rows
from gamut.cuda import gpu_available
from gamut.errors import DeviceError, InputError, UsageError
from gamut.scan import energy as E
from gamut.scan import energy_gpu as G

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ not installed")


@pytest.fixture(scope="module")
def host(tmp_path_factory) -> G.HostEngine:
    return G.HostEngine(G.build_host_library(str(tmp_path_factory.mktemp("energy_host"))))


def _cpu(seqs: list[str]) -> np.ndarray:
    return E.duplex_energies_dcal(seqs, engine="compiled", device="cpu", threads=2)


def test_work_area_layout_is_one_definition(host):
    for m in (6, 7, 64, 65, 402):
        assert host.work_ints(m) == G.work_ints(m)


def test_golden_energies_all_rows(host):
    rows = golden_rows()
    got = host.energies(list(rows.sequence))
    want = dcal(rows.energy)
    bad = np.nonzero(got != want)[0]
    assert bad.size == 0, [(rows.sequence[k], want[k], got[k]) for k in bad[:5]]


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
    assert (name, warps) == ("energy_fold_shared", 8) and shared <= optin
    name, warps, shared = G.launch_plan(G.MAX_LENGTH + 2, optin)
    assert name == "energy_fold_global"
    assert G.BUCKET_M[-1] == G.MAX_LENGTH + 2


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
