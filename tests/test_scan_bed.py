"""The BED6 output (``--format bed6``, or an output named ``*.bed6``): one line per reported hit in
reference coordinates, the same hits as the TSV and the API's table, the same bytes in partitions;
and the BED12 output (``--format bed``, ``*.bed``) without an annotation (with one:
tests/test_scan_genome.py)."""
from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import gamut
from gamut.cli import main
from gamut.scanning.api import run_job
from gamut.scanning.params import ScanParams
from gamut.scanning.pipeline.job import ScanJob

CASE = Path(__file__).parent / "data" / "miranda" / "real_trim"
QUERY, REFERENCE = str(CASE / "query.fa"), str(CASE / "reference.fa")
OPTIONS = ["--device", "cpu", "--score-threshold", "120", "--trim", "600"]
BED_COLUMNS = ["chrom", "chromStart", "chromEnd", "name", "score", "strand"]


def _bed(path: Path) -> pd.DataFrame:
    return pd.read_csv(path, sep="\t", header=None, names=BED_COLUMNS, dtype={"chrom": str, "name": str})


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    """The same scan as BED6 (by suffix and by --format), as TSV and partitioned as BED6; and as BED12."""
    d = tmp_path_factory.mktemp("bed")
    outs = {"bed": d / "hits.bed6", "format": d / "hits_by_format", "tsv": d / "hits.tsv", "parts": d / "parts.bed6",
            "bed12": d / "hits.bed", "bed12_parts": d / "parts.bed"}
    assert main(["scan", QUERY, REFERENCE, "-o", str(outs["bed"]), *OPTIONS]) == 0
    assert main(["scan", QUERY, REFERENCE, "--format", "bed6", "-o", str(outs["format"]), *OPTIONS]) == 0
    assert main(["scan", QUERY, REFERENCE, "-o", str(outs["tsv"]), *OPTIONS]) == 0
    assert main(["scan", QUERY, REFERENCE, "-o", str(outs["parts"]), "--run-dir", str(d / "run"),
                 "--partition-cells", "300000", *OPTIONS]) == 0
    assert main(["scan", QUERY, REFERENCE, "-o", str(outs["bed12"]), *OPTIONS]) == 0
    assert main(["scan", QUERY, REFERENCE, "-o", str(outs["bed12_parts"]), "--run-dir", str(d / "run12"),
                 "--partition-cells", "300000", *OPTIONS]) == 0
    return outs


def test_every_hit_in_reference_coordinates(runs):
    tsv = pd.read_csv(runs["tsv"], sep="\t", dtype={"query_id": str, "reference_id": str})
    bed = _bed(runs["bed"])
    assert len(tsv) > 20 and len(bed) == len(tsv)
    assert bed["chrom"].tolist() == tsv["reference_id"].tolist()
    assert (bed["chromStart"] == tsv["ref_start"] - 1).all()  # 0-based, half-open
    assert (bed["chromEnd"] == tsv["ref_end"]).all()
    assert (bed["chromEnd"] - bed["chromStart"] == tsv["ref_end"] - tsv["ref_start"] + 1).all()
    assert bed["name"].tolist() == tsv["query_id"].tolist()
    assert bed["score"].tolist() == tsv["score"].tolist()  # the alignment score, not rescaled to 0-1000
    assert set(bed["strand"]) == {"+"}
    text = runs["bed"].read_text()
    assert all(line.count("\t") == 5 for line in text.splitlines()) and text.endswith("\n")


def test_suffix_and_format_name_the_same_output(runs):
    assert runs["bed"].read_bytes() == runs["format"].read_bytes()


def test_partitioned_run_gives_the_same_bytes(runs):
    assert len(list((runs["parts"].parent / "run" / "parts").glob("*.part"))) > 2
    assert runs["parts"].read_bytes() == runs["bed"].read_bytes()


def test_api_runner_matches_the_dataframe(runs, tmp_path):
    """A job run through the Python API writes the same BED, and its rows are the DataFrame's hits."""
    params = ScanParams(score_threshold=120, trim=600)
    out = tmp_path / "api.bed6"
    run_job(ScanJob.from_files(QUERY, REFERENCE, params, output=str(out), format="bed6", device="cpu"))
    assert out.read_bytes() == runs["bed"].read_bytes()
    frame = gamut.scan(QUERY, REFERENCE, device="cpu", score_threshold=120, trim=600)
    bed = _bed(out)
    expected = pd.DataFrame({"chrom": frame["reference_id"], "chromStart": frame["ref_start"] - 1,
                             "chromEnd": frame["ref_end"], "name": frame["query_id"], "score": frame["score"],
                             "strand": "+"})
    pd.testing.assert_frame_equal(bed, expected, check_dtype=False)


def test_scan_files_writes_bed(runs, tmp_path):
    from gamut.scanning.api import scan_files

    out = tmp_path / "files.bed6"
    assert scan_files(QUERY, REFERENCE, ScanParams(score_threshold=120, trim=600), output=str(out), fmt="bed6",
                      device="cpu") == 0
    assert out.read_bytes() == runs["bed"].read_bytes()


def test_bed12_in_reference_coordinates(runs):
    """``bed``/``*.bed`` is BED12: the BED6 columns, then the seed as the thick part and one block."""
    tsv = pd.read_csv(runs["tsv"], sep="\t", dtype={"query_id": str, "reference_id": str})
    lines = [line.split("\t") for line in runs["bed12"].read_text().splitlines()]
    six = _bed(runs["bed"])
    assert len(lines) == len(six) == len(tsv) and all(len(f) == 12 for f in lines)
    assert [f[:6] for f in lines] == [[str(v) for v in row] for row in six.itertuples(index=False)]
    for f, t1 in zip(lines, tsv["ref_end"] + tsv["aln_utr"].str.len() - tsv["aln_utr"].str.rstrip("-").str.len()):
        start, end, thick_start, thick_end = int(f[1]), int(f[2]), int(f[6]), int(f[7])
        assert (f[8], f[9], f[10], f[11]) == ("0", "1", f"{end - start},", "0,")
        assert thick_start == max(start, t1 - 8) and thick_end == min(end, t1 - 1)  # miRNA positions 2-8


def test_bed12_partitioned_run_gives_the_same_bytes(runs):
    assert runs["bed12_parts"].read_bytes() == runs["bed12"].read_bytes()
