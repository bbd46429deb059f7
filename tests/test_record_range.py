"""A stripe's references travel to a worker of this machine as where they lie in the reference
file (:class:`gamut.scanning.fasta.RecordRange`), and the worker reads them itself: the same
records as the whole file's parse, for any run of records and any shape of FASTA miRanda reads;
a file that changed is an error, never other records."""
from __future__ import annotations

import gzip
import os
import pickle

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gamut.errors import InputError
from gamut.scanning.fasta import RecordRange, read_miranda_fasta
from gamut.scanning.params import ScanParams
from gamut.scanning.pipeline.job import ScanJob

_letters = st.text(alphabet="ACGUTNacgun", min_size=1, max_size=40)
_breaks = st.sampled_from(["\n", "\r\n", "\n\n", "\n  \n"])


@st.composite
def fasta_text(draw) -> str:
    """FASTA as miRanda reads it: ids with descriptions or none, CRLF, blank lines, sequences over
    several lines, and records that begin in the middle of a line (a '>' there starts one)."""
    parts = []
    for k in range(draw(st.integers(1, 12))):
        header = f">r{k}" + draw(st.sampled_from(["", " some text", "\tx>y", " a b\r"]))
        lines = draw(st.lists(_letters, min_size=1, max_size=3))
        sep = draw(_breaks)
        # No line end after the letters: the next record's '>' comes in the middle of the line.
        parts.append(header + "\n" + sep.join(lines) + ("" if draw(st.booleans()) else sep))
    return "".join(parts)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(fasta_text(), st.data())
def test_a_run_of_records_read_again_is_the_same(tmp_path, text, data):
    path = tmp_path / "r.fa"
    path.write_text(text)
    records = read_miranda_fasta(path)
    a = data.draw(st.integers(0, len(records) - 1))
    b = data.draw(st.integers(a + 1, len(records)))
    ranged = RecordRange.of(records[a:b])
    assert ranged is not None and len(ranged) == b - a
    travelled = pickle.loads(pickle.dumps(ranged))
    assert list(travelled) == records[a:b]
    assert [r.id for r in travelled] == [r.id for r in records[a:b]]


def test_what_travels_is_small_and_the_records_are_read_once(tmp_path):
    path = tmp_path / "r.fa"
    path.write_text("".join(f">r{k} d\n{'ACGU' * 500}\n" for k in range(200)))
    records = read_miranda_fasta(path)
    ranged = RecordRange.of(records[50:150])
    assert len(pickle.dumps(ranged)) < 1000
    first = ranged.records()
    assert ranged.records() is first and first == records[50:150]
    assert len(pickle.dumps(ranged)) < 1000  # read records never travel


def test_a_changed_file_is_an_error(tmp_path):
    path = tmp_path / "r.fa"
    path.write_text(">a\nACGU\n>b\nGGCC\n>c\nUUAA\n")
    ranged = RecordRange.of(read_miranda_fasta(path)[1:])
    path.write_text(">a\nACGU\n>b\nGGCCA\n>c\nUUAA\n")
    with pytest.raises(InputError, match="not the file the scan read"):
        ranged.records()
    path.unlink()
    with pytest.raises(InputError, match="cannot read"):
        ranged.records()


def test_a_relative_path_is_read_from_any_folder(tmp_path, monkeypatch):
    """A worker (a Dask worker above all) may run in another folder than the one the path was given in."""
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "r.fa").write_text(">a\nACGU\n>b\nGGCC\n")
    monkeypatch.chdir(tmp_path / "in")
    records = read_miranda_fasta("r.fa")
    ranged = pickle.loads(pickle.dumps(RecordRange.of(records[1:])))
    monkeypatch.chdir(tmp_path)
    assert list(ranged) == records[1:]


def test_only_plain_files_give_ranges(tmp_path):
    text = ">a\nACGU\n>b\nGGCC\n"
    gz = tmp_path / "r.fa.gz"
    gz.write_bytes(gzip.compress(text.encode()))
    assert RecordRange.of(read_miranda_fasta(gz)) is None
    plain = tmp_path / "r.fa"
    plain.write_text(text)
    both = read_miranda_fasta(plain)
    assert RecordRange.of([both[1], both[0]]) is None  # not in file order
    assert RecordRange.of([]) is None


def test_a_worker_job_of_a_plain_file_carries_the_range(tmp_path):
    query, ref = tmp_path / "q.fa", tmp_path / "r.fa"
    query.write_text(">q\nUGAGGUAGUAGGUUGUAUAGUU\n")
    ref.write_text(">r1\nACUAUACAACCUACUACCUCA\n>r2\nCGCCAAUAUUUACGUGCUGCU\n>r3\nACGUACGU\n")
    job = ScanJob.from_files(str(query), str(ref), ScanParams(), device="cpu", progress=False)
    stripe = job.of_references(1, 3, from_file=True)
    assert isinstance(stripe.references, RecordRange)
    assert list(pickle.loads(pickle.dumps(stripe)).scan_input.references) == list(job.references[1:3])
    assert isinstance(job.of_references(1, 3).references, list)  # (a Dask worker elsewhere: the records)


def test_the_main_process_of_a_striped_scan_never_reads_a_stripe(tmp_path, monkeypatch):
    """The stripes travel as ranges and only the workers read them: a read in this process (the
    writer's sizes, a job pickled with its sequences) fails the test."""
    from pathlib import Path

    from scan_host import build_scan_host, host_engine_factory

    from gamut.scanning.pipeline.partitioned import run_partitioned
    from gamut.scanning.pipeline.runners import make_sinks, run_in_process

    monkeypatch.setattr(RecordRange, "_read", lambda self: pytest.fail("a stripe was read in the main process"))
    data = Path(__file__).parent / "data" / "miranda" / "real_trim"
    (tmp_path / "host").mkdir()
    lib = build_scan_host(tmp_path / "host")
    outs = []
    for name, workers in (("striped", [0, 0]), ("one", None)):
        out = tmp_path / f"{name}.tsv"
        job = ScanJob.from_files(str(data / "query.fa"), str(data / "reference.fa"), ScanParams(), outputs=[(str(out), "tsv")],
                                 device="cpu", threads=1, progress=False, partition_cells=200_000)
        if workers:
            run_partitioned(job, make_sinks(job), host_engine_factory(lib), gpu_workers=workers)
        else:
            run_in_process(job, make_sinks(job), host_engine_factory(lib))
        outs.append(out.read_bytes())
    assert outs[0] == outs[1] and outs[0].count(b"\n") > 10


def test_a_file_changed_while_it_was_read_gives_no_range(tmp_path, monkeypatch):
    """The file's status is taken before its bytes are read and checked after: a file written to in
    between is read as it came, but never again by a worker (its records travel instead)."""
    import io

    from gamut.io import inputs

    path = tmp_path / "r.fa"
    path.write_text(">a\nACGU\n>b\nGGCC\n")

    class ChangedWhileRead(io.BufferedReader):
        def readinto(self, buffer):
            got = super().readinto(buffer)
            if got:
                path.write_text(">a\nACGU\n>b\nGGCA\n")
            return got

    monkeypatch.setattr(inputs, "open_input", lambda name: ChangedWhileRead(io.FileIO(name, "rb")))
    records = read_miranda_fasta(path)
    assert records[1].sequence == b"GGCC" and RecordRange.of(records) is None


def test_a_stripe_that_no_longer_parses_says_the_file_changed(tmp_path):
    path = tmp_path / "r.fa"
    path.write_text(">a\nACGU\n>b\nGGCC\n>c\nUUAA\n")
    ranged = RecordRange.of(read_miranda_fasta(path)[1:])
    source = ranged.source
    with open(path, "r+b") as handle:  # the same size and times, other bytes: an illegal letter
        handle.seek(12)
        handle.write(b"!")
    os.utime(path, ns=(source.mtime_ns, source.mtime_ns))
    with pytest.raises(InputError, match="not the file the scan read"):
        ranged.records()
