"""Outputs are written compressed when their name says so, in the format the suffix under the
compression suffix names (#44, item 3): ``-o hits.tsv.gz`` is gzip of the TSV, ``hits.bed.bgz``
BGZF of the BED, and every compressed output reads back to the bytes of the plain one, in every
command and every scan runner. The refusals are rows of tests/test_cli_errors_table.py.
"""
from __future__ import annotations

import bz2
import gzip
import lzma
import os
import struct
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gamut.access.sinks import FORMAT_RULES as ACCESS_RULES
from gamut.cli import main
from gamut.errors import UsageError
from gamut.folding.sinks import FORMAT_RULES as FOLD_RULES
from gamut.io.atomic import atomic_output
from gamut.io.compressed import BGZF_BLOCK_INPUT, BGZF_EOF, BgzfWriter
from gamut.io.fasta import read_input_bytes
from gamut.io.outputs import format_for_output, output_compression
from gamut.scanning.sinks import FORMAT_RULES as SCAN_RULES
from gamut.scanning.sinks import sink_class
from gamut.splicing.read_outputs import READ_FORMAT_RULES
from gamut.splicing.sinks import FORMAT_RULES as SPLICE_RULES

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
CLIP = ROOT / "tests" / "data" / "miranda" / "clip_quiet"
SCAN = ["--device", "cpu", "--no-progress"]


def decompress(path: Path) -> bytes:
    """``path``'s bytes decompressed by the standard library by its name (zstd: by the input
    reader of gamut, which tells compression by content)."""
    data = path.read_bytes()
    name = path.name
    if name.endswith((".gz", ".bgz")):
        return gzip.decompress(data)
    if name.endswith(".bz2"):
        return bz2.decompress(data)
    if name.endswith(".xz"):
        return lzma.decompress(data)
    assert name.endswith(".zst") and data[:4] == b"\x28\xb5\x2f\xfd", name
    return read_input_bytes(path)


def bgzf_blocks(data: bytes) -> list[int]:
    """The input size of each block of BGZF ``data``, after checking every block's structure
    (SAM/BAM specification 4.1): a gzip member with FEXTRA, one ``BC`` subfield holding the
    block's size - 1, at most 64 KiB; the last block is the empty EOF block."""
    sizes = []
    at = 0
    while at < len(data):
        id1, id2, cm, flg, _, _, _, xlen, si1, si2, slen, bsize = struct.unpack_from("<4BI2BH2BHH", data, at)
        assert (id1, id2, cm, flg, xlen, si1, si2, slen) == (31, 139, 8, 4, 6, ord("B"), ord("C"), 2)
        block = data[at:at + bsize + 1]
        assert len(block) == bsize + 1 <= 1 << 16
        assert gzip.decompress(block) is not None  # one whole gzip member (CRC and size checked)
        sizes.append(struct.unpack_from("<I", block, len(block) - 4)[0])
        assert sizes[-1] <= BGZF_BLOCK_INPUT
        at += bsize + 1
    assert at == len(data) and data.endswith(BGZF_EOF) and sizes[-1] == 0
    return sizes


# --- what a name means ---------------------------------------------------------------------------

@pytest.mark.parametrize("rules, name, explicit, default, expected", [
    (SCAN_RULES, "hits.tsv.gz", None, "tsv", "tsv"),
    (SCAN_RULES, "hits.TXT.Zst", None, "tsv", "miranda"),
    (SCAN_RULES, "hits.bed.bgz", None, "tsv", "bed"),
    (SCAN_RULES, "hits.bed6.bgz", "bed6", "tsv", "bed6"),
    (SCAN_RULES, "hits.gz", None, "tsv", "tsv"),  # no suffix under .gz: the default
    (SCAN_RULES, "hits", None, "tsv", "tsv"),
    (SCAN_RULES, "-", "jsonl", "tsv", "jsonl"),
    (SCAN_RULES, "hits.out.gz", "jsonl", "tsv", "jsonl"),  # --format writes a suffix no format owns
    (SCAN_RULES, "hits.csv", None, "tsv", "comma-separated values are not written"),
    (SCAN_RULES, "hits.out", None, "tsv", "no output format has the suffix .out"),
    (SCAN_RULES, "hits.tsv.gz.gz", None, "tsv", "no output format has the suffix .gz"),
    (SCAN_RULES, "hits.bed.gz", "tsv", "tsv", "the suffix .bed names the bed format, not --format tsv"),
    (SCAN_RULES, "hits.tsv.bgz", None, "tsv", ".bgz (BGZF, for tabix) is not written for tsv (only for bed, bed6)"),
    (SCAN_RULES, "hits.parquet.zst", None, "tsv", "the parquet format compresses inside; drop .zst"),
    (FOLD_RULES, "out.tsv.gz", None, "dot-bracket", "tsv"),
    (FOLD_RULES, "out.dbn.xz", None, "dot-bracket", "dot-bracket"),
    (FOLD_RULES, "out.tsv.gz", "dot-bracket", "dot-bracket", "names the tsv format, not --format dot-bracket"),
    (FOLD_RULES, "out.bgz", None, "dot-bracket", ".bgz (BGZF, for tabix) is not written for dot-bracket; use .gz"),
    (ACCESS_RULES, "a.lunp.bz2", None, "tsv", "lunp"),
    (ACCESS_RULES, "a.parquet.gz", None, "tsv", "the parquet format compresses inside"),
    (READ_FORMAT_RULES, "chains.gff.bgz", None, "tsv", "gff3"),
    (READ_FORMAT_RULES, "chains.bed12.bgz", None, "tsv", "bed"),
    (SPLICE_RULES, "chains.gff3.bgz", "gff3", "gff3", "gff3"),
    (SPLICE_RULES, "exons.out.gz", "table", "table", "table"),
    (SPLICE_RULES, "exons.gff3", "table", "table", "the suffix .gff3 names the gff3 format, not --format table"),
])
def test_the_name_chooses_format_and_compression(rules, name, explicit, default, expected):
    if " " not in expected:
        assert format_for_output(name, explicit, rules, default) == expected
        return
    with pytest.raises(UsageError) as refused:
        format_for_output(name, explicit, rules, default)
    assert expected in str(refused.value) and "\n" not in str(refused.value)


def test_compression_is_the_last_suffix_of_the_name():
    assert [output_compression(n) for n in ("a.tsv.gz", "a.BGZ", "a.zst", "a.zstd", "a.bz2", "a.xz")] == [
        "gzip", "bgzf", "zstd", "zstd", "bzip2", "xz"]
    assert [output_compression(n) for n in ("a.tsv", "a.gz.tsv", "-", None, "gz")] == [None] * 5


# --- BGZF ----------------------------------------------------------------------------------------

@settings(max_examples=40, deadline=None)
@given(st.binary(max_size=3 * BGZF_BLOCK_INPUT), st.lists(st.integers(1, BGZF_BLOCK_INPUT + 7), max_size=12))
def test_bgzf_writer_reads_back_whatever_the_writes(data, cuts):
    """Any data in any pieces: the BGZF stream holds it, in blocks of at most 64 KiB; only the
    last block before EOF is short (the first ones are full)."""
    sink = _Kept()
    writer = BgzfWriter(sink)
    at = 0
    for cut in cuts:
        writer.write(data[at:at + cut])
        writer.flush()  # a text layer flushes often: no short block comes of it
        at += cut
    writer.write(data[at:])
    writer.close()
    assert not sink.closed  # the file is the caller's to close
    stream = bytes(sink.data)
    assert gzip.decompress(stream) == data
    sizes = bgzf_blocks(stream)
    assert sizes[-1] == 0 and all(size == BGZF_BLOCK_INPUT for size in sizes[:-2])
    assert sum(sizes) == len(data)


def test_bgzf_blocks_of_data_that_does_not_compress_fit_64_kib():
    data = os.urandom(5 * BGZF_BLOCK_INPUT + 123)
    sink = _Kept()
    with BgzfWriter(sink) as writer:
        writer.write(data)
    assert gzip.decompress(bytes(sink.data)) == data
    assert bgzf_blocks(bytes(sink.data)) == [BGZF_BLOCK_INPUT] * 5 + [123, 0]


class _Kept:
    """A binary file that keeps what is written (and says whether it was closed)."""

    def __init__(self) -> None:
        self.data = bytearray()
        self.closed = False

    def write(self, data) -> int:
        self.data += data
        return len(data)

    def flush(self) -> None:
        pass

    def close(self) -> None:
        self.closed = True


@pytest.mark.parametrize("suffix", [".gz", ".bgz", ".zst", ".bz2", ".xz"])
def test_a_text_output_is_compressed_whole(tmp_path, suffix):
    text = "".join(f"chr{k % 3}\t{k}\t{k + 20}\tmiR-{k}\n" for k in range(40_000))  # 1 MB: many blocks
    out = tmp_path / f"x.bed{suffix}"
    with atomic_output(out) as handle:
        handle.write(text)
    assert decompress(out) == text.encode()
    if suffix == ".bgz":
        assert len(bgzf_blocks(out.read_bytes())) > 10
    assert [p.name for p in tmp_path.iterdir()] == [out.name]


# --- every command -------------------------------------------------------------------------------

def test_scan_writes_every_format_compressed_as_the_plain_one(tmp_path):
    plain = {fmt: tmp_path / f"plain.{fmt}" for fmt in ("tsv", "jsonl", "txt", "bed", "bed6")}
    packed = [tmp_path / n for n in ("hits.tsv.gz", "hits.jsonl.zst", "hits.txt.bz2", "hits.bed.bgz", "hits.bed6.xz",
                                     "hits.bed.gz", "hits.miranda.gz")]
    outs = [*plain.values(), *packed]
    assert main(["scan", str(EXAMPLES / "mirnas.fa"), str(EXAMPLES / "targets.fa"), *SCAN,
                 *(a for p in outs for a in ("-o", str(p)))]) == 0
    for path in packed:
        fmt = path.name.split(".")[1].replace("miranda", "txt")
        assert decompress(path) == plain[fmt].read_bytes(), path.name
        assert read_input_bytes(path) == plain[fmt].read_bytes()  # the input side reads each back
    assert plain["tsv"].read_bytes().count(b"\n") > 10
    bgzf_blocks((tmp_path / "hits.bed.bgz").read_bytes())
    assert not list(tmp_path.glob(".*.tmp"))


def test_scan_in_partitions_compresses_the_final_outputs(tmp_path):
    """A run directory keeps its parts plain; the outputs made from them are compressed."""
    argv = ["scan", str(CLIP / "query.fa"), str(CLIP / "reference.fa"), "--quiet", *SCAN]
    assert main([*argv, "-o", str(tmp_path / "plain.tsv"), "-o", str(tmp_path / "plain.bed")]) == 0
    run = [*argv, "-o", str(tmp_path / "hits.tsv.gz"), "-o", str(tmp_path / "hits.bed.bgz"), "--run-dir",
           str(tmp_path / "run"), "--partition-pairs", "4000"]
    for _ in range(2):  # computed, then every partition read back from the run directory
        assert main(run) == 0
        assert decompress(tmp_path / "hits.tsv.gz") == (tmp_path / "plain.tsv").read_bytes()
        assert decompress(tmp_path / "hits.bed.bgz") == (tmp_path / "plain.bed").read_bytes()
    bgzf_blocks((tmp_path / "hits.bed.bgz").read_bytes())
    assert not list(tmp_path.rglob(".*.tmp"))


def test_miranda_out_is_mirandas_text_compressed(tmp_path):
    argv = ["miranda", str(EXAMPLES / "mirnas.fa"), str(EXAMPLES / "targets.fa"), "--device", "cpu", "-out"]
    assert main([*argv, str(tmp_path / "hits.txt")]) == 0
    assert main([*argv, str(tmp_path / "hits.tsv.gz")]) == 0  # miRanda's text whatever the name
    assert decompress(tmp_path / "hits.tsv.gz") == (tmp_path / "hits.txt").read_bytes()


def test_a_failed_scan_leaves_the_old_compressed_output(tmp_path, monkeypatch):
    out = tmp_path / "hits.tsv.gz"
    out.write_bytes(gzip.compress(b"old\n"))

    def fail(self, *args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(sink_class("tsv"), "write", fail)
    assert main(["scan", str(EXAMPLES / "mirnas.fa"), str(EXAMPLES / "targets.fa"), *SCAN, "-o", str(out)]) == 1
    assert gzip.decompress(out.read_bytes()) == b"old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["hits.tsv.gz"]


def test_fold_writes_the_format_under_the_compression_suffix(tmp_path):
    argv = ["fold", str(EXAMPLES / "fold_hairpins.fa"), "--device", "cpu", "--no-progress", "-o"]
    for name in ("out.tsv", "out.tsv.gz", "out.txt", "out.dbn.zst"):
        assert main([*argv, str(tmp_path / name)]) == 0
    assert decompress(tmp_path / "out.tsv.gz") == (tmp_path / "out.tsv").read_bytes()
    assert (tmp_path / "out.tsv").read_bytes().startswith(b"name\tlength\t")  # TSV, not dot-bracket
    assert decompress(tmp_path / "out.dbn.zst") == (tmp_path / "out.txt").read_bytes()


def test_access_compresses_its_text_formats(tmp_path):
    argv = ["access", "GGGAAACCCAUAUAUGGGUUUCCCAAAGGG", "--device", "cpu", "-o"]
    for name in ("a.tsv", "a.tsv.gz", "a.lunp", "a.lunp.xz"):
        assert main([*argv, str(tmp_path / name)]) == 0
    assert decompress(tmp_path / "a.tsv.gz") == (tmp_path / "a.tsv").read_bytes()
    assert decompress(tmp_path / "a.lunp.xz") == (tmp_path / "a.lunp").read_bytes()


def test_splice_compresses_each_output(tmp_path):
    (tmp_path / "base.fa").write_text(">chr1\nTTTACGTACGGGGGGCCATGCATTTTTTGGAACCTTAAA\n")
    (tmp_path / "ex.bed").write_text("chr1\t3\t10\te0\nchr1\t15\t23\te1\nchr1\t28\t36\te2\n")
    (tmp_path / "t.fa").write_text(">cdna1\nACGTACGCATGCAGAACCTT\n")
    argv = ["splice", *(str(tmp_path / n) for n in ("base.fa", "ex.bed", "t.fa")), "--device", "cpu"]
    assert main([*argv, "-o", str(tmp_path / "r.txt"), "--gff3", str(tmp_path / "c.gff3"),
                 "--table", str(tmp_path / "e.tsv")]) == 0
    assert main([*argv, "-o", str(tmp_path / "r.txt.gz"), "--gff3", str(tmp_path / "c.gff3.bgz"),
                 "--table", str(tmp_path / "e.tsv.zst")]) == 0
    for plain, packed in (("r.txt", "r.txt.gz"), ("c.gff3", "c.gff3.bgz"), ("e.tsv", "e.tsv.zst")):
        assert decompress(tmp_path / packed) == (tmp_path / plain).read_bytes(), packed
    bgzf_blocks((tmp_path / "c.gff3.bgz").read_bytes())
