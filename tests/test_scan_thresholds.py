"""Real-valued scan thresholds: a score threshold T keeps the hits of the whole threshold ceil(T)
(scores are whole numbers); an energy threshold E keeps exactly the hits whose energy, a whole
number of 0.01 kcal/mol, is below E read as the decimal it is written as."""
from __future__ import annotations

import math
from decimal import Decimal
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gamut
from gamut.cli import main
from gamut.errors import UsageError
from gamut.scanning.params import CUTOFF_LIMIT, ScanParams

EXAMPLES = Path(__file__).parent.parent / "examples"
QUERIES, TARGETS = str(EXAMPLES / "mirnas.fa"), str(EXAMPLES / "targets.fa")
SCAN = dict(device="cpu", threads=1)
#: Thresholds with up to three decimals, as people write them (and their shortest repr).
decimals = st.decimals(min_value=-40, max_value=5, places=3).map(float)


def scan(**params) -> pd.DataFrame:
    return gamut.scan(QUERIES, TARGETS, **SCAN, **params).reset_index(drop=True)


def rows(hits: pd.DataFrame) -> list[dict]:
    return hits.to_dict("records")


@pytest.fixture(scope="module")
def permissive() -> pd.DataFrame:
    """Every hit of score 120 and above with its energy (no hit of these inputs has energy >= 100)."""
    hits = scan(score_threshold=120, energy_threshold=100)
    assert len(hits) > 100 and hits["energy"].max() < 100
    return hits


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.one_of(st.floats(95, 200), st.integers(95, 200).map(lambda n: n + 0.5), st.integers(95, 200)))
def test_real_score_threshold_gives_the_hits_of_its_ceiling(threshold):
    assert ScanParams(score_threshold=threshold).score_cutoff == math.ceil(threshold)
    hits = scan(score_threshold=threshold, noenergy=True)
    assert rows(hits) == rows(scan(score_threshold=math.ceil(threshold), noenergy=True))
    assert (hits["score"] >= threshold).all()
    if threshold != math.floor(threshold):  # not the floor: a hit scoring floor(T) is below T
        below = scan(score_threshold=math.floor(threshold), noenergy=True)
        assert len(hits) == (below["score"] > threshold).sum()


def _near_energies(energies: np.ndarray):
    """Thresholds on, and a hair either side of, energies that occur (where a float comparison errs)."""
    offsets = st.sampled_from([0.0, 0.01, -0.01, 0.005, -0.005, 1e-7, -1e-7, 1e-9, -1e-9])
    return st.tuples(st.sampled_from(sorted(set(energies.tolist()))), offsets).map(lambda p: float(
        Decimal(f"{p[0]:.2f}") + Decimal(repr(p[1]))))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_real_energy_threshold_reports_the_energies_below_it(permissive, data):
    threshold = data.draw(st.one_of(decimals, _near_energies(permissive["energy"].to_numpy())))
    hits = scan(score_threshold=120, energy_threshold=threshold)
    below = [Decimal(f"{e:.2f}") < Decimal(repr(threshold)) for e in permissive["energy"]]
    assert rows(hits) == rows(permissive[below])


@given(st.integers(-10**6, 10**5), st.decimals(min_value=-10**4, max_value=10**3, places=4))
def test_energy_cutoff_is_exact(dcal, threshold):
    """An energy of ``dcal`` 0.01 kcal/mol, held as the float32 the scan holds, is below the cutoff
    exactly when dcal/100 < the threshold as written."""
    params = ScanParams(energy_threshold=float(threshold))
    held = np.float32(dcal / 100.0)
    assert int(np.rint(np.float64(held) * 100.0)) == dcal  # the float32 gives the count back
    assert (dcal < params.energy_cutoff) == (Fraction(dcal, 100) < Fraction(threshold))


@pytest.mark.parametrize("threshold, cutoff", [
    (1, 100), (-20, -2000), (-20.5, -2050), (-20.49, -2049), (-20.495, -2049), (-20.4999999, -2049),
    (-1e6, -10**8), (1e300, CUTOFF_LIMIT), (-1e300, -CUTOFF_LIMIT),
])
def test_energy_cutoffs(threshold, cutoff):
    assert ScanParams(energy_threshold=threshold).energy_cutoff == cutoff


def test_thresholds_are_checked_and_held_as_whole_numbers_when_whole():
    params = ScanParams(score_threshold=140.0, energy_threshold=np.float32(-20.0))
    assert (params.score_threshold, params.energy_threshold) == (140, -20)
    assert type(params.score_threshold) is int and type(params.energy_threshold) is int  # run directories: 140
    assert ScanParams(score_threshold=140.5).score_threshold == 140.5
    assert ScanParams(score_threshold=-0.5).score_cutoff == 0 and ScanParams(score_threshold=1e300).score_cutoff \
        == CUTOFF_LIMIT
    for bad in ("abc", float("nan"), float("inf"), True, None):
        with pytest.raises(UsageError, match="score_threshold: expected a"):
            ScanParams(score_threshold=bad)
    with pytest.raises(UsageError, match="energy_threshold: expected a finite number, got 'nan'"):
        ScanParams(energy_threshold=float("nan"))


def test_other_parameters_are_numbers_of_their_kind():
    """From the Python API too: a gap penalty of -9.5 was truncated into the int32 tables."""
    assert ScanParams(gap_open=-9.0, trim=np.int64(5), scale=2).gap_open == -9
    for bad, message in (({"gap_open": -9.5}, "gap_open: expected a whole number, got '-9.5'"),
                         ({"trim": "1e400"}, "trim: expected a whole number from"),
                         ({"scale": "abc"}, "scale: expected a number, got 'abc'"),
                         ({"scale": float("inf")}, "scale: expected a finite number, got 'inf'")):
        with pytest.raises(UsageError, match=message):
            ScanParams(**bad)


def test_miranda_text_prints_the_thresholds_as_given(tmp_path, capsys):
    out = tmp_path / "hits.txt"
    assert main(["scan", QUERIES, TARGETS, "--device", "cpu", "-o", str(out), "--format", "miranda",
                 "--score-threshold", "140.5", "--energy-threshold=-2.025e1"]) == 0
    text = out.read_text()
    assert "Score Threshold:\t140.500000\n" in text and "Energy Threshold:\t-20.250000 kcal/mol\n" in text
    hits = [line.split("\t") for line in text.splitlines() if line.startswith(">") and not line.startswith(">>")]
    assert hits and min(float(h[2]) for h in hits) >= 141 and max(float(h[3]) for h in hits) < -20.25


def test_negative_thresholds_with_exponents_on_the_command_line(tmp_path, capsys):
    """`--score-threshold -1e9` was 'expected one argument'; now a value (every cell reaches it)."""
    small = tmp_path / "q.fa"
    small.write_text(">q\nUGAGGUAGUAGGUUGUAUAGUU\n")
    ref = tmp_path / "r.fa"
    ref.write_text(">r\nAAAACUAUACAACCUACUACCUCAAAA\n")
    assert main(["scan", str(small), str(ref), "--device", "cpu", "--noenergy", "--score-threshold", "-1e9",
                 "-o", str(tmp_path / "a.tsv")]) == 0
    assert main(["scan", str(small), str(ref), "--device", "cpu", "--noenergy", "--score-threshold=0",
                 "-o", str(tmp_path / "b.tsv")]) == 0
    a, b = (tmp_path / "a.tsv").read_text(), (tmp_path / "b.tsv").read_text()
    assert a == b and a.count("\n") > 2  # a threshold <= 0 takes every cell, as 0 does
