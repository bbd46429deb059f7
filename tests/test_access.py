"""Accessibility (gamut.access): ViennaRNA's local partition function as RNAplfold reports it.

The conventions (which letters a stretch covers, the window and span rules, NaN below u) are checked
against a brute-force sum over every secondary structure of short sequences, with Boltzmann
weights from ViennaRNA's energy evaluation under the same model."""
from __future__ import annotations

import math
import os
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

RNA = pytest.importorskip("RNA")

from gamut.access.api import Accessibility, accessibility  # noqa: E402
from gamut.access.cpu import MIN_PAIRED_WINDOW  # noqa: E402
from gamut.access.model import KT_37, AccessParams, rna_letters  # noqa: E402
from gamut.errors import DeviceError, UsageError  # noqa: E402


@contextmanager
def unsmoothed():
    """ViennaRNA without its smoothing of Boltzmann factors (``pf_smooth``, on by default, as in
    RNAplfold): the brute-force weights are plain exp(-E/RT), so both sides go without it here."""
    before = getattr(RNA.cvar, "pf_smooth", 1)
    RNA.cvar.pf_smooth = 0
    try:
        yield
    finally:
        RNA.cvar.pf_smooth = before


def brute_force(sequence: str, span: int, max_unpaired: int) -> np.ndarray:
    """P(letters end-u+1..end unpaired) by enumerating every structure with pairs spanning at most
    ``span`` (one window: the whole sequence), as an (n, max_unpaired) array with NaN below u."""
    md = RNA.md()
    md.uniq_ML = 1
    md.max_bp_span = span
    fc = RNA.fold_compound(sequence, md)
    kt = (md.temperature + 273.15) * 1.98717 / 1000
    n = len(sequence)
    weights, unpaired = 0.0, np.zeros((n, max_unpaired))
    for structure in {s.structure for s in fc.subopt(100_000)}:  # every structure (100 kcal/mol above the MFE)
        w = math.exp(-fc.eval_structure(structure) / kt)
        weights += w
        free = np.array([c == "." for c in structure])
        for end in range(n):
            for u in range(1, min(max_unpaired, end + 1) + 1):
                if free[end - u + 1:end + 1].all():
                    unpaired[end, u - 1] += w
    out = unpaired / weights
    out[np.arange(n)[:, None] < np.arange(max_unpaired)[None, :]] = np.nan
    return out


@settings(max_examples=25, deadline=None)
@given(st.text("ACGU", min_size=1, max_size=12), st.data())
def test_one_window_equals_the_sum_over_all_structures(sequence, data):
    n = len(sequence)
    span = data.draw(st.integers(1, n + 3))
    window = data.draw(st.integers(n, n + 20))  # at least the sequence: one window (RNAplfold's rule)
    u = data.draw(st.integers(1, min(window, 6)))
    with unsmoothed():
        got = accessibility(sequence, window=window, span=span, max_unpaired=u, device="cpu", threads=1).unpaired
    want = brute_force(sequence, min(span, n), u)
    assert got.shape == (n, u)
    assert np.array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_allclose(got[~np.isnan(got)], want[~np.isnan(want)], rtol=1e-6, atol=1e-9)  # energies come back as float32


def test_smoothing_is_viennarnas_default():
    """The engine folds with ViennaRNA's defaults, Boltzmann-factor smoothing included (RNAplfold's)."""
    with_smoothing = accessibility("GGAAAAC", window=7, span=6, max_unpaired=1).unpaired[1, 0]
    with unsmoothed():
        without = accessibility("GGAAAAC", window=7, span=6, max_unpaired=1).unpaired[1, 0]
    assert with_smoothing == pytest.approx(0.99930704, abs=1e-8) and without == pytest.approx(0.99932586, abs=1e-8)


@settings(max_examples=20, deadline=None)
@given(st.text("ACGUTNacgutn", min_size=0, max_size=300), st.sampled_from([(20, 10, 5), (80, 40, 20), (31, 31, 7)]))
@example("AAAAAAAAAAAATGAAAAAAC", (20, 10, 5))  # two windows: ViennaRNA's P(u=4) is 2.4e-9 above its P(u=3)
def test_windows_letters_and_shapes(sequence, wlu):
    window, span, u = wlu
    r = accessibility(sequence, window=window, span=span, max_unpaired=u)
    n = len(sequence)
    assert isinstance(r, Accessibility) and r.unpaired.shape == (n, u) and len(r) == n
    below = np.arange(n)[:, None] < np.arange(u)[None, :]
    assert np.isnan(r.unpaired[below]).all() and not np.isnan(r.unpaired[~below]).any()
    p = r.unpaired[~below]
    assert ((p >= -1e-12) & (p <= 1 + 1e-9)).all()
    # A longer stretch ending at the same letter is unpaired no more often within one window. Over
    # several windows RNAplfold averages each stretch over the windows that hold it, fewer for a longer
    # one, so ViennaRNA's own numbers may rise with u (by 2.4e-9 in the example above): there the
    # check is equality with ViennaRNA (below), not this property.
    if window >= n:
        assert (np.nan_to_num(np.diff(r.unpaired, axis=1), nan=-1) <= 1e-12).all()
    # case, T and unknown letters are read as RNAplfold reads them
    same = accessibility(rna_letters(sequence), window=window, span=span, max_unpaired=u)
    assert np.array_equal(r.unpaired, same.unpaired, equal_nan=True)
    w = min(window, n)
    if w >= MIN_PAIRED_WINDOW:  # against ViennaRNA called directly (1-based rows and columns)
        raw = np.array(RNA.pfl_fold_up(rna_letters(sequence), min(u, w), w, min(span, w)))
        np.testing.assert_array_equal(r.unpaired[:, :min(u, w)][~below[:, :min(u, w)]],
                                      raw[1:, 1:][~below[:, :min(u, w)]])


def test_opening_energy_and_sites():
    r = accessibility("GGGAAAUCCCGCUUAGCGAUCGAUCGAUGCUAGCUAGCUAGG", max_unpaired=8)
    np.testing.assert_allclose(r.opening_energy, -KT_37 * np.log(r.unpaired))
    assert KT_37 == pytest.approx(0.61632, abs=1e-5)
    assert r.site_opening_energy(3, 10) == r.opening_energy[9, 7]
    with pytest.raises(UsageError, match="positions 3..11"):
        r.site_opening_energy(3, 11)
    assert r.site_opening_energy(5, 8, upstream=2, downstream=2) == r.opening_energy[9, 7]
    n = len(r)
    assert r.site_opening_energy(1, 3, upstream=3, downstream=1) == r.opening_energy[3, 3]  # clipped at the start
    assert r.site_opening_energy(n - 1, n, upstream=1, downstream=15) == r.opening_energy[n - 1, 2]  # and the end
    with pytest.raises(UsageError, match="flanks must be >= 0"):
        r.site_opening_energy(3, 4, upstream=-1)
    table = r.table()
    assert list(table.columns) == ["name", "end", "u", "unpaired", "opening_energy"]
    assert len(table) == int((~np.isnan(r.unpaired)).sum())
    row = table[(table.end == 10) & (table.u == 8)].iloc[0]
    assert row.unpaired == r.unpaired[9, 7]


def test_lists_in_order_on_several_processes():
    seqs = [("long", "GGGAAAUCCC" * 12), ("short", "ACGUACGU"), ("empty", ""), ("n", "NNNN")]
    many = accessibility(seqs, max_unpaired=4, threads=2)
    assert [r.name for r in many] == ["long", "short", "empty", "n"]
    for r, (_, s) in zip(many, seqs):
        one = accessibility(s, max_unpaired=4, threads=1)
        assert np.array_equal(r.unpaired, one.unpaired, equal_nan=True)
    assert np.allclose(many[3].unpaired[3], 1.0)  # N pairs with nothing
    assert [r.name for r in accessibility(["ACGU", "GGCC"])] == ["sequence_1", "sequence_2"]


@pytest.mark.parametrize("kwargs, message", [
    ({"window": 0}, "window must be a whole number >= 1"),
    ({"span": 2.5}, "span must be a whole number"),
    ({"max_unpaired": 30, "window": 20}, "must not exceed the window"),
    ({"device": "tpu"}, "unknown device 'tpu'"),
])
def test_bad_parameters_are_clear_errors(kwargs, message):
    with pytest.raises(UsageError, match=message):
        accessibility("ACGU", **kwargs)


def test_windows_too_small_for_a_pair_are_open_without_viennarna():
    """ViennaRNA 2.8 aborts the process on 3 or 4 letters; no pair fits there: every stretch is open."""
    for sequence in ("G", "GC", "GCA", "GCAU", "GGGGCCCC"):
        r = accessibility(sequence, window=4 if len(sequence) > 4 else 80, span=4, max_unpaired=2)
        defined = ~np.isnan(r.unpaired)
        assert (r.unpaired[defined] == 1.0).all() and defined.sum() == 2 * len(sequence) - 1


def test_cuda_without_a_gpu_is_said():
    from gamut.cuda.device import gpu_available

    if gpu_available():
        pytest.skip("a GPU is usable here")
    with pytest.raises(DeviceError, match="no CUDA GPU is usable"):
        accessibility("ACGU", device="cuda")
    assert AccessParams().for_length(10) == (10, 10) and AccessParams().for_length(500) == (80, 40)


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gamut", "access", *args], capture_output=True, text=True)


def test_cli_formats_agree_with_the_api(tmp_path):
    fasta = tmp_path / "refs.fa"
    fasta.write_text(">a\nGGGAAAUCCCGCUUAGCGAUCGAUCGAUGCUAGC\n>b\nacgtNNacgu\n")
    api = accessibility([("a", "GGGAAAUCCCGCUUAGCGAUCGAUCGAUGCUAGC"), ("b", "acgtNNacgu")], max_unpaired=3)
    assert run_cli(str(fasta), "-u", "3", "-o", str(tmp_path / "out.tsv")).returncode == 0
    lines = (tmp_path / "out.tsv").read_text().splitlines()
    assert lines[0] == "name\tend\tu\tunpaired\topening_energy"
    assert len(lines) - 1 == sum(int((~np.isnan(r.unpaired)).sum()) for r in api)
    name, end, u, p, g = lines[3].split("\t")
    assert (name, end, u) == ("a", "2", "2") and float(p) == pytest.approx(api[0].unpaired[1, 1], rel=1e-6)
    assert run_cli(str(fasta), "-u", "3", "-o", str(tmp_path / "out.parquet")).returncode == 0
    import pandas as pd

    table = pd.read_parquet(tmp_path / "out.parquet")
    expected = pd.concat([r.table() for r in api], ignore_index=True)
    pd.testing.assert_frame_equal(table, expected)
    lunp = run_cli(str(fasta), "-u", "3", "--format", "lunp")
    assert lunp.returncode == 0
    block = lunp.stdout.splitlines()
    assert block[:3] == [">a", "#unpaired probabilities", " #i$\tl=1\t2\t3\t"]
    assert block[3].split("\t")[:3] == ["1", f"{api[0].unpaired[0, 0]:.7g}", "NA"]


def test_cli_errors(tmp_path):
    bad = tmp_path / "bad.fa"
    bad.write_text("not fasta\n")
    result = run_cli(str(bad), "-o", str(tmp_path / "x.tsv"))
    assert result.returncode == 1 and "bad.fa" in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "x.tsv").exists()
    good = tmp_path / "good.fa"
    good.write_text(">a\nACGU\n")
    result = run_cli(str(good), "-o", str(good))
    assert result.returncode != 0 and good.read_text() == ">a\nACGU\n"
    for args, message in ((["-u", "0"], "max_unpaired must be"), (["--format", "parquet"], "needs an output file")):
        result = run_cli(str(good), *args)
        assert result.returncode == 2 and message in result.stderr
    from gamut.cuda.device import gpu_available

    if not gpu_available():
        result = run_cli(str(good), "--device", "cuda", "-o", str(tmp_path / "y.tsv"))
        assert result.returncode != 0 and "no CUDA GPU is usable" in result.stderr
        assert not (tmp_path / "y.tsv").exists()


def test_worked_example_runs(tmp_path):
    """examples/accessibility_example.py, the docs' worked example: bantam's sites on the hid 3'UTR."""
    example = Path(__file__).resolve().parents[1] / "examples" / "accessibility_example.py"
    done = subprocess.run([sys.executable, str(example), str(tmp_path / "plot.png")], capture_output=True, text=True,
                          env={**os.environ, "MPLBACKEND": "Agg"})
    assert done.returncode == 0, done.stderr[-2000:]
    assert "dme-bantam-3p 3337-3359: score 189, duplex -28.21, dG_open 5.88, ddG -22.33" in done.stdout
    assert (tmp_path / "plot.png").stat().st_size > 10_000


@settings(max_examples=6, deadline=None)
@given(st.integers(1, 5000), st.sampled_from([(80, 40, 20), (150, 100, 30), (40, 40, 10)]), st.integers(0, 2**32 - 1))
def test_long_sequences_with_odd_letters_match_viennarna(n, wlu, seed):
    """Up to 5,000 letters, lower case, T and N among them: ViennaRNA's values, row for row."""
    window, span, u = wlu
    rng = np.random.default_rng(seed)
    sequence = "".join(rng.choice(list("ACGUTNacgun"), n, p=[0.2, 0.2, 0.2, 0.2, 0.05, 0.03] + [0.024] * 5))
    got = accessibility(sequence, window=window, span=span, max_unpaired=u).unpaired
    w = min(window, n)
    if w < MIN_PAIRED_WINDOW:
        assert np.all(got[~np.isnan(got)] == 1.0)
        return
    raw = np.array(RNA.pfl_fold_up(rna_letters(sequence), min(u, w), w, min(span, w)))[1:, 1:]
    defined = ~np.isnan(got[:, :min(u, w)])
    np.testing.assert_array_equal(got[:, :min(u, w)][defined], raw[defined])


def test_golden_references_match_viennarna():
    """The references of every golden miRanda case (tests/data/miranda), as a list on two processes."""
    from gamut.io import read_fasta

    cases = sorted(c for c in (Path(__file__).parent / "data" / "miranda").iterdir() if c.is_dir())
    records = [(f"{case.name}/{r.name}", r.sequence) for case in cases  # up to four short ones per case
               for r in [r for r in read_fasta(case / "reference.fa") if len(r.sequence) <= 2000][:4]]
    assert len(records) >= 10
    for result, (_, sequence) in zip(accessibility(records, threads=2), records):
        n = len(sequence)
        w = min(80, n)
        if w < MIN_PAIRED_WINDOW:
            continue
        u = min(20, w)  # ViennaRNA gives wrong values (0) when asked for stretches longer than the window
        raw = np.array(RNA.pfl_fold_up(rna_letters(sequence), u, w, min(40, w)))[1:, 1:]
        defined = ~np.isnan(result.unpaired[:, :u])
        np.testing.assert_array_equal(result.unpaired[:, :u][defined], raw[defined])
        assert np.isnan(result.unpaired[:, u:]).all()


def test_a_viennarna_crash_is_an_error_not_the_end_of_gamut():
    """ViennaRNA 2.8 crashes (segmentation fault) on GC-rich windows of 400+ letters: large windows
    fold in worker processes, and a crashed worker is a one-line error."""
    import random

    from gamut.errors import GamutError

    rng = random.Random(1)
    gc_rich = "".join(rng.choice("GC") for _ in range(1200))
    with pytest.raises(GamutError, match="ViennaRNA crashed folding with a window of 1000"):
        accessibility(gc_rich, window=1000, span=150, max_unpaired=5, device="cpu", threads=1)
