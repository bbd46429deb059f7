"""``gamut fold`` on the command line: inputs, formats, plots and errors."""
from __future__ import annotations

import json

import pytest

import gamut
from gamut.cli import main
from gamut.errors import InputError

from fold_helpers import check_structure


def test_sequence_argument(capsys):
    assert main(["fold", "GGGGAAACCCC", "--min-loop", "3", "--device", "cpu"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(">sequence length=11 pairs=4 min_loop=3 engine=blocked")
    assert out[1:] == ["GGGGAAACCCC", "((((...))))"]


def test_fasta_tsv_and_plots(tmp_path, data_dir, capsys):
    fasta = data_dir / "fold" / "mirbase_hairpins.fa"
    out = tmp_path / "out.tsv"
    plot = tmp_path / "arcs.svg"
    assert main(["fold", str(fasta), "--format", "tsv", "-o", str(out), "--plot", str(plot), "--min-loop", "3",
                 "--engine", "cpu2", "--no-progress"]) == 0
    rows = [line.split("\t") for line in out.read_text().splitlines()]
    assert rows[0] == ["name", "length", "pairs", "min_loop", "engine", "structure"]
    assert len(rows) == 6
    for name, length, pairs, min_loop, engine, structure in rows[1:]:
        assert engine == "cpu2" and min_loop == "3" and int(length) == len(structure)
        assert int(pairs) == structure.count("(")
        svg = tmp_path / f"arcs.{name}.svg"
        assert svg.read_text().lstrip().startswith("<?xml")
    assert capsys.readouterr().out == ""


def test_jsonl_with_corner_and_png(tmp_path, data_dir):
    fasta = data_dir / "fold" / "sars-cov-2_5prime_1500.fa"
    out = tmp_path / "out.jsonl"
    png = tmp_path / "arcs.png"
    assert main(["fold", str(fasta), "--format", "jsonl", "-o", str(out), "--corner", "3", "--plot", str(png)]) == 0
    record = json.loads(out.read_text())
    assert record["length"] == 1500 and len(record["corner"]) == 3
    assert record["corner"][0][2] == record["pairs"]
    check_structure(record["sequence"], record["structure"], record["pairs"], 1)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_dot_bracket_corner_and_no_structure(capsys):
    assert main(["fold", "GGGAAACCCAUGCAUG", "--corner", "2"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[3].startswith("# corner") and len(out) == 6
    assert main(["fold", "GGGAAACCC", "--no-structure"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 2 and "pairs=3" in out[0]


@pytest.mark.parametrize(
    "argv,code,message",
    [
        (["fold", "AC-GU"], InputError.exit_code, "letter '-' at position 3"),
        (["fold", "missing.fa"], InputError.exit_code, "missing.fa: no such file"),
    ],
)
def test_errors(argv, code, message, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == code
    assert message in capsys.readouterr().err
    assert not (tmp_path / "x.png").exists()


def test_bad_record_names_file_and_record(tmp_path, capsys):
    fasta = tmp_path / "bad.fa"
    fasta.write_text(">good\nACGU\n>broken\nAC*GU\n")
    assert main(["fold", str(fasta), "-o", str(tmp_path / "out.txt")]) == InputError.exit_code
    assert f"{fasta}: record broken: letter '*' at position 3" in capsys.readouterr().err
    assert not (tmp_path / "out.txt").exists()


def test_api_plot(tmp_path):
    from gamut.folding.plot import arc_diagram

    result = gamut.fold("GGGGAAACCCCAUAUAUAAAAUAUAU", min_loop=3)
    arc_diagram(result, tmp_path / "a.pdf", title="test")
    assert (tmp_path / "a.pdf").read_bytes()[:4] == b"%PDF"
    arc_diagram(gamut.fold("AAAA"), tmp_path / "empty.png")
    assert (tmp_path / "empty.png").stat().st_size > 0
