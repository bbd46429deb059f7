"""Reads placed by minimap2 (mappy) on a pool of threads (gamut.splicing.read_mapping, issue 44
item 9): without --alignments, gamut splice --reads writes the table it writes with the reads'
PAF given, byte for byte, on 1, 2 or 4 threads and whatever the batch sizes; an error of either
stage is one line and leaves no output."""
from __future__ import annotations

import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gamut.cli import main
from gamut.io.annotation import read_annotation
from gamut.splicing.reads import assign_reads, read_placements
from gamut.splicing.simulate import simulated_genome, simulated_reads


@pytest.fixture(scope="module")
def simulated(tmp_path_factory):
    """Reads of 400-2,000 nt (long enough for minimap2 to place every one) from the isoforms of 8
    genes on both strands, 1% errors (a fifth indels), either orientation; one read of random
    letters that neither the PAF nor minimap2 places."""
    rng = np.random.default_rng(44)
    folder = tmp_path_factory.mktemp("mapped")
    genome = simulated_genome(rng, genes=8, exon_length=(100, 300), exons=(3, 7))
    reads, paf = simulated_reads(rng, genome, 120, rate=0.01, indel_share=0.2, lengths=(400, 2000))
    reads.append(("stray", "".join(np.array(list("ACGT"))[rng.integers(0, 4, 300)])))
    (folder / "genome.fa").write_text(">chr1\n" + genome.sequence + "\n")
    (folder / "genes.gtf").write_text(genome.gtf())
    (folder / "reads.fa").write_text("".join(f">{name}\n{seq}\n" for name, seq in reads))
    (folder / "reads.paf").write_text("\n".join(paf) + "\n")
    return {"folder": folder, "reads": reads, "genome": {"chr1": genome.sequence},
            "annotation": read_annotation(folder / "genes.gtf"), "placements": read_placements(folder / "reads.paf")}


def _command(folder, *extra: str) -> list[str]:
    return ["splice", "--genome", str(folder / "genome.fa"), "--annotation", str(folder / "genes.gtf"), "--reads",
            str(folder / "reads.fa"), "--device", "cpu", *extra]


def test_mapped_reads_give_the_table_of_their_paf(simulated, tmp_path):
    """Placed by minimap2 on 1, 2 or 4 threads (4: more than this machine's cores), every read
    gets the row it gets with its PAF given: the same table, byte for byte."""
    pytest.importorskip("mappy")
    folder = simulated["folder"]
    assert main(_command(folder, "--alignments", str(folder / "reads.paf"), "-o", str(tmp_path / "paf.tsv"))) == 0
    given_paf = (tmp_path / "paf.tsv").read_text()
    rows = [line.split("\t") for line in given_paf.splitlines()[1:]]
    assert len(rows) == 121 and sum(r[3] == r[0].split("_", 1)[-1] for r in rows) >= 118
    assert [r[3] for r in rows if r[0] == "stray"] == ["unplaced"]
    for threads in ("1", "2", "4"):
        out = tmp_path / f"mapped{threads}.tsv"
        assert main(_command(folder, "--threads", threads, "-o", str(out))) == 0
        assert out.read_text() == given_paf, threads


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batch=st.integers(1, 60), task=st.integers(1, 20), threads=st.integers(1, 3))
def test_batch_and_task_sizes_do_not_change_the_chains(simulated, batch, task, threads):
    """Reads in batches of 1-60, tasks of 1-20 reads, on 1-3 threads: the chains of the PAF."""
    pytest.importorskip("mappy")
    from gamut.splicing.read_mapping import ReadMapper

    args = (simulated["genome"], simulated["annotation"], simulated["reads"][::3])
    mapper = ReadMapper(simulated["folder"] / "genome.fa", threads, reads_per_task=task)
    by_mapper = assign_reads(*args, mapper, device="cpu", batch_size=batch)
    assert by_mapper == assign_reads(*args, simulated["placements"], device="cpu")


def test_placement_runs_one_batch_ahead_and_no_further(simulated):
    """While the caller works on batch k, the pool has batch k + 1 (placement overlaps the DP of
    the batch before), and no batch after it is read (memory stays that of a few batches)."""
    pytest.importorskip("mappy")
    from gamut.splicing.read_mapping import ReadMapper

    reads = simulated["reads"][:60]
    drawn = []

    def batches():
        for k in range(6):
            drawn.append(k)
            yield reads[10 * k:10 * k + 10]

    mapper = ReadMapper(simulated["folder"] / "genome.fa", 2)
    seen = [(len(drawn), batch == reads[10 * k:10 * k + 10], len(spans))
            for k, (batch, spans) in enumerate(mapper.placed_batches(batches()))]
    assert seen == [(min(k + 2, 6), True, 10) for k in range(6)]


def _one_line_error(capsys, argv: list[str]) -> str:
    assert main(argv) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("gamut: error: "), err
    return err[0]


def test_a_bad_letter_in_a_mapped_read_is_one_line(simulated, tmp_path, capsys):
    """minimap2 reads a J as N and places the read; the DP's encoding then names the read and letter."""
    pytest.importorskip("mappy")
    name, seq = simulated["reads"][5]
    (tmp_path / "reads.fa").write_text(f">{simulated['reads'][0][0]}\n{simulated['reads'][0][1]}\n"
                                       f">{name}\n{seq[:9]}J{seq[10:]}\n")
    argv = _command(simulated["folder"], "-o", str(tmp_path / "out.tsv"))
    argv[argv.index("--reads") + 1] = str(tmp_path / "reads.fa")
    assert f"read {name}: unknown letter 'J' at position 10" in _one_line_error(capsys, argv)
    assert not (tmp_path / "out.tsv").exists()


def test_an_error_in_a_placement_thread_is_one_line(simulated, tmp_path, capsys, monkeypatch):
    """An error raised inside the pool (out of memory in the third task here) ends the run with
    one line and no output; the tasks after it are cancelled or finish, none is left running."""
    pytest.importorskip("mappy")
    import itertools
    import threading

    from gamut.splicing.read_mapping import ReadMapper

    calls = itertools.count(1)  # next() is atomic: one task is the third
    real = ReadMapper._map

    def failing(self, reads):
        if next(calls) == 3:
            raise MemoryError
        return real(self, reads)

    monkeypatch.setattr(ReadMapper, "_map", failing)
    line = _one_line_error(capsys, _command(simulated["folder"], "--threads", "2", "-o", str(tmp_path / "out.tsv")))
    assert line.startswith("gamut: error: out of memory in gamut splice")
    assert not (tmp_path / "out.tsv").exists()
    assert not [t for t in threading.enumerate() if t.name.startswith("gamut-minimap2")]


def test_without_mappy_placing_reads_is_one_line(simulated, tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "mappy", None)  # import mappy raises ImportError
    line = _one_line_error(capsys, _command(simulated["folder"], "-o", str(tmp_path / "out.tsv")))
    assert "--alignments" in line and "pip install mappy" in line
    assert not (tmp_path / "out.tsv").exists()


def test_a_genome_minimap2_cannot_read_is_one_line(tmp_path):
    pytest.importorskip("mappy")
    from gamut.errors import InputError
    from gamut.splicing.read_mapping import ReadMapper

    with pytest.raises(InputError, match="minimap2 could not read or index the genome"):
        ReadMapper(tmp_path / "absent.fa", 1)
