"""Reads to exon chains (gamut.splicing.reads, issue 29): reads drawn from the annotated
transcripts of a generated genome (genes on both strands, alternative isoforms, exons down to 3
nt, 1% errors (a fifth of them 1-nt indels), reads in either orientation) get the transcript they
came from; a read
outside every locus or without an alignment is 'unplaced'; chains re-score to their score."""
from __future__ import annotations

import gzip

import numpy as np
import pytest

from gamut.errors import InputError
from gamut.io.annotation import read_annotation
from gamut.splicing.reads import annotation_loci, assign_reads, chains_frame, read_placements
from gamut.splicing.simulate import simulated_genome, simulated_reads

@pytest.fixture(scope="module")
def simulated(tmp_path_factory):
    rng = np.random.default_rng(29)
    folder = tmp_path_factory.mktemp("reads")
    genome = simulated_genome(rng)
    (folder / "genes.gtf").write_text(genome.gtf())
    reads, paf = simulated_reads(rng, genome, 300, rate=0.01, indel_share=0.2)
    reads.append(("stray", "ACGT" * 30))
    paf.append(f"stray\t120\t0\t120\t+\tchr1\t{len(genome.sequence)}\t0\t120\t120\t120\t60")  # before every gene
    reads.append(("lost", "ACGT" * 30))  # no alignment at all
    with gzip.open(folder / "reads.paf.gz", "wt") as handle:
        handle.write("\n".join(paf) + "\n")
    return {"genome": {"chr1": genome.sequence}, "annotation": read_annotation(folder / "genes.gtf"), "reads": reads,
            "placements": read_placements(folder / "reads.paf.gz"), "folder": folder}


def test_loci_group_overlapping_transcripts(simulated):
    loci = annotation_loci(simulated["annotation"])
    assert len(loci) == 12
    assert all(len(locus.transcripts) == 3 for locus in loci)
    assert {locus.strand for locus in loci} == {1, -1}


def test_reads_get_the_transcript_they_came_from(simulated):
    chains = assign_reads(simulated["genome"], simulated["annotation"], simulated["reads"], simulated["placements"],
                          device="cpu")
    by_read = {c.read_id: c for c in chains}
    drawn = [c for c in chains if c.read_id.startswith("r")]
    right = sum(c.transcript == c.read_id.split("_", 1)[1] for c in drawn)
    assert right >= 0.99 * len(drawn), [(c.read_id, c.transcript) for c in drawn if c.transcript not in c.read_id]
    assert by_read["stray"].transcript == "unplaced" and by_read["lost"].transcript == "unplaced"
    identity = np.array([c.identity for c in drawn])
    assert identity.mean() > 0.98 and identity.min() > 0.85  # 1% errors (one in a 14-nt read: 0.93)
    frame = chains_frame(chains)
    assert list(frame.columns[:6]) == ["read_id", "locus", "strand", "transcript", "score", "identity"]
    assert (frame["transcript"] == "unplaced").sum() == 2


def test_chains_rescore_to_their_score(simulated):
    """Each chain's alignment, scored column by column (match 1, mismatch -1, gap -2), is its score."""
    from gamut.splicing.api import splice_many
    from gamut.splicing.reads import read_cases

    loci = annotation_loci(simulated["annotation"])
    cases, _ = read_cases(simulated["genome"], loci, simulated["reads"][:40], simulated["placements"], 100)
    for result in splice_many(cases, device="cpu"):
        a = result.alignment
        columns = [(x, y) for x, y in zip(a.base, a.target)]
        rescored = sum(-2 if "-" in (x, y) else 1 if x == y else -1 for x, y in columns)
        assert rescored == result.score


def test_bad_alignment_files_are_clear_errors(tmp_path):
    bad = tmp_path / "reads.paf"
    bad.write_text("r1\t100\t0\tx\n")
    with pytest.raises(InputError, match=r"reads.paf: line 1: not a PAF line"):
        read_placements(bad)
    with pytest.raises(InputError, match="PSL .* or PAF"):
        read_placements(tmp_path / "reads.sam")


def test_cli_reads_mode_writes_every_format(simulated, tmp_path, capsys):
    from gamut.cli import main

    folder = simulated["folder"]
    genome = folder / "genome.fa"
    genome.write_text(">chr1\n" + simulated["genome"]["chr1"] + "\n")
    reads = folder / "reads.fq.gz"
    with gzip.open(reads, "wt") as handle:
        for name, seq in simulated["reads"]:
            handle.write(f"@{name}\n{seq}\n+\n{'I' * len(seq)}\n")
    base = ["splice", "--genome", str(genome), "--annotation", str(folder / "genes.gtf"), "--reads", str(reads),
            "--alignments", str(folder / "reads.paf.gz"), "--device", "cpu"]
    outs = {ext: tmp_path / f"chains.{ext}" for ext in ("tsv", "jsonl", "parquet", "bed", "gff3")}
    for path in outs.values():
        assert main([*base, "-o", str(path)]) == 0
    err = capsys.readouterr().err
    assert "302 reads" in err and "2 unplaced" in err
    import pandas as pd

    table = pd.read_csv(outs["tsv"], sep="\t", keep_default_na=False)
    assert list(table.columns[:6]) == ["read_id", "locus", "strand", "transcript", "score", "identity"]
    assert len(table) == 302 and (table["transcript"] == "unplaced").sum() == 2
    assert pd.read_parquet(outs["parquet"])["transcript"].tolist() == table["transcript"].tolist()
    assert len(outs["jsonl"].read_text().splitlines()) == 302
    bed = [line.split("\t") for line in outs["bed"].read_text().splitlines()]
    assert len(bed) == 300 and all(len(f) == 12 and int(f[9]) == len(f[10].rstrip(",").split(",")) for f in bed)
    gff = outs["gff3"].read_text().splitlines()
    assert gff[0] == "##gff-version 3"
    ids = [dict(kv.split("=", 1) for kv in line.split("\t")[8].split(";"))["ID"] for line in gff[1:]]
    assert len(ids) == len(set(ids))  # unique IDs
    parents = {dict(kv.split("=", 1) for kv in line.split("\t")[8].split(";")).get("Parent")
               for line in gff[1:] if "\texon\t" in line}
    assert parents <= set(ids)  # every exon's parent exists


@pytest.mark.parametrize("extra, message", [
    (["--reads", "r.fa"], "reads mode needs --genome, --annotation, --alignments too"),
    ([], "give BASE EXONS TARGET"),
])
def test_cli_reads_mode_option_errors(capsys, extra, message):
    from gamut.cli import main

    try:
        code = main(["splice", *extra])
    except SystemExit as exc:
        code = exc.code
    assert code != 0 and message in capsys.readouterr().err


@pytest.mark.gpu
def test_gpu_gives_the_cpu_chains(simulated):
    """CPU == GPU on every read: chain, transcript and score."""
    args = (simulated["genome"], simulated["annotation"], simulated["reads"], simulated["placements"])
    cpu_chains = assign_reads(*args, device="cpu")
    gpu_chains = assign_reads(*args, device="cuda")
    assert [(c.exons, c.transcript, c.score) for c in gpu_chains] == [(c.exons, c.transcript, c.score)
                                                                      for c in cpu_chains]
