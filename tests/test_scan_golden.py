"""Every golden miRanda 3.3a case, run through ``gamut miranda``, byte for byte after the settings block."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from gamut.cli import main

CASES = sorted(p for p in (Path(__file__).parent / "data" / "miranda").iterdir() if p.is_dir())


def results_after_settings(text: str) -> str:
    """The output after the rule line that follows 'Scaling Parameter:' (what the golden files hold)."""
    lines = text.splitlines(keepends=True)
    start = next(k for k, line in enumerate(lines) if line.startswith("Scaling Parameter:"))
    return "".join(lines[start + 2 :])


def run_case(case: Path, extra: list[str], tmp_path: Path, monkeypatch) -> str:
    monkeypatch.chdir(case)
    out = tmp_path / "out.txt"
    args = (case / "args.txt").read_text().split()
    assert main(["miranda", "query.fa", "reference.fa", *args, *extra, "-out", str(out)]) == int(
        (case / "exit_code.txt").read_text().strip() or 0
    )
    return out.read_text(encoding="latin-1")


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.name)
def test_golden_noenergy(case, tmp_path, monkeypatch):
    args = (case / "args.txt").read_text().split()
    expected_file = case / ("expected.txt" if "-noenergy" in args else "expected_noenergy.txt")
    got = results_after_settings(run_case(case, ["-noenergy"], tmp_path, monkeypatch))
    assert got == expected_file.read_text(encoding="latin-1")


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.name)
def test_golden_with_energies(case, tmp_path, monkeypatch):
    got = results_after_settings(run_case(case, [], tmp_path, monkeypatch))
    assert got == (case / "expected.txt").read_text(encoding="latin-1")


def test_settings_block_layout(tmp_path, monkeypatch):
    case = next(c for c in CASES if c.name == "real_trim")
    text = run_case(case, ["-noenergy"], tmp_path, monkeypatch)
    block = text[text.index("Current Settings:") :].splitlines()[:10]
    assert block == [
        "Current Settings:",
        "=-" * 31 + "=",
        "Query Filename: \tquery.fa",
        "Reference Filename:\treference.fa",
        "Gap Open Penalty:\t-9.000000",
        "Gap Extend Penalty:\t-4.000000",
        "Score Threshold:\t140.000000",
        "Energy Threshold:\t1.000000 kcal/mol",
        "Scaling Parameter:\t4.000000",
        "=-" * 31 + "=",
    ]
