"""Exon readers (BED, GFF3, TSV), case loading from files, the ``gamut splice`` command and writers."""
from __future__ import annotations

import gzip

import pytest

import gamut
from gamut.cli import main
from gamut.errors import InputError, UsageError
from gamut.io.exons import detect_format, read_exons
from gamut.splicing.files import load_cases
from gamut.splicing.model import ScoreParams

BASE = "TTTACGTACGGGGGGCCATGCATTTTTTGGAACCTTAAA"
EXONS = [(3, 10), (15, 23), (28, 36), (5, 18), (30, 33)]
TARGET = "ACGTACGCATGCAGAACCTT"


@pytest.fixture()
def files(tmp_path):
    (tmp_path / "base.fa").write_text(f">chr1 test base\n{BASE[:20]}\n{BASE[20:]}\n")
    (tmp_path / "t.fa").write_text(f">cdna1\n{TARGET}\n>cdna2\n{TARGET[:12]}\n")
    (tmp_path / "ex.bed").write_text("track name=x\n" + "".join(f"chr1\t{s}\t{e}\te{i}\t0\t+\n" for i, (s, e) in enumerate(EXONS)))
    gff = "##gff-version 3\n" + "".join(
        f"chr1\tgenscan\texon\t{s + 1}\t{e}\t.\t+\t.\tID=e{i};Name=x\n" for i, (s, e) in enumerate(EXONS))
    (tmp_path / "ex.gff3").write_text(gff + "chr1\tgenscan\tgene\t1\t39\t.\t+\t.\tID=g\n")
    (tmp_path / "ex.tsv").write_text("seqid\tstart\tend\tname\n" + "".join(f"chr1\t{s}\t{e}\te{i}\n" for i, (s, e) in enumerate(EXONS)))
    (tmp_path / "plain.txt").write_text("".join(f"{s} {e}\n" for s, e in EXONS))
    with gzip.open(tmp_path / "ex.bed.gz", "wt") as handle:
        handle.write((tmp_path / "ex.bed").read_text())
    return tmp_path


@pytest.mark.parametrize("name", ["ex.bed", "ex.gff3", "ex.tsv", "plain.txt", "ex.bed.gz"])
def test_readers_give_the_same_intervals(files, name):
    records = read_exons(files / name)
    assert [(r.start, r.end) for r in records] == EXONS
    if name != "plain.txt":
        assert {r.seqid for r in records} == {"chr1"}
        assert [r.name for r in records] == [f"e{i}" for i in range(len(EXONS))]


def test_format_detection_and_errors(tmp_path):
    assert detect_format("a.GFF") == "gff3" and detect_format("a.bed.gz") == "bed"
    with pytest.raises(InputError, match="cannot tell"):
        detect_format("exons.xyz")
    bad = tmp_path / "bad.bed"
    bad.write_text("chr1\t10\t5\n")
    with pytest.raises(InputError, match=r"bad.bed: line 1: exon 10-5"):
        read_exons(bad)
    bad.write_text("chr1\tten\t20\n")
    with pytest.raises(InputError, match="line 1: start 'ten' is not an integer"):
        read_exons(bad)
    gff = tmp_path / "bad.gff3"
    gff.write_text("chr1\tx\texon\t5\n")
    with pytest.raises(InputError, match="9 tab-separated"):
        read_exons(gff)
    gff.write_text("chr1\tx\tgene\t5\t9\t.\t+\t.\tID=a\n")
    with pytest.raises(InputError, match="no candidate exons of type exon/CDS"):
        read_exons(gff)
    with pytest.raises(InputError, match="no such file"):
        read_exons(tmp_path / "missing.bed")


def test_load_cases_pairs_and_errors(files):
    params = ScoreParams()
    loaded = load_cases(files / "base.fa", files / "ex.bed", files / "t.fa", params)
    assert [fc.case.name for fc in loaded] == ["cdna1", "cdna2"]
    assert loaded[0].base_name == "chr1" and loaded[0].exon_names[0] == "e0"
    (files / "out.bed").write_text("chr1\t30\t45\n")
    with pytest.raises(InputError, match="runs past the end of 'chr1' \\(39 nt\\)"):
        load_cases(files / "base.fa", files / "out.bed", files / "t.fa", params)
    (files / "other.bed").write_text("chr2\t3\t5\n")
    with pytest.raises(InputError, match="on 'chr2', which is not in"):
        load_cases(files / "base.fa", files / "other.bed", files / "t.fa", params)
    (files / "two.fa").write_text(f">chr1\n{BASE}\n>chr2\n{BASE[::-1]}\n")
    with pytest.raises(UsageError, match="--pairs"):
        load_cases(files / "two.fa", files / "ex.bed", files / "t.fa", params)
    (files / "pairs.tsv").write_text("cdna2 chr1\n")
    loaded = load_cases(files / "two.fa", files / "ex.bed", files / "t.fa", params, pairs_path=files / "pairs.tsv")
    assert [fc.case.name for fc in loaded] == ["cdna2"]
    (files / "badt.fa").write_text(">x\nACGJ\n")
    with pytest.raises(InputError, match=r"badt.fa: record 'x': unknown letter 'J' at position 4"):
        load_cases(files / "base.fa", files / "ex.bed", files / "badt.fa", params)


def test_cli_end_to_end(files, capsys):
    out = files / "report.txt"
    code = main(["splice", str(files / "base.fa"), str(files / "ex.gff3"), str(files / "t.fa"), "--device", "cpu",
                 "-o", str(out), "--gff3", str(files / "o.gff3"), "--table", str(files / "o.tsv"),
                 "--match", "2", "--mismatch", "-1", "--gap", "-2"])
    assert code == 0
    expected = gamut.splice(BASE, EXONS, TARGET, match=2, mismatch=-1, gap=-2, device="cpu")
    report = out.read_text()
    assert f"score\t{expected.score}" in report
    assert expected.alignment.cigar in report
    gff = (files / "o.gff3").read_text().splitlines()
    assert gff[0] == "##gff-version 3"
    mrna = [line.split("\t") for line in gff if "\tmRNA\t" in line]
    assert [m[5] for m in mrna][0] == str(expected.score)
    exons = [line.split("\t") for line in gff if "\texon\t" in line and "Parent=cdna1" in line]
    assert [(int(e[3]) - 1, int(e[4])) for e in exons] == expected.exons
    table = (files / "o.tsv").read_text().splitlines()
    assert table[0].startswith("target\tbase\tscore")
    rows = [r.split("\t") for r in table[1:] if r.startswith("cdna1\t")]
    assert [int(r[4]) for r in rows] == expected.chain
    assert [r[5] for r in rows] == [f"e{k}" for k in expected.chain]


def test_cli_errors_exit_non_zero(files, capsys):
    code = main(["splice", str(files / "base.fa"), str(files / "missing.bed"), str(files / "t.fa")])
    assert code != 0
    assert "missing.bed: no such file" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit:  # a bad option: exit status 2 (test_fold_splice_cli_errors.py)
        main(["splice", str(files / "base.fa"), str(files / "ex.bed"), str(files / "t.fa"), "--gap", "1"])
    assert exit.value.code == 2
    assert "gap must be negative" in capsys.readouterr().err


def test_cli_on_shipped_example_reference_equals_fast(data_dir, tmp_path):
    d = data_dir / "splice"
    reports = {}
    for engine in ("reference", "fast"):
        out = tmp_path / f"{engine}.txt"
        table = tmp_path / f"{engine}.tsv"
        assert main(["splice", str(d / "gene.fa"), str(d / "candidates.gff3"), str(d / "cdna.fa"),
                     "--engine", engine, "-o", str(out), "--table", str(table)]) == 0
        reports[engine] = (out.read_text(), table.read_text())
    assert reports["reference"] == reports["fast"]
    true_chain = [int(x) for x in (d / "true_exons.txt").read_text().split("\n")[1].split()]
    rows = [r.split("\t") for r in reports["fast"][1].splitlines()[1:]]
    chosen = [int(r[4]) for r in rows if r[0] == "cdna0"]
    assert chosen == true_chain  # 2% divergence: the gene's exons are recovered exactly
    assert reports["fast"][0].count("# target cdna") == 3
