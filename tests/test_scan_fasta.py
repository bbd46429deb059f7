"""miRanda's FASTA reading (miranda-model §2): the compiled parser gives exactly the records, or the
error, of the plain reference parser (tests/miranda_fasta_reference.py) on FASTA-like bytes; the
records' letters reach the alignment engines as one set, uncopied where they can be; files are read
plain, compressed and from standard input alike."""
from __future__ import annotations

import bz2
import gzip
import io
import lzma
import os
import pickle
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gamut.errors import InputError
from gamut.scanning.alphabet import ALLOWED_LETTERS, CLASS_OF, encode
from gamut.scanning.fasta import SeqRecord, parse_miranda_fasta, read_miranda_fasta, sequence_set_of
from gamut.scanning.params import ScanParams
from gamut.scanning.pipeline.pairs import ScanInput
from gamut.scanning.sequences import SequenceSet
from miranda_fasta_reference import reference_parse
from test_inputs import zstd_compress

LETTERS = b"ACGUTNRYKMSWBDHVX"
#: Pieces of FASTA-like bytes, repeated to weigh them: record starts, ids, whitespace of every kind,
#: allowed letters of both cases, illegal bytes, and bytes that are not ASCII (or not UTF-8).
PIECES = ([b">"] * 4 + [b"\n"] * 6 + [b" ", b"\t", b"\r", b"\r\n", b"id1", b"a>b", b"x", b"desc text"]
          + [b"ACGU", b"acgt", b"NnXx", LETTERS, LETTERS.lower(), b"GGGCCCAAAUUU"] * 2
          + [b"1", b"*", b"-", b"Z", b"\x00", b"\x7f", b".", b"E"]
          + [b"\xe9", b"\xc3\xa9", b"\xe2\x82", b"\xff", b"\x80", "\u00e9\u4e2d".encode()])


def outcome(parse, data: bytes) -> tuple:
    """What a parser makes of ``data``: its records as tuples, or its error's message."""
    try:
        records = parse(data, "f.fa")
    except InputError as exc:
        return "error", str(exc)
    assert all(type(r) is SeqRecord and isinstance(r.sequence, bytes) for r in records)
    return "records", [(r.id, r.description, r.sequence, len(r)) for r in records]


fasta_like = st.lists(st.sampled_from(PIECES), max_size=40).map(b"".join)


@st.composite
def fasta_files(draw) -> bytes:
    """Mostly well-formed files (so that most of them parse): records with ids, descriptions and
    letter lines of any whitespace, now and then a piece of :data:`PIECES` put anywhere."""
    out = [draw(st.sampled_from([b"", b"\n", b" \r\n\t"]))]
    for _ in range(draw(st.integers(0, 5))):
        out += [b">", draw(st.sampled_from([b"r1", b"ENST1.1", b"q\xe9", b"a>b", b"x"])),
                draw(st.sampled_from([b"", b" ", b"\t \r"])),
                draw(st.sampled_from([b"", b"desc", b"d e\r", b"\xff\xfe"])), draw(st.sampled_from([b"\n", b"\r\n"]))]
        for _ in range(draw(st.integers(0, 4))):
            line = draw(st.binary(max_size=70).map(lambda b: bytes(LETTERS[x % len(LETTERS)] for x in b)))
            out += [line if draw(st.booleans()) else line.lower(), draw(st.sampled_from([b"\n", b"\r\n", b" \n", b""]))]
    if draw(st.integers(0, 3)) == 0:
        at = draw(st.integers(0, len(out)))
        out.insert(at, draw(st.sampled_from(PIECES)))
    return b"".join(out)


@settings(max_examples=600, deadline=None)
@given(fasta_like)
def test_compiled_parser_is_the_reference_on_fasta_like_bytes(data):
    assert outcome(parse_miranda_fasta, data) == outcome(reference_parse, data)
    assert outcome(parse_miranda_fasta, b">" + data) == outcome(reference_parse, b">" + data)


@settings(max_examples=300, deadline=None)
@given(fasta_files())
def test_compiled_parser_is_the_reference_on_fasta_files(data):
    assert outcome(parse_miranda_fasta, data) == outcome(reference_parse, data)


def in_pieces(parse):
    """``parse`` with the file cut into as many pieces as it has record starts (up to 8)."""
    from gamut.scanning import fasta_scan

    def parsed(data: bytes, name: str):
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(fasta_scan, "PIECE_BYTES", 1)
            patch.setattr(fasta_scan, "usable_cores", lambda: 8)
            return parse(data, name)
    return parsed


@settings(max_examples=300, deadline=None)
@given(fasta_files(), fasta_like)
def test_a_file_read_in_pieces_by_threads_is_read_as_one_pass_reads_it(data, other):
    # Every piece begins a record, so each parses as the whole file would there; the first piece
    # that ends badly is the error of one pass (its record counted from the file's first).
    assert outcome(in_pieces(parse_miranda_fasta), data) == outcome(reference_parse, data)
    joined = data + b"\n>" + other
    assert outcome(in_pieces(parse_miranda_fasta), joined) == outcome(reference_parse, joined)


def test_pieces_keep_where_each_record_lies_in_the_letters_and_the_file(tmp_path):
    rng = np.random.default_rng(7)
    lines = []
    for k in range(400):
        lines.append(f">r{k} d{k}\n".encode())
        for _ in range(int(rng.integers(1, 4))):
            lines.append(rng.choice(np.frombuffer(b"ACGUacgu", np.uint8), int(rng.integers(1, 90))).tobytes() + b"\n")
    path = tmp_path / "many.fa"
    path.write_bytes(b"".join(lines))
    one = read_miranda_fasta(path)[0]._letters
    records = in_pieces(lambda p, _: read_miranda_fasta(p))(path, "")
    held = records[0]._letters
    assert len(records) == 400 and [r.id for r in records] == [f"r{k}" for k in range(400)]
    for field in ("letters", "codes", "bounds", "starts"):
        assert np.array_equal(getattr(held, field), getattr(one, field)), field
    assert held.source == one.source


@pytest.mark.parametrize("data, message", [
    (b"x\n>a\nACGU\n", "f.fa: illegal format (record 1 does not start with '>')"),
    (b">a\nACGU\n>b desc", "f.fa: unexpected end of file in the header of record 'b'"),
    (b">a\nACGU\n>\nAC\n", "f.fa: record 2 has an empty id"),
    (b">a\nAC\n>b\xe9\nAC\xe9GU*\n", "f.fa: illegal character '\xe9' in sequence of record 'b\\xe9'"),
    (b">a\nAC\n>b\n \r\n>c\nA", "f.fa: record 'b' has no sequence"),
])
def test_each_error_names_the_file_and_the_record(data, message):
    with pytest.raises(InputError) as raised:
        parse_miranda_fasta(data, "f.fa")
    assert str(raised.value) == message
    assert outcome(reference_parse, data) == ("error", message)


def test_class_codes_allow_exactly_mirandas_letters():
    """The parser checks letters by their class code: the codes' letters are miRanda's, either case."""
    allowed = {chr(b) for b in range(256) if CLASS_OF[b] >= 0}
    assert allowed == set(ALLOWED_LETTERS) | {c.lower() for c in ALLOWED_LETTERS}


def built_set(records: list[SeqRecord], trim: int = 0) -> SequenceSet:
    """The set as it was built before the parser kept its buffer: bytes joined, then encoded."""
    return SequenceSet.build([r.id for r in records], [r.sequence[:trim] if trim else r.sequence for r in records],
                             encode=encode)


def assert_same_set(got: SequenceSet, expected: SequenceSet) -> None:
    assert got.ids == expected.ids and got.is_ascii == expected.is_ascii
    assert got.letters.tobytes() == expected.letters.tobytes()
    np.testing.assert_array_equal(got.codes, expected.codes)
    np.testing.assert_array_equal(got.offsets, expected.offsets)
    assert got.codes.dtype == np.int8 and got.letters.dtype == np.uint8 and got.offsets.dtype == np.int64


@settings(max_examples=200, deadline=None)
@given(fasta_files(), st.integers(0, 60), st.data())
def test_sequence_set_of_parsed_records_is_the_joined_and_encoded_set(data, trim, pick):
    try:
        records = parse_miranda_fasta(data)
    except InputError:
        return
    plain = [SeqRecord(r.id, r.description, r.sequence) for r in records]
    start = pick.draw(st.integers(0, len(records)))
    stop = pick.draw(st.integers(start, len(records)))
    for chosen, same in ((records, plain), (records[start:stop], plain[start:stop]),
                         (records[::-1], plain[::-1]), (records + parse_miranda_fasta(data), plain + plain)):
        assert_same_set(sequence_set_of(chosen, trim), built_set(same, trim))
        assert_same_set(sequence_set_of(same, trim), built_set(same, trim))


def test_parsed_records_are_views_of_one_buffer_until_asked():
    records = parse_miranda_fasta(b">a one\nACGU\nac\n>b\nNNNN\n>c\nG\n")
    whole = sequence_set_of(records)
    assert not whole.letters.flags.writeable and not whole.codes.flags.writeable
    part = sequence_set_of(records[1:])
    assert np.shares_memory(whole.letters, part.letters) and np.shares_memory(whole.codes, part.codes)
    assert part.ids == ["b", "c"] and part.offsets.tolist() == [0, 4, 5] and part.letters.tobytes() == b"NNNNG"
    assert [len(r) for r in records] == [6, 4, 1]
    trimmed = ScanInput(records, records, ScanParams(trim=2))
    assert trimmed.reference_set.letters.tobytes() == b"ACNNG" and trimmed.reference_lengths().tolist() == [2, 2, 1]
    assert trimmed.query_set.letters.tobytes() == b"ACGUacNNNNG"


def test_parsed_and_made_records_are_alike():
    parsed = parse_miranda_fasta(b">a one\r\nACGU\nac\n")[0]
    made = SeqRecord("a", "one\r", b"ACGUac")
    assert parsed == made and hash(parsed) == hash(made) and repr(parsed) == repr(made)
    assert parsed != SeqRecord("a", "one\r", b"ACGUa") and parsed != ("a", "one\r", b"ACGUac")
    again = pickle.loads(pickle.dumps(parsed))
    assert again == made and again.sequence == b"ACGUac" and len(again) == 6
    with pytest.raises(AttributeError):
        parsed.id = "b"
    with pytest.raises(AttributeError):
        made.sequence = b"A"


COMPRESSORS = {"gz": gzip.compress, "bz2": bz2.compress, "xz": lzma.compress}


@pytest.mark.parametrize("suffix", [*COMPRESSORS, "zst"])
def test_a_compressed_file_reads_as_the_plain_one(suffix, tmp_path):
    data = b">r1 first\r\nACGU\nacgu\n>r2\nNNXX ACG\n"
    packed = (zstd_compress if suffix == "zst" else COMPRESSORS[suffix])(data)
    path = tmp_path / f"r.fa.{suffix}"
    path.write_bytes(packed)
    assert read_miranda_fasta(path) == reference_parse(data) == read_miranda_fasta(write(tmp_path / "r.fa", data))


def write(path, data: bytes):
    path.write_bytes(data)
    return path


@pytest.mark.parametrize("compress", [bytes, gzip.compress])
def test_standard_input_reads_as_the_file(compress, monkeypatch):
    data = b">q1\nUGAGGUAGUAGGUUGUAUAGUU\n>q2 two\nuagcagcacguaaauauuggcg\n"
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BufferedReader(io.BytesIO(compress(data)))))
    assert read_miranda_fasta("-") == reference_parse(data)


def test_a_bad_record_from_standard_input_is_named(monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BufferedReader(io.BytesIO(b">q1\nACGU\n>q2\nAC!\n"))))
    with pytest.raises(InputError, match=r"^-: illegal character '!' in sequence of record 'q2'$"):
        read_miranda_fasta("-")


@pytest.mark.parametrize("reported", [0, 5, 32, 33, 1000])
def test_a_file_is_read_whole_whatever_size_it_reported(reported, tmp_path, monkeypatch):
    """A regular file is read straight into an array of the size it reports (one byte more); one
    that grew since (or reports less) is read to its end all the same."""
    import gamut.io.inputs as inputs

    data = b">r1\nACGU\n>r2\nGG\n" * 2
    path = write(tmp_path / "r.fa", data)
    true_stat = os.fstat

    class Stat:
        st_size = reported
        st_dev = st_ino = st_mtime_ns = st_ctime_ns = 0

    monkeypatch.setattr(inputs.os, "fstat", lambda fd: Stat if fd == opened[0] else true_stat(fd))
    opened = [None]
    real_open = inputs.open_input

    def open_input(name):
        handle = real_open(name)
        opened[0] = handle.raw.fileno()
        return handle

    monkeypatch.setattr(inputs, "open_input", open_input)
    array = inputs.read_input_array(path)
    assert array.tobytes() == data and array.flags.writeable
