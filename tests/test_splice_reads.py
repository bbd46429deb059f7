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
    genome = simulated_genome(rng, exons=(2, 22))  # transcripts of 1-20 exons
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
    assert all(len(locus.transcripts) == (3 if len(locus.exons) > 2 else 2) for locus in loci)
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


def test_batches_of_reads_give_the_same_chains(simulated):
    """Reads taken a few at a time (from a generator: a file read as needed) get the same chains
    as all at once, unplaced ones included, in their order."""
    args = (simulated["genome"], simulated["annotation"])
    whole = assign_reads(*args, simulated["reads"], simulated["placements"], device="cpu")
    streamed = assign_reads(*args, (read for read in simulated["reads"]), simulated["placements"], device="cpu",
                            batch_size=7)
    assert streamed == whole and len(whole) == len(simulated["reads"])


def test_chains_rescore_to_their_score(simulated):
    """Each chain's alignment, scored column by column (match 1, mismatch -1, gap -2), is its score."""
    from gamut.splicing.api import splice_many
    from gamut.splicing.read_batch import LocusTable, read_batch

    table = LocusTable(annotation_loci(simulated["annotation"]))
    batch = read_batch(simulated["genome"], table, simulated["reads"][:40], simulated["placements"], 100).batch
    assert len(batch) == 40
    for result in splice_many([batch.case(c) for c in range(len(batch))], device="cpu"):
        a = result.alignment
        columns = [(x, y) for x, y in zip(a.base, a.target)]
        rescored = sum(-2 if "-" in (x, y) else 1 if x == y else -1 for x, y in columns)
        assert rescored == result.score


def _cigar_runs(cigar: str) -> list[tuple[int, str]]:
    import re

    return [(int(n), op) for n, op in re.findall(r"(\d+)([MIDN])", cigar)]


def test_cigars_spell_the_chain_on_the_genome(simulated):
    """Each placed read's CIGAR, walked along the genome from its first exon, covers exactly the
    chain's exons (M and D), jumps the introns (N), spells the read as the genome's strand reads it
    (M and I), and its matching letters give the reported identity."""
    from gamut.splicing.model import reverse_complement

    chains = assign_reads(simulated["genome"], simulated["annotation"], simulated["reads"], simulated["placements"],
                          device="cpu")
    genome, sequences = simulated["genome"]["chr1"], dict(simulated["reads"])
    minus = 0
    for chain in chains:
        if chain.locus is None:
            continue
        read = sequences[chain.read_id]
        if simulated["placements"][chain.read_id].strand < 0:
            read = reverse_complement(read)
        g, r, blocks, matches, columns = chain.exons[0][0], 0, [], 0, 0
        for n, op in _cigar_runs(chain.cigar):
            if op in "MD":
                if blocks and blocks[-1][1] == g:
                    blocks[-1][1] += n
                else:
                    blocks.append([g, g + n])
            if op == "M":
                matches += sum(a == b for a, b in zip(genome[g:g + n], read[r:r + n]))
            g += n if op in "MDN" else 0
            r += n if op in "MI" else 0
            columns += n if op != "N" else 0
        assert [tuple(b) for b in blocks] == list(chain.exons), chain  # (no two simulated exons touch)
        assert r == len(read) and g == chain.exons[-1][1]
        assert matches == round(chain.identity * columns)
        minus += chain.strand < 0
    assert minus > 50


def test_a_bad_letter_in_a_placed_read_is_an_error_naming_it(simulated):
    """A placed read with a letter outside the alphabet is an error naming the read and position;
    the same letter in a read that is not placed is never read."""
    reads = [(name, seq) for name, seq in simulated["reads"][:5]]
    name, seq = reads[2]
    reads[2] = (name, seq[:7] + "J" + seq[8:])
    with pytest.raises(InputError, match=f"read {name}: unknown letter 'J' at position 8"):
        assign_reads(simulated["genome"], simulated["annotation"], reads, simulated["placements"], device="cpu")
    reads[2] = ("lost", seq[:7] + "J" + seq[8:])  # no alignment: unplaced
    chains = assign_reads(simulated["genome"], simulated["annotation"], reads, simulated["placements"], device="cpu")
    assert chains[2].transcript == "unplaced"


def test_tsv_is_what_pandas_writes(simulated):
    from gamut.splicing.reads import chains_tsv

    chains = assign_reads(simulated["genome"], simulated["annotation"], simulated["reads"], simulated["placements"],
                          device="cpu")
    assert chains_tsv(chains) == chains_frame(chains).to_csv(sep="\t", index=False, na_rep="")
    assert chains_tsv([]) == chains_frame([]).to_csv(sep="\t", index=False, na_rep="")


def test_sam_alignments_place_reads_and_give_blocks(tmp_path, simulated):
    """SAM records (minimap2 -a, STAR, HISAT2): a spliced CIGAR gives the span and the blocks, the
    reverse flag the strand, NM the mismatches; unmapped records and headers are skipped; the best
    record of a read wins; a SAM of the simulated reads places them as their PAF does."""
    from gamut.splicing.reads import alignment_records, evidence_exons

    sam = tmp_path / "reads.sam"
    sam.write_text("@HD\tVN:1.6\n@SQ\tSN:chr1\tLN:5000\n"
                   "a\t0\tchr1\t101\t60\t5S10M2I3M100N20M1D5M\t*\t0\t0\t*\t*\tNM:i:4\n"
                   "a\t272\tchr1\t2001\t0\t40M\t*\t0\t0\t*\t*\tNM:i:0\n"
                   "b\t16\tchr1\t11\t60\t4=1X5=\t*\t0\t0\t*\t*\n"
                   "c\t4\t*\t0\t0\t*\t*\t0\t0\tACGT\t*\n")
    records = list(alignment_records(sam))
    assert [r for r, _, _ in records] == ["a", "a", "b"]
    _, placed, blocks = records[0]
    assert (placed.chrom, placed.strand, placed.start, placed.end) == ("chr1", 1, 100, 239)
    assert blocks == [(100, 113), (213, 239)] and placed.matches == 13 + 25 - (4 - 3)
    assert records[2][1].strand == -1 and records[2][1].matches == 9
    assert read_placements(sam)["a"].end == 2040  # the secondary record matches more letters (40 > 37)
    assert evidence_exons(sam)[:2] == [("chr1", 100, 113), ("chr1", 213, 239)]
    bad = tmp_path / "bad.sam"
    bad.write_text("a\t0\tchr1\t101\t60\t10Q\t*\t0\t0\t*\t*\n")
    with pytest.raises(InputError, match=r"bad.sam: line 1: not a SAM line"):
        read_placements(bad)
    # The simulated reads as SAM (one block per exon, in transcript order on the genome).
    lines = []
    for read_id, seq in simulated["reads"][:60]:
        if read_id not in simulated["placements"]:
            continue
        placed = simulated["placements"][read_id]
        lines.append(f"{read_id}\t{16 if placed.strand < 0 else 0}\tchr1\t{placed.start + 1}\t60\t"
                     f"{placed.end - placed.start}M\t*\t0\t0\t*\t*")
    (tmp_path / "sim.sam").write_text("\n".join(lines) + "\n")
    by_sam = read_placements(tmp_path / "sim.sam")
    assert {k: (p.chrom, p.strand, p.start, p.end) for k, p in by_sam.items()} == {
        k: (p.chrom, p.strand, p.start, p.end) for k, p in simulated["placements"].items() if k in by_sam}


def test_bad_alignment_files_are_clear_errors(tmp_path):
    bad = tmp_path / "reads.paf"
    bad.write_text("r1\t100\t0\tx\n")
    with pytest.raises(InputError, match=r"reads.paf: line 1: not a PAF line"):
        read_placements(bad)
    with pytest.raises(InputError, match="PSL .*, PAF .* or SAM"):
        read_placements(tmp_path / "reads.bam")


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
    (["--reads", "r.fa"], "reads mode needs --genome, --annotation too"),
    (["--evidence", "e.psl", "b.fa", "e.bed", "t.fa"], "--evidence is for reads mode"),
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


def test_a_partial_read_is_novel_but_compatible(tmp_path):
    """A read of two inner exons of an isoform equals no isoform, and is part of those that hold them."""
    from gamut.splicing.simulate import SimulatedGenome

    rng = np.random.default_rng(5)
    letters = "".join(np.array(list("ACGT"))[rng.integers(0, 4, 3000)])
    exons = [(200, 300), (500, 620), (900, 1010), (1300, 1400), (1700, 1800)]
    genome = SimulatedGenome(letters, {"t.1": ("+", exons[:4]), "t.2": ("+", [exons[0], exons[2], exons[3]]),
                                       "t.3": ("+", exons[:3] + [exons[4]])})
    (tmp_path / "a.gtf").write_text(genome.gtf())
    read = letters[500:620] + letters[900:1010]
    (tmp_path / "r.paf").write_text(f"p\t{len(read)}\t0\t{len(read)}\t+\tchr1\t3000\t500\t1010\t{len(read)}\t{len(read)}\t60\n")
    [chain] = assign_reads({"chr1": letters}, read_annotation(tmp_path / "a.gtf"), [("p", read)],
                           read_placements(tmp_path / "r.paf"), device="cpu")
    assert chain.exons == ((500, 620), (900, 1010))
    assert chain.transcript == "novel" and chain.novel_junctions == ()  # the junction is annotated (t.1, t.3)
    assert chain.compatible == ("t.1", "t.3")


def test_evidence_exons_join_the_candidates(tmp_path):
    """An exon only another source knows (a PSL block here) is taken when the read has it: the
    chain is novel, with the junctions no transcript has."""
    from gamut.splicing.reads import evidence_exons
    from gamut.splicing.simulate import SimulatedGenome

    rng = np.random.default_rng(6)
    letters = "".join(np.array(list("ACGT"))[rng.integers(0, 4, 3000)])
    genome = SimulatedGenome(letters, {"t.1": ("+", [(200, 300), (900, 1010), (1700, 1800)])})
    (tmp_path / "a.gtf").write_text(genome.gtf())
    read = letters[200:300] + letters[500:620] + letters[900:1010] + letters[1700:1800]
    (tmp_path / "r.paf").write_text(f"p\t{len(read)}\t0\t{len(read)}\t+\tchr1\t3000\t200\t1800\t{len(read)}\t{len(read)}\t60\n")
    psl = "\t".join(["120", "0", "0", "0", "0", "0", "0", "0", "+", "est", "120", "0", "120", "chr1", "3000", "500",
                     "620", "1", "120,", "0,", "500,"])
    (tmp_path / "est.psl").write_text(psl + "\n")
    evidence = evidence_exons(tmp_path / "est.psl")
    assert evidence == [("chr1", 500, 620)]
    args = ({"chr1": letters}, read_annotation(tmp_path / "a.gtf"), [("p", read)], read_placements(tmp_path / "r.paf"))
    [without] = assign_reads(*args, device="cpu")
    [with_evidence] = assign_reads(*args, device="cpu", evidence=evidence)
    assert without.exons == ((200, 300), (900, 1010), (1700, 1800))
    assert with_evidence.exons == ((200, 300), (500, 620), (900, 1010), (1700, 1800))
    assert with_evidence.transcript == "novel" and with_evidence.novel_junctions == ((300, 500), (620, 900))
    assert with_evidence.score > without.score


def test_minimap2_places_the_reads_when_no_alignments_are_given(simulated):
    """Without --alignments, minimap2's spliced mapping (mappy) places the reads: the same chains
    as with the simulator's placements for the reads long enough to map."""
    pytest.importorskip("mappy")
    from gamut.splicing.read_mapping import mapped_placements

    folder = simulated["folder"]
    genome = folder / "genome_mappy.fa"
    genome.write_text(">chr1\n" + simulated["genome"]["chr1"] + "\n")
    long_reads = [(name, seq) for name, seq in simulated["reads"][:60] if len(seq) >= 150]
    placements = mapped_placements(genome, long_reads, threads=2)
    assert len(placements) >= 0.9 * len(long_reads)
    mapped = [(name, seq) for name, seq in long_reads if name in placements]
    args = (simulated["genome"], simulated["annotation"], mapped)
    by_mappy = assign_reads(*args, placements, device="cpu")
    by_truth = assign_reads(*args, simulated["placements"], device="cpu")
    assert [c.transcript for c in by_mappy] == [c.transcript for c in by_truth]


@pytest.mark.parametrize("rate, least", [(0.01, 0.99), (0.05, 0.95), (0.10, 0.90)])
def test_one_to_twenty_exons_at_one_to_ten_percent_errors(rate, least):
    """Issue 29's simulation: isoforms of 1-20 exons (from 3 nt), reads of both orientations with
    substitutions and indels at 1-10%: at least 99% right at 1% (and most at 5 and 10%)."""
    rng = np.random.default_rng(int(rate * 1000))
    genome = simulated_genome(rng, genes=10, exons=(2, 22))
    sizes = [len(exons) for _, exons in genome.transcripts.values()]
    assert min(sizes) == 1 and max(sizes) >= 15
    reads, paf = simulated_reads(rng, genome, 150, rate=rate, indel_share=0.3)
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "a.gtf").write_text(genome.gtf())
        (Path(tmp) / "r.paf").write_text("\n".join(paf) + "\n")
        chains = assign_reads({"chr1": genome.sequence}, read_annotation(Path(tmp) / "a.gtf"), reads,
                              read_placements(Path(tmp) / "r.paf"), device="cpu")
    right = np.mean([c.transcript == c.read_id.split("_", 1)[1] for c in chains])
    assert right >= least
