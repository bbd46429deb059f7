"""Inputs read once (issue 44, item 4): every command that reads FASTA gives the same result from a
file, from standard input (``-``), from a FIFO and from a compressed pipe (``/dev/stdin``); and
issue 44's input checks of item 10: a -restrict file naming unknown records, duplicate record
names, header bytes that are not UTF-8.

Commands run in their own processes with a timeout, and a FIFO's writer is a process of its own:
an input opened twice hangs, and the hang fails the test instead of hanging the run."""
from __future__ import annotations

import bz2
import contextlib
import gzip
import io
import lzma
import os
import re
import subprocess
import sys
import threading
from pathlib import Path
from typing import Iterator

import numpy as np
import pytest

from gamut.cli import main
from gamut.errors import UsageError
from gamut.io.fasta import read_fasta, sequence_file_format
from gamut.io.inputs import check_read_once, is_stream, open_input, read_input_bytes

DATA = Path(__file__).parent / "data"
GOLDEN = DATA / "miranda" / "real_default"
TIMEOUT = 240
#: Lines gamut may print on a first run in a fresh environment (gamut.cache), not warnings.
NOTICES = ("gamut: first run", "gamut: compil")  # the compiling notice (gamut.cache), which a compile may show
#: Copies ``sys.argv[1]`` into the FIFO ``sys.argv[2]`` (a process of its own, so that a reader that
#: never opens the FIFO, or opens it twice, cannot hang the test: it is killed at the end).
COPY = "import shutil, sys; shutil.copyfileobj(open(sys.argv[1], 'rb'), open(sys.argv[2], 'wb'))"


def zstd_compress(data: bytes) -> bytes:
    if sys.version_info >= (3, 14):
        from compression import zstd
    else:
        from backports import zstd
    return zstd.compress(data)


COMPRESSORS = {"plain": bytes, "gzip": gzip.compress, "bzip2": bz2.compress, "xz": lzma.compress,
               "zstd": zstd_compress}


def gamut(args: list[str], cwd: Path, stdin: bytes = b"", **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gamut", *args], cwd=cwd, input=stdin, capture_output=True,
                          timeout=TIMEOUT, env=dict(os.environ, **env))


def warnings_of(stderr: bytes) -> list[str]:
    return [line for line in stderr.decode(errors="replace").splitlines() if not line.startswith(NOTICES)]


@contextlib.contextmanager
def fifo_with(source: Path, folder: Path, name: str = "input.fifo") -> Iterator[Path]:
    """A FIFO in ``folder`` that a writer process fills with ``source``'s bytes; the writer must have
    written them all (the reader read the FIFO to its end, once)."""
    path = folder / name
    os.mkfifo(path)
    writer = subprocess.Popen([sys.executable, "-c", COPY, str(source), str(path)], stderr=subprocess.PIPE)
    try:
        yield path
        _, err = writer.communicate(timeout=TIMEOUT)
        assert writer.returncode == 0, err.decode()
    finally:
        if writer.poll() is None:
            writer.kill()
            writer.wait()
        path.unlink()


def each_way(argv: list[str], source: Path, cwd: Path) -> dict[str, subprocess.CompletedProcess]:
    """``argv`` run with its ``IN`` argument read from ``source`` in each way: the file itself, ``-``
    (the bytes on standard input), a FIFO, and ``/dev/stdin`` on a gzip-compressed pipe."""
    data = source.read_bytes()
    runs = {"file": gamut([str(source) if a == "IN" else a for a in argv], cwd),
            "stdin": gamut(["-" if a == "IN" else a for a in argv], cwd, data),
            "gzip-pipe": gamut(["/dev/stdin" if a == "IN" else a for a in argv], cwd, gzip.compress(data))}
    with fifo_with(source, cwd) as fifo:
        runs["fifo"] = gamut([str(fifo) if a == "IN" else a for a in argv], cwd)
    for way, run in runs.items():
        assert run.returncode == 0, (way, run.stderr.decode())
        assert warnings_of(run.stderr) == warnings_of(runs["file"].stderr), way
    return runs


def results_after_settings(text: bytes) -> bytes:
    """miRanda text after its settings block (which names the input files)."""
    lines = text.splitlines(keepends=True)
    start = next(k for k, line in enumerate(lines) if line.startswith(b"Scaling Parameter:"))
    return b"".join(lines[start + 2:])


# --------------------------------------------------------------------------- every command, every way

def test_scan_reference_from_stdin_fifo_and_pipe_gives_the_files_hits(tmp_path):
    """The reference (139 kB: more than a pipe holds) read each way: the same table, byte for byte."""
    runs = each_way(["scan", str(GOLDEN / "query.fa"), "IN", "--device", "cpu"], GOLDEN / "reference.fa", tmp_path)
    assert runs["file"].stdout.count(b"\n") > 10
    assert {way: run.stdout for way, run in runs.items()} == dict.fromkeys(runs, runs["file"].stdout)


def test_miranda_query_read_each_way_gives_the_golden_output(tmp_path):
    runs = each_way(["miranda", "IN", str(GOLDEN / "reference.fa"), "--device", "cpu"], GOLDEN / "query.fa", tmp_path)
    expected = (GOLDEN / "expected.txt").read_bytes()
    for way, run in runs.items():
        assert results_after_settings(run.stdout) == expected, way
    assert b"Query Filename: \t-\n" in runs["stdin"].stdout  # the input as given, as miRanda shows it


@pytest.mark.parametrize("command", ["fold", "access"])
def test_fold_and_access_read_each_way(command, tmp_path):
    runs = each_way([command, "IN", "--device", "cpu"], DATA / "fold" / "mirbase_hairpins.fa", tmp_path)
    assert runs["file"].stdout.count(b"hsa-") >= 5 or len(runs["file"].stdout) > 1000
    assert {way: run.stdout for way, run in runs.items()} == dict.fromkeys(runs, runs["file"].stdout)


@pytest.mark.parametrize("which", ["base", "target"])
def test_splice_reads_base_and_target_each_way(which, tmp_path):
    files = {"base": DATA / "splice" / "gene.fa", "target": DATA / "splice" / "cdna.fa"}
    argv = ["splice", "IN" if which == "base" else str(files["base"]), str(DATA / "splice" / "candidates.gff3"),
            "IN" if which == "target" else str(files["target"]), "--device", "cpu"]
    runs = each_way(argv, files[which], tmp_path)
    assert runs["file"].stdout.count(b"# target") == 3
    assert {way: run.stdout for way, run in runs.items()} == dict.fromkeys(runs, runs["file"].stdout)


@pytest.fixture(scope="module")
def reads_mode(tmp_path_factory) -> Path:
    """A generated genome, its annotation, FASTQ reads (named without a suffix: told by the content)
    and their alignments."""
    from gamut.splicing.simulate import simulated_genome, simulated_reads

    folder = tmp_path_factory.mktemp("reads")
    rng = np.random.default_rng(44)
    genome = simulated_genome(rng, genes=3, exons=(2, 6))
    reads, paf = simulated_reads(rng, genome, 30, rate=0.01)
    (folder / "genome.fa").write_text(f">chr1\n{genome.sequence}\n")
    (folder / "genes.gtf").write_text(genome.gtf())
    (folder / "reads").write_text("".join(f"@{name}\n{seq}\n+\n{'I' * len(seq)}\n" for name, seq in reads))
    (folder / "reads.paf").write_text("\n".join(paf) + "\n")
    return folder


def test_splice_reads_mode_genome_each_way(reads_mode, tmp_path):
    argv = ["splice", "--genome", "IN", "--annotation", str(reads_mode / "genes.gtf"), "--reads",
            str(reads_mode / "reads"), "--alignments", str(reads_mode / "reads.paf"), "--device", "cpu"]
    runs = each_way(argv, reads_mode / "genome.fa", tmp_path)
    assert runs["file"].stdout.count(b"\n") == 31  # a header and a line per read
    assert {way: run.stdout for way, run in runs.items()} == dict.fromkeys(runs, runs["file"].stdout)


def test_splice_reads_mode_reads_from_stdin_and_genome_from_a_fifo_for_minimap2(reads_mode, tmp_path):
    """minimap2 (mappy) indexes a genome file by its name: a genome from a FIFO is written to a
    temporary file for it; the FASTQ reads come on standard input. The chains are the files'."""
    pytest.importorskip("mappy")
    argv = ["--annotation", str(reads_mode / "genes.gtf"), "--device", "cpu", "--threads", "1"]
    from_files = gamut(["splice", "--genome", str(reads_mode / "genome.fa"), "--reads", str(reads_mode / "reads"),
                        *argv], tmp_path)
    assert from_files.returncode == 0, from_files.stderr.decode()
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    with fifo_with(reads_mode / "genome.fa", tmp_path) as fifo:
        piped = gamut(["splice", "--genome", str(fifo), "--reads", "-", *argv], tmp_path,
                      (reads_mode / "reads").read_bytes(), TMPDIR=str(temporary))
    assert piped.returncode == 0, piped.stderr.decode()
    assert piped.stdout == from_files.stdout and piped.stdout.count(b"\n") == 31
    assert list(temporary.iterdir()) == []  # the genome's temporary file is gone


def test_one_input_from_stdin_and_the_output_to_stdout(tmp_path):
    """``-`` as an input and ``-o -`` together: standard input in, standard output out."""
    query = (GOLDEN / "query.fa").read_bytes()
    run = gamut(["scan", "-", str(GOLDEN / "reference.fa"), "--device", "cpu", "-o", "-", "--format", "miranda"],
                tmp_path, query)
    assert run.returncode == 0, run.stderr.decode()
    assert results_after_settings(run.stdout) == (GOLDEN / "expected.txt").read_bytes()


def test_a_served_command_reads_its_clients_stdin_and_fifos(tmp_path):
    """Through ``gamut serve``, ``-`` and ``/dev/stdin`` are the client's standard input."""
    sock = tmp_path / "s.sock"
    env = dict(os.environ, GAMUT_SERVER=str(sock))

    def served(args: list[str], stdin: bytes = b"") -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "gamut", *args], env=env, cwd=tmp_path, input=stdin,
                              capture_output=True, timeout=TIMEOUT)

    started = served(["serve", "--detach", "--device", "cpu", "--idle-timeout", "300"])
    assert started.returncode == 0, started.stderr.decode()
    try:
        query, reference = str(GOLDEN / "query.fa"), GOLDEN / "reference.fa"
        own = gamut(["scan", query, str(reference)], tmp_path)
        assert own.returncode == 0 and own.stdout.count(b"\n") > 10
        for name, data in (("-", reference.read_bytes()), ("/dev/stdin", gzip.compress(reference.read_bytes()))):
            run = served(["scan", query, name], data)
            assert (run.returncode, run.stdout) == (0, own.stdout), run.stderr.decode()
        with fifo_with(reference, tmp_path) as fifo:
            run = served(["scan", query, str(fifo)])
        assert (run.returncode, run.stdout) == (0, own.stdout), run.stderr.decode()
        log = sock.with_suffix(".log").read_text()
        assert sum(": status 0" in line for line in log.splitlines()) == 3  # the server ran them
    finally:
        served(["serve", "--stop"])


# --------------------------------------------------------------------------- the opener

def _piecemeal_pipe(data: bytes, piece: int) -> tuple[int, threading.Thread]:
    """The read end of a pipe that a thread fills with ``data`` in pieces of ``piece`` bytes."""
    read_end, write_end = os.pipe()

    def write() -> None:
        with os.fdopen(write_end, "wb", buffering=0) as out:
            for start in range(0, len(data), piece):
                out.write(data[start:start + piece])

    thread = threading.Thread(target=write, daemon=True)
    thread.start()
    return read_end, thread


@pytest.mark.parametrize("piece", [1, 3, 1 << 16])
@pytest.mark.parametrize("compression", list(COMPRESSORS))
def test_a_pipe_is_read_once_whatever_comes_first(compression, piece):
    """Compression is told from a pipe's first bytes however few each read gives, and the same bytes
    are then read (decompressed) with the rest."""
    data = b"".join(b">r%d\n%s\n" % (k, b"ACGU" * (k % 50 + 1)) for k in range(2000))
    read_end, writer = _piecemeal_pipe(COMPRESSORS[compression](data), piece)
    try:
        assert is_stream(f"/dev/fd/{read_end}")
        assert read_input_bytes(f"/dev/fd/{read_end}") == data
    finally:
        writer.join(TIMEOUT)
        os.close(read_end)


@pytest.mark.parametrize("compression", list(COMPRESSORS))
def test_stdin_is_read_through_and_left_open(compression, monkeypatch):
    data = b">a d\nACGU\n>b\nGGCC\n"
    stdin = io.TextIOWrapper(io.BufferedReader(io.BytesIO(COMPRESSORS[compression](data))))
    monkeypatch.setattr(sys, "stdin", stdin)
    assert [(r.name, r.sequence) for r in read_fasta("-")] == [("a", "ACGU"), ("b", "GGCC")]
    assert not stdin.buffer.closed  # the command's standard input stays open


def test_fastq_is_told_by_its_content_where_the_name_says_nothing(monkeypatch):
    assert (sequence_file_format("r.fq.gz"), sequence_file_format("r.fa"), sequence_file_format("-")) == \
        ("fastq", "fasta", None)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(gzip.compress(b"@x\nACGT\n+\nIIII\n"))))
    assert list(read_fasta("-", fileformat=None)) == [("x", "", "ACGT")]
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b">y\nACGT\n")))
    assert list(read_fasta("-", fileformat=None)) == [("y", "", "ACGT")]


def test_one_stream_may_not_be_two_inputs(tmp_path):
    regular = tmp_path / "r.fa"
    regular.write_text(">r\nACGU\n")
    check_read_once([regular, regular, "-", None])  # a regular file may be read twice
    with pytest.raises(UsageError, match=r"two inputs read standard input \(-\)"):
        check_read_once(["-", regular, "-"])
    fifo = tmp_path / "f.fifo"
    os.mkfifo(fifo)
    with pytest.raises(UsageError, match=re.escape(f"{fifo} and {tmp_path}/./f.fifo are the same pipe")):
        check_read_once([fifo, f"{tmp_path}/./f.fifo"])
    # - and /dev/stdin on one pipe: checked where standard input is a pipe
    code = ("import sys; from gamut.io.inputs import check_read_once\n"
            "try:\n    check_read_once(['-', '/dev/stdin'])\nexcept Exception as e:\n    print(e)")
    run = subprocess.run([sys.executable, "-c", code], input=b"", capture_output=True, timeout=TIMEOUT)
    assert run.stdout.decode().strip() == ("- and /dev/stdin are the same pipe, which can be read once: give every "
                                           "input but one as a file")


def test_an_annotation_from_a_pipe_is_read_each_time(tmp_path):
    """A FIFO's annotation is never taken from the cache of a file (the next command's FIFO holds
    other transcripts under the same name)."""
    from gamut.io.annotation import read_annotation

    fifo = tmp_path / "genes.bed"
    os.mkfifo(fifo)
    names = []
    for transcript in ("tx1", "tx2"):
        source = tmp_path / f"{transcript}.bed"
        source.write_text(f"chr1\t10\t50\t{transcript}\t0\t+\n")
        writer = subprocess.Popen([sys.executable, "-c", COPY, str(source), str(fifo)])
        try:
            names.append(read_annotation(fifo).names)
        finally:
            writer.wait(TIMEOUT)
    assert names == [["tx1"], ["tx2"]]


def test_a_run_directory_resumes_a_scan_of_piped_input(tmp_path):
    """A piped input is fingerprinted by its records: the same records resume, others are refused."""
    reference = (GOLDEN / "reference.fa").read_bytes()
    argv = ["scan", str(GOLDEN / "query.fa"), "-", "--device", "cpu", "--run-dir", "rd", "-o", "out.tsv",
            "--partition-pairs", "100"]
    first = gamut(argv, tmp_path, reference)
    assert first.returncode == 0, first.stderr.decode()
    table = (tmp_path / "out.tsv").read_bytes()
    computed = (tmp_path / "rd" / "computed.log").read_text().splitlines()
    again = gamut(argv, tmp_path, gzip.compress(reference))
    assert again.returncode == 0, again.stderr.decode()
    assert (tmp_path / "out.tsv").read_bytes() == table
    assert (tmp_path / "rd" / "computed.log").read_text().splitlines() == computed  # nothing computed again
    other = gamut(argv, tmp_path, reference.replace(b"A", b"C", 1))
    assert other.returncode == 1 and b"different input files (reference changed)" in other.stderr


# --------------------------------------------------------------------------- -restrict, duplicates

QUERY = "UGAGGUAGUAGGUUGUAUAGUU"
SITE = "AAAACUAUACAACCUACUACCUCAAAA"


@pytest.fixture
def scan_files(tmp_path) -> tuple[Path, Path]:
    q, r = tmp_path / "q.fa", tmp_path / "r.fa"
    q.write_text(f">q1\n{QUERY}\n>q2\n{QUERY[::-1]}\n")
    r.write_text(f">r1\n{SITE}\n>r2\n{SITE * 2}\n")
    return q, r


def test_restrict_pairs_naming_unknown_records_are_one_warning(scan_files, tmp_path, capsys):
    q, r = scan_files
    listed = tmp_path / "pairs.txt"
    listed.write_text("q1 r2\nq1 nope\nmiR-9 r1\nq1 r2\n")
    known = tmp_path / "known.txt"
    known.write_text("q1 r2\n")
    assert main(["scan", str(q), str(r), "--restrict", str(known), "--device", "cpu"]) == 0
    expected = capsys.readouterr()
    assert warnings_of(expected.err.encode()) == []
    assert main(["scan", str(q), str(r), "--restrict", str(listed), "--device", "cpu"]) == 0
    got = capsys.readouterr()
    assert got.out == expected.out and got.out.count("\nq1\tr2\t") == 2  # the unknown pairs are skipped
    assert warnings_of(got.err.encode()) == [
        f"gamut: warning: {listed}: 2 of 3 pairs name records that are not in the inputs (first: line 2, "
        "'q1 nope'); they are skipped"]


def test_restrict_file_from_stdin_with_bytes_that_are_not_utf8(tmp_path, monkeypatch, capfdbinary):
    """The restrict file's ids are read as the FASTA's are: a Latin-1 id matches its record."""
    q, r = tmp_path / "q.fa", tmp_path / "r.fa"
    q.write_text(f">q1\n{QUERY}\n")
    r.write_bytes(f">r1\n{SITE}\n>r\xe9\n{SITE}\n".encode("latin-1"))
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(gzip.compress(b"q1\tr\xe9\n"))))
    assert main(["miranda", str(q), str(r), "-restrict", "-", "-quiet"]) == 0
    out = capfdbinary.readouterr().out
    assert b">q1\tr\xe9\t" in out and b">q1\tr1\t" not in out


def test_duplicate_names_are_scanned_with_a_warning(tmp_path, capsys):
    """miRanda scans records that share a name; the scan does too, and says so once."""
    q, r = tmp_path / "q.fa", tmp_path / "r.fa"
    q.write_text(f">q1\n{QUERY}\n")
    r.write_text(f">r1\n{SITE}\n>r2\nACGUACGU\n>r1\n{SITE * 2}\n>r2\nACGU\n")
    assert main(["scan", str(q), str(r), "--device", "cpu"]) == 0
    got = capsys.readouterr()
    assert got.out.count("\nq1\tr1\t") == 3  # one site in the first r1, two in the second
    assert warnings_of(got.err.encode()) == [
        f"gamut: warning: {r}: duplicate record name 'r1' (records 1 and 3); both are scanned, as miRanda does, "
        "and the outputs name both alike"]


def test_fold_and_access_refuse_duplicate_names_from_stdin(tmp_path):
    for command in ("fold", "access"):
        run = gamut([command, "-", "--device", "cpu"], tmp_path, b">a\nGGGAAACCC\n>a\nGGGGAAAACCCC\n")
        assert run.returncode == 1 and run.stdout == b""
        assert warnings_of(run.stderr) == ["gamut: error: -: duplicate record name 'a' (records 1 and 2); "
                                           "names must be unique"]


# --------------------------------------------------------------------------- header bytes

#: An id and a description with bytes that are not UTF-8 (Latin-1 e-acute, 0xFF), and one that is.
ODD_ID, ODD_DESCRIPTION = b"r\xe9\xff", b"d\xe9sc \xff \xc3\xa9"


@pytest.mark.parametrize("fmt", ["miranda", "tsv", "bed", "bed6"])
def test_header_bytes_reach_the_text_outputs_unchanged(fmt, tmp_path):
    """miRanda copies header bytes: the text outputs hold exactly the input's bytes, the output of the
    same scan with plain ASCII names with those names' bytes put back."""
    (tmp_path / "q.fa").write_text(f">q1\n{QUERY}\n")
    (tmp_path / "odd.fa").write_bytes(b">" + ODD_ID + b" " + ODD_DESCRIPTION + f"\n{SITE}\n>r2\n{SITE}\n".encode())
    (tmp_path / "plain.fa").write_bytes(f">ID_X DESC_X\n{SITE}\n>r2\n{SITE}\n".encode())
    outs = {}
    for name in ("odd", "plain"):
        run = gamut(["scan", "q.fa", f"{name}.fa", "--format", fmt, "--device", "cpu", "-o", f"{name}.out"], tmp_path)
        assert run.returncode == 0, run.stderr.decode()
        outs[name] = (tmp_path / f"{name}.out").read_bytes()
    expected = outs["plain"].replace(b"ID_X", ODD_ID).replace(b"DESC_X", ODD_DESCRIPTION).replace(b"plain.fa",
                                                                                                    b"odd.fa")
    assert b"ID_X" in outs["plain"] and outs["odd"] == expected
    # to standard output too
    run = gamut(["scan", "q.fa", "odd.fa", "--format", fmt, "--device", "cpu"], tmp_path)
    assert run.stdout == expected


def test_utf8_ids_are_text_in_json_and_the_api(tmp_path):
    """An id in UTF-8 (not Latin-1 read as two letters) in JSON lines and the API's table."""
    import gamut as api

    (tmp_path / "q.fa").write_text(f">q1\n{QUERY}\n")
    (tmp_path / "r.fa").write_bytes(f">r\u00e9 d\n{SITE}\n".encode())
    run = gamut(["scan", "q.fa", "r.fa", "--format", "jsonl", "--device", "cpu"], tmp_path)
    assert run.returncode == 0 and b'"reference_id": "r\\u00e9"' in run.stdout
    frame = api.scan({"q1": QUERY}, tmp_path / "r.fa", device="cpu")
    assert frame["reference_id"].tolist() == ["r\u00e9"]
    assert api.scan({"q\u00e9": QUERY}, {"r": SITE}, device="cpu")["query_id"].tolist() == ["q\u00e9"]
