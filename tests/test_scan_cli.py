"""Command lines of the scan: bad input, output formats, the API, atomic output."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

import gamut
from gamut.cli import main

DATA = Path(__file__).parent / "data" / "miranda"
QUERY = "ACUGGACUUGGAGUCAGAAGGC"
SITE_REF = "AAAAAAAAAAGCCUUCUGACUCCAAGUCCAGUAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"


@pytest.fixture
def files(tmp_path):
    q = tmp_path / "q.fa"
    q.write_text(f">miR-x some miRNA\n{QUERY}\n")
    r = tmp_path / "r.fa"
    r.write_text(f">utr1\n{SITE_REF}\n>utr2\nACGUACGUACGU\n")
    return q, r


def run_cli(args, capsys):
    code = main(args)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.parametrize(
    "make_bad, message",
    [
        (lambda d: d / "missing.fa", "cannot open file"),
        (lambda d: (d / "empty.fa").write_text("") and d / "empty.fa" or d / "empty.fa", "no FASTA records"),
        (lambda d: (d / "noseq.fa").write_text(">a\nACGU\n>b\n") and d / "noseq.fa", "record 'b' has no sequence"),
        (lambda d: (d / "bad.fa").write_text(">a\nAC1GU\n") and d / "bad.fa", "illegal character '1'"),
        (lambda d: (d / "nogt.fa").write_text("ACGU\n") and d / "nogt.fa", "does not start with '>'"),
    ],
    ids=["missing", "empty", "no-sequence", "illegal-letter", "no-header"],
)
@pytest.mark.parametrize("as_query", [True, False], ids=["query", "reference"])
def test_bad_input_files(files, tmp_path, capsys, make_bad, message, as_query):
    q, r = files
    bad = make_bad(tmp_path)
    out = tmp_path / "out.txt"
    args = ["miranda", str(bad), str(r)] if as_query else ["miranda", str(q), str(bad)]
    code, stdout, err = run_cli(args + ["-noenergy", "-out", str(out)], capsys)
    assert code != 0
    assert message in err and str(bad) in err
    assert len(err.strip().splitlines()) == 1
    assert not out.exists() and not list(tmp_path.glob(".out.txt*"))


@pytest.mark.parametrize(
    "extra, message",
    [
        (["-bogus"], "unrecognized command line argument: -bogus"),
        (["-sc"], "unrecognized command line argument: -sc"),
        (["-trim", "-5"], "negative value"),
        (["-go", "3"], "gap penalties may not be greater than 0"),
    ],
)
def test_bad_options(files, tmp_path, capsys, extra, message):
    q, r = files
    out = tmp_path / "out.txt"
    code, _, err = run_cli(["miranda", str(q), str(r), "-noenergy", "-out", str(out), *extra], capsys)
    assert code == 1 and message in err and len(err.strip().splitlines()) == 1
    assert not out.exists()


def test_usage_and_help_exit_zero(capsys):
    code, out, _ = run_cli(["miranda"], capsys)
    assert code == 0 and "Usage" in out
    code, out, _ = run_cli(["miranda", "-h"], capsys)
    assert code == 0 and "-strict" in out


def test_numbers_miranda_reads_whole_keep_their_meaning(files, tmp_path, capsys):
    q, r = files
    code, out, _ = run_cli(["miranda", str(q), str(r), "-noenergy", "-sc", "+120", "-en", " -20", "-scale", "3.5e0",
                            "-go", "-9.0", "-ge", "-04", "-trim", "0"], capsys)
    assert code == 0
    assert "Score Threshold:\t120.000000" in out and "Energy Threshold:\t-20.000000 kcal/mol" in out
    assert "Scaling Parameter:\t3.500000" in out and "Gap Open Penalty:\t-9.000000" in out


@pytest.mark.parametrize("option, text, message", [
    # miRanda's atoi and strtod stop at the first character they do not take: refused, not misread
    # (the command-line table, tests/test_cli_errors_table.py, runs these as processes).
    ("-sc", "abc", "-sc: expected a whole number, got 'abc', which miRanda would read as 0"),
    ("-sc", "140.9", "-sc: miRanda reads whole numbers only, and would read '140.9' as 140: give -sc 140 or "
                     "'gamut scan --score-threshold 140.9'"),
    ("-en", "-20.5", "would read '-20.5' as -20: give -en -20 or 'gamut scan --energy-threshold -20.5'"),
    ("-ge", "-4.5", "would read '-4.5' as -4: give -ge -4"),
    ("-trim", "1e3", "-trim: miRanda would read '1e3' as 1, not 1000: give -trim 1000"),
    ("-trim", "1,000", "-trim: expected a whole number, got '1,000', which miRanda would read as 1"),
    ("-sc", "nan", "-sc: expected a whole number, got 'nan', which miRanda would read as 0"),
    ("-sc", "١٤٠", "which miRanda would read as 0"),  # not ASCII digits: C's atoi reads none
    ("-scale", "4x", "-scale: expected a number, got '4x', which miRanda would read as 4"),
    ("-scale", "nan", "-scale: expected a finite number, got 'nan', which miRanda would read as nan"),
    ("-scale", "0x1p2", "-scale: expected a number, got '0x1p2', which miRanda would read as 4"),
    ("-go", "-3000000000", "-go: '-3000000000' is beyond the whole numbers miRanda reads"),
])
def test_numbers_miranda_would_misread_are_refused(option, text, message):
    from gamut.errors import UsageError
    from gamut.scanning.miranda_cli import miranda_number

    with pytest.raises(UsageError) as caught:
        miranda_number(option, text)
    assert message in str(caught.value) and "\n" not in str(caught.value)


@given(st.integers(-2**31, 2**31 - 1), st.sampled_from(["{}", " {}", "{} ", "{}.0", "{}.000", "+{}"]),
       st.sampled_from(["-sc", "-en", "-go", "-ge", "-trim"]))
def test_whole_numbers_read_as_miranda_reads_them(n, style, option):
    from gamut.scanning.miranda_cli import atoi, miranda_number

    text = style.format(n) if not (style.startswith("+") and n < 0) else str(n)
    assert miranda_number(option, text) == n == atoi(text)


@given(st.floats(-1e6, 1e6), st.sampled_from(["{!r}", "{:e}", "{:.3f}", " {}"]))
def test_scales_read_as_miranda_reads_them(x, style):
    from gamut.scanning.miranda_cli import miranda_number, strtod

    text = style.format(x)
    assert miranda_number("-scale", text) == strtod(text) == float(text)


def test_one_file_is_an_error_and_none_the_usage(files, capsys):
    """miRanda prints its usage (status 0) for one argument as for none; gamut miranda says that the
    reference is missing (status 1), and keeps the usage for no argument, as --help."""
    q, _ = files
    code, out, err = run_cli(["miranda", str(q)], capsys)
    assert code == 1 and out == "" and err.startswith("gamut: error: no reference file after ")
    assert len(err.splitlines()) == 1
    code, out, err = run_cli(["miranda"], capsys)
    assert code == 0 and "Usage" in out and err == ""


def test_scan_formats_agree_with_api(files, tmp_path, capsys):
    q, r = files
    tsv = tmp_path / "hits.tsv"
    jsonl = tmp_path / "hits.jsonl"
    assert main(["scan", str(q), str(r), "--noenergy", "-o", str(tsv)]) == 0
    assert main(["scan", str(q), str(r), "--noenergy", "-o", str(jsonl), "--format", "jsonl"]) == 0
    table = pd.read_csv(tsv, sep="\t", keep_default_na=False)
    rows = [json.loads(line) for line in jsonl.read_text().splitlines()]
    api = gamut.scan(str(q), str(r), noenergy=True)
    assert len(table) == len(rows) == len(api) == 1
    assert table.loc[0, "reference_id"] == rows[0]["reference_id"] == api.loc[0, "reference_id"] == "utr1"
    assert int(table.loc[0, "score"]) == rows[0]["score"] == int(api.loc[0, "score"])
    assert rows[0]["aln_mirna"] == api.loc[0, "aln_mirna"] == table.loc[0, "aln_mirna"]


def test_api_accepts_mappings_and_matches_text(tmp_path, capsys):
    case = DATA / "real_trim"
    api = gamut.scan(str(case / "query.fa"), str(case / "reference.fa"), noenergy=True, trim=600)
    expected = (case / "expected_noenergy.txt").read_text()
    tab_lines = [line for line in expected.splitlines() if line.startswith(">") and not line.startswith(">>")]
    assert len(api) == len(tab_lines) > 0
    first = tab_lines[0].split("\t")
    assert [">" + api.loc[0, "query_id"], api.loc[0, "reference_id"]] == first[:2]
    assert f"{api.loc[0, 'score']:.2f}" == first[2]
    small = gamut.scan({"m": QUERY}, [("t", SITE_REF)], noenergy=True, device="cpu")
    # The planted site (the query's reverse complement) starts at reference position 11.
    assert list(small["ref_start"]) == [11] and list(small["ref_end"]) == [32]


def test_restrict_file(files, tmp_path, capsys):
    q, r = files
    restrict = tmp_path / "pairs.txt"
    restrict.write_text("miR-x utr2\n")
    code, out, _ = run_cli(["miranda", str(q), str(r), "-noenergy", "-restrict", str(restrict)], capsys)
    assert code == 0
    assert "Performing Restricted Scan on:1 pairs" in out
    assert "vs utr2" in out and "vs utr1" not in out


def test_module_entry_point(files):
    q, r = files
    proc = subprocess.run([sys.executable, "-m", "gamut", "miranda", str(q), str(r), "-noenergy", "-quiet"],
                          capture_output=True, text=True)
    assert proc.returncode == 0 and "Scan Complete" in proc.stdout


def test_parquet_output(files, tmp_path):
    q, r = files
    out = tmp_path / "hits.parquet"
    assert main(["scan", str(q), str(r), "--noenergy", "--format", "parquet", "-o", str(out)]) == 0
    table = pd.read_parquet(out)
    assert list(table["reference_id"]) == ["utr1"] and int(table.loc[0, "score"]) > 140
    with pytest.raises(SystemExit) as exited:  # needs -o: a bad option, reported as argparse does
        main(["scan", str(q), str(r), "--noenergy", "--format", "parquet"])
    assert exited.value.code == 2


def test_energy_models_through_the_scan(files):
    """Hits carry the energy of their fold string under the chosen model, filtered by -en."""
    from gamut.scanning.energy.cpu import duplex_energies
    from gamut.scanning.pipeline.scan_loop import ScanInput, run_scan
    from scan_cpu_engine import CpuEngine
    from gamut.scanning.params import ScanParams
    from gamut.scanning.fasta import read_miranda_fasta

    q, r = files
    for model in ("miranda", "vienna2004"):
        hits = gamut.scan(str(q), str(r), energy_model=model, energy_threshold=100)
        params = ScanParams(energy_model=model, energy_threshold=100)
        results = list(run_scan(ScanInput(read_miranda_fasta(q), read_miranda_fasta(r), params), CpuEngine(1)))
        folds = [f for res in results for f in res.hits.strings(3)]
        assert len(hits) == len(folds) == 1
        expected = duplex_energies(folds, model=model)
        assert hits["energy"].tolist() == [round(float(e), 2) for e in expected]
        assert expected[0] < -20  # a perfect site folds strongly
    strict_cut = gamut.scan(str(q), str(r), energy_threshold=-100)
    assert strict_cut.empty


def test_first_run_notice_once_per_installation(files, tmp_path, capsys, monkeypatch):
    """The first successful command says it compiles; later ones say nothing, and a failed
    command does not count as the first run."""
    monkeypatch.setattr("gamut.cache.compiled_marker_dir", lambda: tmp_path / "cache")
    monkeypatch.setattr("gamut.cache.NOTICE_DELAY", 0)  # show it even for commands that end at once
    query, reference = files
    assert main(["miranda", str(query), str(tmp_path / "missing.fa")]) != 0
    assert "first run" in capsys.readouterr().err
    assert not list((tmp_path / "cache").glob("gamut-compiled-*"))
    assert main(["scan", str(query), str(reference), "-o", str(tmp_path / "hits.tsv")]) == 0
    assert "first run" in capsys.readouterr().err
    assert len(list((tmp_path / "cache").glob("gamut-compiled-*"))) == 1
    assert main(["miranda", str(query), str(reference), "-out", str(tmp_path / "hits.txt")]) == 0
    assert "first run" not in capsys.readouterr().err
