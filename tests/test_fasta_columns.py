"""gamut.io.fasta_columns (the FASTA reader of ``gamut fold --model turner``) reads what
gamut.io.fasta.read_fasta reads, records and errors alike, and gamut.io.packed.PackedSequences
behaves as the list of strings it holds."""
from __future__ import annotations

import gzip

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gamut.errors import InputError
from gamut.io import fasta_columns
from gamut.io.fasta import read_fasta
from gamut.io.fasta_columns import read_fasta_columns
from gamut.io.packed import PackedSequences


def by_dnaio(path) -> tuple:
    """read_fasta's records as read_fasta_columns gives them, or its error message."""
    try:
        records = list(read_fasta(path, unique=True))
    except InputError as exc:
        return ("error", str(exc))
    return ([r.name for r in records], [f"{r.name} {r.description}" if r.description else r.name for r in records],
            [r.sequence for r in records])


def by_columns(path) -> tuple:
    try:
        columns = read_fasta_columns(path)
    except InputError as exc:
        return ("error", str(exc))
    return (list(columns.names), list(columns.headers), list(columns.sequences))


def test_plain_file_takes_the_compiled_pass(tmp_path):
    path = tmp_path / "w.fa"
    path.write_bytes(b">a one two\nACGU\nGG\n>b\r\nUUUA\r\n\n>c  x\ty\nN\n")
    columns = read_fasta_columns(path)
    assert isinstance(columns.sequences, PackedSequences)
    assert columns.names == ["a", "b", "c"]
    assert columns.headers == ["a one two", "b", "c x\ty"]
    assert list(columns.sequences) == ["ACGUGG", "UUUA", "N"]
    assert by_columns(path) == by_dnaio(path)


@pytest.mark.parametrize("text", [
    b"", b"ACGU\n>a\nAC\n", b">a\n>b\nAC\n", b">a\nAC\n>b\n", b">a\nAC\n>a\nGG\n", b">\nAC\n", b"> a\nAC\n",
    b">a\n#comment\nAC\n", b">a\n AC\n", b">a\nAC \n", b">a\tb\nAC\n", b">a\nA\rC\n", "\u00e9>a\nAC\n".encode(),
    b">a\nAC\n\xe9\n", b"@r\nACGU\n+\nIIII\n", b">a\nA C\n", b">a\x01\nAC\n",
])
def test_files_left_to_dnaio_read_as_it_reads_them(tmp_path, text):
    path = tmp_path / "x.fa"
    path.write_bytes(text)
    assert by_columns(path) == by_dnaio(path)


def test_compressed_and_standard_input(tmp_path, monkeypatch):
    import io
    import sys

    text = b">a d\nACGU\n>b\nGGCC\n"
    path = tmp_path / "x.fa.gz"
    path.write_bytes(gzip.compress(text))
    assert by_columns(path) == (["a", "b"], ["a d", "b"], ["ACGU", "GGCC"])
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b">a\nAC\n>a\nGG\n")))
    with pytest.raises(InputError, match=r"-: duplicate record name 'a' \(records 1 and 2\)"):
        read_fasta_columns("-")  # left to dnaio after the stream was read: the same bytes


records = st.lists(st.tuples(st.text("ab1_.|", min_size=1, max_size=4),
                             st.sampled_from(["", " x", "  y z", " \tq", " a\tb"]),
                             st.lists(st.text("ACGUTNacgu", min_size=1, max_size=6), min_size=1, max_size=3)),
                   min_size=1, max_size=6, unique_by=lambda r: r[0])
#: Lines dnaio reads in its own way (or refuses), put among the records now and then.
odd_lines = st.sampled_from(["", "#c", " AC", "AC ", "A C", "\t", ">", "> a", "a\tb", "AC\r", "\u00e9"])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(records=records, odd=st.lists(st.tuples(st.integers(0, 40), odd_lines), max_size=2), crlf=st.booleans(),
       last_newline=st.booleans())
def test_any_file_reads_as_dnaio_reads_it(tmp_path, records, odd, crlf, last_newline):
    lines = [line for name, description, letters in records for line in [">" + name + description, *letters]]
    for at, line in odd:
        lines.insert(min(at, len(lines)), line)
    end = "\r\n" if crlf else "\n"
    path = tmp_path / "h.fa"
    path.write_bytes((end.join(lines) + (end if last_newline else "")).encode())
    assert by_columns(path) == by_dnaio(path)


def test_a_million_short_records_are_fast_path_sized(tmp_path):
    """Many records: the buffers are sized for the worst case (a record of two bytes)."""
    path = tmp_path / "tiny.fa"
    path.write_bytes(b"".join(b">%d\nA\n" % k for k in range(5000)))
    columns = read_fasta_columns(path)
    assert isinstance(columns.sequences, PackedSequences)
    assert len(columns.names) == 5000 and columns.sequences.letters == b"A" * 5000
    assert fasta_columns.FastaColumns._fields == ("names", "headers", "sequences")


@given(st.lists(st.text("ACGUN", max_size=6), max_size=8), st.integers(-10, 10), st.integers(-10, 10))
def test_packed_sequences_behave_as_their_list(sequences, a, b):
    offsets = np.zeros(len(sequences) + 1, np.int64)
    np.cumsum([len(s) for s in sequences], out=offsets[1:])
    packed = PackedSequences("".join(sequences).encode(), offsets)
    assert len(packed) == len(sequences) and list(packed) == sequences
    assert [packed[k] for k in range(-len(sequences), len(sequences))] == sequences + sequences
    assert list(packed[a:b]) == sequences[a:b]
    assert list(packed[::2]) == sequences[::2]
    assert packed[a:b] == PackedSequences("".join(sequences[a:b]).encode(), packed[a:b].offsets)
    with pytest.raises(IndexError):
        packed[len(sequences)]


def test_packed_sequences_refuse_offsets_that_do_not_fit():
    for offsets in ([1, 2], [0, 3], [0, 2, 1, 2], []):
        with pytest.raises(ValueError):
            PackedSequences(b"AC", np.array(offsets, np.int64))


@given(st.lists(st.text("ACGUNé€", max_size=6), max_size=8))
def test_packed_sequences_of_strings_keep_each_strings_places(sequences):
    packed = PackedSequences.of(sequences)
    assert PackedSequences.of(packed) is packed
    assert len(packed) == len(sequences) and np.diff(packed.offsets).tolist() == [len(s) for s in sequences]
    assert packed.letters == "".join(sequences).replace("€", "?").encode("latin-1")  # beyond Latin-1: '?'
