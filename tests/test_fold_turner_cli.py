"""``gamut fold --model turner`` on the command line: RNAfold's text (checked against RNA's own
functions, number by number), the row formats, --pairs, --dot-plot, and bad input."""
from __future__ import annotations

import json

import numpy as np
import pytest

from gamut.cli import main
from gamut.folding.turner import cpu

from turner_helpers import reference_mfe, reference_pf, rnafold_text

RECORDS = [("hp1 a description", "GGGAAAUCCCAGCUAGCUAGGGAUUUCCCAUGCAUCG"), ("mixed", "acgtGCAUNNgcaugcaugcauuuGCAUGC"),
           ("short", "ACG")]


@pytest.fixture
def fasta(tmp_path):
    path = tmp_path / "in.fa"
    path.write_text("".join(f">{header}\n{sequence}\n" for header, sequence in RECORDS))
    return path


@pytest.mark.parametrize("options, flags", [({}, []), ({"temperature": 20.5}, ["-T", "20.5"]),
                                            ({"dangles": 0}, ["-d", "0"]), ({"no_lp": True}, ["--noLP"]),
                                            ({"max_bp_span": 12}, ["--max-bp-span", "12"])])
@pytest.mark.parametrize("partition", [False, True])
def test_rnafold_text(fasta, capsys, options, flags, partition):
    assert main(["fold", str(fasta), "--model", "turner", "--device", "cpu", *flags] + (["-p"] if partition else [])) == 0
    expected = "".join(rnafold_text(sequence, header, partition, **options) for header, sequence in RECORDS)
    assert capsys.readouterr().out == expected


def test_sequence_argument_prints_no_header(capsys):
    assert main(["fold", "GGGGAAAACCCC", "--model", "turner"]) == 0
    assert capsys.readouterr().out == "GGGGAAAACCCC\n((((....)))) ( -5.40)\n"


def test_rows_in_every_format(fasta, tmp_path):
    import pandas as pd

    outputs = {fmt: tmp_path / f"out.{fmt}" for fmt in ("tsv", "jsonl", "parquet")}
    for path in outputs.values():
        assert main(["fold", str(fasta), "--model", "turner", "-p", "-o", str(path)]) == 0
    tsv = pd.read_csv(outputs["tsv"], sep="\t")
    jsonl = pd.DataFrame([json.loads(line) for line in outputs["jsonl"].read_text().splitlines()])
    parquet = pd.read_parquet(outputs["parquet"])
    for table in (tsv, jsonl, parquet):
        assert table["name"].tolist() == ["hp1", "mixed", "short"]
        assert table["length"].tolist() == [len(s) for _, s in RECORDS]
        for k, (_, sequence) in enumerate(RECORDS):
            structure, energy = reference_mfe(sequence.upper())
            assert table["structure"][k] == structure and round(table["energy"][k] * 100) == energy
            assert table["ensemble_energy"][k] == pytest.approx(reference_pf(sequence.upper())[0], rel=1e-6)
        assert {"centroid", "centroid_energy", "centroid_distance", "mfe_frequency", "diversity"} <= set(table.columns)
    assert parquet["energy_dcal"].tolist() == [reference_mfe(s.upper())[1] for _, s in RECORDS]
    plain = tmp_path / "plain.tsv"
    assert main(["fold", str(fasta), "--model", "turner", "-o", str(plain)]) == 0
    assert plain.read_text().splitlines()[0] == "name\tlength\tenergy\tstructure"


def test_pairs_table_and_dot_plots(fasta, tmp_path):
    pairs, plot = tmp_path / "pairs.tsv.gz", tmp_path / "dp.svg"
    assert main(["fold", str(fasta), "--model", "turner", "-p", "-o", str(tmp_path / "o.fold"), "--pairs", str(pairs),
                 "--pairs-cutoff", "0.01", "--dot-plot", str(plot)]) == 0
    import pandas as pd

    table = pd.read_csv(pairs, sep="\t")
    for name, (_, sequence) in zip(("hp1", "mixed"), RECORDS):
        _, p = reference_pf(sequence.upper())
        rows = table[table["name"] == name]
        i, j = np.nonzero(p >= 0.01)
        assert list(zip(rows["i"], rows["j"])) == list(zip(i + 1, j + 1))
        np.testing.assert_allclose(rows["p"], p[i, j], rtol=1e-6)
        assert (tmp_path / f"dp.{name}.svg").read_text().lstrip().startswith("<?xml")
    assert (tmp_path / "o.fold").read_text().startswith(">hp1 a description\n")


@pytest.mark.parametrize("argv, message", [
    (["--min-loop", "3"], "--min-loop: options of --model nussinov"),
    (["--plot", "x.png"], "--plot: options of --model nussinov"),
    (["--pairs", "p.tsv"], "--pairs need the pair probabilities: add -p"),
    (["--format", "dot-bracket"], "--format dot-bracket is for --model nussinov"),
    (["-d", "1"], "invalid choice"),
    (["-T", "-300"], "temperature must be"),
    (["--max-bp-span", "2"], "max_bp_span must be"),
    (["-o", "out.csv"], "no output format has the suffix .csv"),
    (["-p", "--dot-plot", "x.jpg"], "must end in .png"),
])
def test_bad_options_exit_2(fasta, tmp_path, monkeypatch, capsys, argv, message):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exit_:
        main(["fold", str(fasta), "--model", "turner", *argv])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.fa"]


@pytest.mark.parametrize("argv, message", [(["-T", "20"], "-T/--temperature: for --model turner"),
                                           (["--format", "rnafold"], "--format rnafold is for --model turner")])
def test_turner_options_refused_for_nussinov(fasta, capsys, argv, message):
    with pytest.raises(SystemExit) as exit_:
        main(["fold", str(fasta), *argv])
    assert exit_.value.code == 2 and message in capsys.readouterr().err


@pytest.mark.parametrize("records, message", [
    (">a\nACGU\n>b\nACXU\n", "in.fa: record b: letter 'X' at position 3 cannot be folded"),
    (">a\nACGU\n>b\n\n", "in.fa: record 'b' has no sequence"),
])
def test_bad_input_is_one_line_and_writes_nothing(tmp_path, capsys, records, message):
    path = tmp_path / "in.fa"
    path.write_text(records)
    out = tmp_path / "out.fold"
    assert main(["fold", str(path), "--model", "turner", "-o", str(out), "-p", "--pairs", str(tmp_path / "p.tsv")]) == 1
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and err.startswith("gamut: error: ")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.fa"]


def test_too_long_for_memory(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(cpu, "available_memory", lambda: 1 << 20)
    path = tmp_path / "in.fa"
    path.write_text(">long\n" + "ACGU" * 200 + "\n")
    assert main(["fold", str(path), "--model", "turner", "--device", "cpu", "-o", str(tmp_path / "o.tsv")]) == 1
    assert "in.fa: record long: folding 800 nt on the CPU needs about" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.fa"]
