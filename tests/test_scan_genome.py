"""Genome coordinates (``--annotation``) and the BED12 output, on a generated genome with
transcripts of 1-5 exons on both strands: the genome letters under every hit's blocks
(reverse-complemented on the minus strand) are the reference letters of the hit's span."""
from __future__ import annotations

import gzip
import random
import warnings
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest

from gamut.errors import InputError
from gamut.io.annotation import read_annotation
from gamut.scanning.engines import make_engine
from gamut.scanning.fasta import SeqRecord
from gamut.scanning.genome import AnnotationWarning
from gamut.scanning.params import ScanParams
from gamut.scanning.pipeline.pairs import ScanInput
from gamut.scanning.pipeline.scan_loop import scan_chunks
from gamut.scanning.sinks import sink_class
from gamut.scanning.sinks.columns import GENOME_COLUMNS
from gamut.scanning.sinks.spec import OutputSpec

MIRNAS = {"miR-a": "UGGAAUGUAAGGAAGUGUGUGG", "miR-b": "UAGCUUAUCAGACUGAUGUUGA"}
_RC = str.maketrans("ACGTU", "TGCAA")


def revcomp(s: str) -> str:
    return s.translate(_RC)[::-1]


def make_genome(seed: int = 7):
    """Chromosomes, transcripts (name, chrom, strand, exons) and their sequences, with miRNA
    sites planted across exon junctions."""
    rng = random.Random(seed)
    chroms = {f"chr{k}": [rng.choice("ACGT") for _ in range(6000)] for k in (1, 2)}
    transcripts = []
    for t in range(12):
        chrom = f"chr{1 + t % 2}"
        strand = "+-"[t % 3 == 0]
        n = 1 + t % 5
        pos = 100 + 450 * (t // 2)
        exons = []
        for _ in range(n):
            size = rng.randint(25, 60)
            exons.append((pos, pos + size))
            pos += size + rng.randint(20, 40)
        transcripts.append((f"tx{t}", chrom, strand, exons))
    genome = {c: "".join(s) for c, s in chroms.items()}

    def sequence(chrom, strand, exons):
        seq = "".join(genome[chrom][a:b] for a, b in exons)
        return seq if strand == "+" else revcomp(seq)

    # Plant a site for each miRNA in every transcript, through the transcript's letters.
    for name, chrom, strand, exons in transcripts:
        tx = list(sequence(chrom, strand, exons))
        for k, mirna in enumerate(MIRNAS.values()):
            site = revcomp(mirna.replace("U", "T"))
            at = (len(tx) - len(site)) * (k + 1) // 3
            if at >= 0:
                tx[at:at + len(site)] = site
        # write the letters back into the genome
        offsets = [x for a, b in exons for x in range(a, b)]
        letters = "".join(tx) if strand == "+" else revcomp("".join(tx))
        g = chroms[chrom]
        for x, letter in zip(offsets, letters):
            g[x] = letter
        genome[chrom] = "".join(g)
    seqs = {name: sequence(chrom, strand, exons) for name, chrom, strand, exons in transcripts}
    return genome, transcripts, seqs


def write_bed12(path: Path, transcripts) -> None:
    lines = []
    for name, chrom, strand, exons in transcripts:
        start, end = exons[0][0], exons[-1][1]
        sizes = ",".join(str(b - a) for a, b in exons) + ","
        starts = ",".join(str(a - start) for a, _ in exons) + ","
        lines.append(f"{chrom}\t{start}\t{end}\t{name}\t0\t{strand}\t{start}\t{end}\t0\t{len(exons)}\t{sizes}\t{starts}")
    path.write_text("track name=tx\n" + "\n".join(lines) + "\n")


def write_gtf(path: Path, transcripts) -> None:
    lines = [f'{chrom}\tsim\texon\t{a + 1}\t{b}\t.\t{strand}\t.\tgene_id "g{name}"; transcript_id "{name}";'
             for name, chrom, strand, exons in transcripts for a, b in exons]
    with gzip.open(path, "wt") as out:
        out.write("\n".join(lines) + "\n")


def write_gff3(path: Path, transcripts) -> None:
    lines = ["##gff-version 3"]
    for name, chrom, strand, exons in transcripts:
        lines.append(f"{chrom}\tsim\tmRNA\t{exons[0][0] + 1}\t{exons[-1][1]}\t.\t{strand}\t.\tID=transcript:{name}")
        lines += [f"{chrom}\tsim\texon\t{a + 1}\t{b}\t.\t{strand}\t.\tParent=transcript:{name}" for a, b in exons]
    path.write_text("\n".join(lines) + "\n")


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    d = tmp_path_factory.mktemp("genome")
    genome, transcripts, seqs = make_genome()
    files = {"bed": d / "tx.bed", "gtf": d / "tx.gtf.gz", "gff3": d / "tx.gff3"}
    write_bed12(files["bed"], transcripts)
    write_gtf(files["gtf"], transcripts)
    write_gff3(files["gff3"], transcripts)
    queries = [SeqRecord(k, "", v.encode()) for k, v in MIRNAS.items()]
    references = [SeqRecord(k, "", v.encode()) for k, v in seqs.items()]
    return SimpleNamespace(genome=genome, transcripts=transcripts, seqs=seqs, files=files, queries=queries,
                           references=references, dir=d)


def run(world, fmt, annotation, references=None, **params):
    scan_input = ScanInput(world.queries, world.references if references is None else references,
                           ScanParams(noenergy=True, **params))
    sink = sink_class(fmt)(OutputSpec(scan_input, annotation=annotation and str(annotation)))
    data = sink.render(scan_chunks(scan_input, make_engine("cpu")), -1)
    return data if fmt is None else sink.header() + data.decode("latin-1") + sink.footer()


def under_blocks(genome: str, blocks: list[tuple[int, int]], strand: str) -> str:
    letters = "".join(genome[a:b] for a, b in blocks)
    return letters if strand == "+" else revcomp(letters)


@pytest.mark.parametrize("fmt", ["bed", "gtf", "gff3"])
def test_genome_letters_under_the_blocks_are_the_hit(world, fmt):
    frame = run(world, None, world.files[fmt])
    assert list(frame.columns[-len(GENOME_COLUMNS):]) == list(GENOME_COLUMNS)
    assert len(frame) >= 20 and set(frame["strand"]) == {"+", "-"}
    multi = 0
    for row in frame.itertuples(index=False):
        blocks = [tuple(int(x) for x in part.split("-")) for part in row.blocks.split(",")]
        assert blocks == sorted(blocks) and all(a < b for a, b in blocks)
        assert (blocks[0][0], blocks[-1][1]) == (row.genome_start, row.genome_end)
        span = world.seqs[row.reference_id][row.ref_start - 1:row.ref_end]
        assert under_blocks(world.genome[row.chrom], blocks, row.strand) == span
        multi += len(blocks) > 1
    assert multi > 0  # some hits cross an exon junction


def test_bed12_lines_are_valid_and_match_the_table(world):
    frame = run(world, None, world.files["bed"])
    bed = run(world, "bed", world.files["bed"])
    lines = [line.split("\t") for line in bed.splitlines()]
    assert len(lines) == len(frame)
    for f, row in zip(lines, frame.itertuples(index=False)):
        assert len(f) == 12
        chrom, start, end, name, score, strand = f[0], int(f[1]), int(f[2]), f[3], int(f[4]), f[5]
        thick_start, thick_end, count = int(f[6]), int(f[7]), int(f[9])
        sizes = [int(x) for x in f[10].rstrip(",").split(",")]
        starts = [int(x) for x in f[11].rstrip(",").split(",")]
        assert (chrom, start, end, name, score, strand) == (row.chrom, row.genome_start, row.genome_end,
                                                              row.query_id, row.score, row.strand)
        assert 0 <= start < end <= len(world.genome[chrom])
        assert count == len(sizes) == len(starts) and starts[0] == 0 and starts[-1] + sizes[-1] == end - start
        assert all(starts[k] + sizes[k] <= starts[k + 1] for k in range(count - 1)) and min(sizes) > 0
        assert start <= thick_start < thick_end <= end
        blocks = [(start + s, start + s + z) for s, z in zip(starts, sizes)]
        assert under_blocks(world.genome[chrom], blocks, strand) == world.seqs[row.reference_id][row.ref_start - 1:row.ref_end]
        # The thick part is the seed: the genome letters facing miRNA positions 2-8.
        seed = [x for a, b in blocks for x in range(a, b) if thick_start <= x < thick_end]
        assert len(seed) == 7


def test_bed12_without_annotation_is_in_reference_coordinates(world):
    frame = run(world, None, None)
    assert "chrom" not in frame.columns
    lines = [line.split("\t") for line in run(world, "bed", None).splitlines()]
    assert [f[0] for f in lines] == frame["reference_id"].tolist()
    assert [int(f[1]) for f in lines] == (frame["ref_start"] - 1).tolist()
    assert [int(f[2]) for f in lines] == frame["ref_end"].tolist()
    assert {f[5] for f in lines} == {"+"} and {f[9] for f in lines} == {"1"}


def test_tables_carry_the_genome_columns(world):
    tsv = run(world, "tsv", world.files["gtf"])
    header, *rows = tsv.splitlines()
    assert header.split("\t")[-9:] == ["site_type", "dist_to_end", "supp_pairs", "local_au", *GENOME_COLUMNS]
    frame = run(world, None, world.files["gtf"])
    assert [r.split("\t")[-1] for r in rows] == frame["blocks"].tolist()
    jsonl = run(world, "jsonl", world.files["gtf"])
    import json

    first = json.loads(jsonl.splitlines()[0])
    assert first["chrom"] == frame.loc[0, "chrom"] and first["genome_start"] == frame.loc[0, "genome_start"]
    assert first["blocks"] == frame.loc[0, "blocks"]


def test_missing_references_warn_with_a_count_and_get_no_coordinates(world):
    extra = SeqRecord("not-annotated", "", world.seqs["tx1"].encode())
    with pytest.warns(AnnotationWarning, match="1 of 13 references are not transcripts"):
        frame = run(world, None, world.files["bed"], references=[*world.references, extra])
    rows = frame[frame["reference_id"] == "not-annotated"]
    assert len(rows) > 0 and rows["chrom"].isna().all() and rows["genome_start"].isna().all()
    assert rows["blocks"].isna().all()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", AnnotationWarning)
        tsv = run(world, "tsv", world.files["bed"], references=[*world.references, extra])
        bed = run(world, "bed", world.files["bed"], references=[*world.references, extra])
    unmapped = [line for line in tsv.splitlines() if line.startswith("miR-a\tnot-annotated")]
    assert unmapped and all(line.endswith("\t\t\t\t\t") for line in unmapped)
    assert "not-annotated" not in bed and len(bed.splitlines()) == frame["chrom"].notna().sum()


def test_wrong_transcript_length_is_an_error_naming_it(world):
    short = [SeqRecord(r.id, "", r.sequence[:-1] if r.id == "tx3" else r.sequence) for r in world.references]
    with pytest.raises(InputError, match="transcript 'tx3' has exons of"):
        run(world, None, world.files["bed"], references=short)


def test_trimmed_references_still_map(world):
    """-trim scans a prefix of each transcript: the annotation is checked against the full length."""
    frame = run(world, None, world.files["bed"], trim=80)
    assert len(frame) > 0 and frame["chrom"].notna().all() and (frame["ref_end"] <= 80).all()


def test_annotation_readers_agree_and_reject_bad_lines(world, tmp_path):
    a, b, c = (read_annotation(world.files[k]) for k in ("bed", "gtf", "gff3"))
    for name in world.seqs:
        ka, kb, kc = a.ids[name], b.ids[name], c.ids[name]
        assert a.length[ka] == b.length[kb] == c.length[kc] == len(world.seqs[name])
    bad = tmp_path / "bad.bed"
    bad.write_text("chr1\t10\t50\ttx\t0\t*\n")
    with pytest.raises(InputError, match="line 1: strand"):
        read_annotation(bad)
    overlap = tmp_path / "overlap.gtf"
    overlap.write_text('chr1\ts\texon\t1\t20\t.\t+\t.\ttranscript_id "t";\n'
                       'chr1\ts\texon\t10\t30\t.\t+\t.\ttranscript_id "t";\n')
    with pytest.raises(InputError, match="'t' has overlapping exons"):
        read_annotation(overlap)
    with pytest.raises(InputError, match="cannot tell the annotation format"):
        read_annotation(tmp_path / "x.txt")


def test_parquet_has_the_genome_columns_with_nulls(world):
    pa = pytest.importorskip("pyarrow")
    extra = SeqRecord("not-annotated", "", world.seqs["tx1"].encode())
    scan_input = ScanInput(world.queries, [*world.references, extra], ScanParams(noenergy=True))
    with pytest.warns(AnnotationWarning):
        sink = sink_class("parquet")(OutputSpec(scan_input, annotation=str(world.files["bed"])))
    data = sink.render(scan_chunks(scan_input, make_engine("cpu")), -1)
    table = pa.ipc.open_stream(data).read_all().drop_columns(["_pair"]).to_pandas()
    with pytest.warns(AnnotationWarning):
        frame = run(world, None, world.files["bed"], references=[*world.references, extra])
    assert list(table.columns) == list(frame.columns)
    for name in ("site_type", "chrom", "strand", "blocks"):
        assert [None if pd.isna(v) else v for v in table[name]] == [None if pd.isna(v) else v for v in frame[name]], name
    assert table["genome_start"].isna().tolist() == frame["genome_start"].isna().tolist()


def test_command_line_annotation_and_site_types(world, tmp_path):
    """``gamut scan --annotation FILE --site-types LIST``: the TSV has the genome columns and only
    those types; the BED is BED12 in genome coordinates; the output equals the direct sinks'."""
    from gamut.cli import main

    fa_q, fa_r = tmp_path / "q.fa", tmp_path / "r.fa"
    fa_q.write_text("".join(f">{k}\n{v}\n" for k, v in MIRNAS.items()))
    fa_r.write_text("".join(f">{k}\n{v}\n" for k, v in world.seqs.items()))
    tsv, bed = tmp_path / "hits.tsv", tmp_path / "hits.bed"
    common = [str(fa_q), str(fa_r), "--noenergy", "--device", "cpu", "--annotation", str(world.files["gff3"])]
    assert main(["scan", *common, "-o", str(tsv)]) == 0
    assert main(["scan", *common, "-o", str(bed)]) == 0
    assert tsv.read_text() == run(world, "tsv", world.files["gff3"])
    assert bed.read_text() == run(world, "bed", world.files["gff3"])
    only = tmp_path / "only.tsv"
    assert main(["scan", *common, "--site-types", "8mer,7mer-m8", "-o", str(only)]) == 0
    table, full = pd.read_csv(only, sep="\t"), pd.read_csv(tsv, sep="\t")
    assert len(table) > 0 and set(table["site_type"]) <= {"8mer", "7mer-m8"}
    assert len(table) == full["site_type"].isin(["8mer", "7mer-m8"]).sum()
