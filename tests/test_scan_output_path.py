"""The host output path: parallel record rendering and hit strings equal their serial definitions,
rendered bytes written under a text handle, and the FASTA letter check."""
from __future__ import annotations

import io
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gamut.io.threads
from gamut.errors import InputError
from gamut.io.textcols import StringColumn, TextBuilder, gather, pick
from gamut.io.textout import header_text, raw_text, write_bytes
from gamut.scanning.alphabet import encode
from scan_cpu_engine import CpuEngine
from gamut.scanning.fasta import parse_miranda_fasta
from gamut.scanning.hits import SequenceSet, chunk_hits
from gamut.scanning.params import ScanParams


@pytest.fixture
def always_parallel(monkeypatch):
    """Every kernel whose caller allows it runs on all threads, however small its work."""
    monkeypatch.setattr(gamut.io.threads, "PARALLEL_MIN_WORK", 0)


def serial_render(groups, strings) -> bytes:
    """The definition: rows sorted by (major, slot, minor), stably; each row its pieces in order."""
    rows = []
    for major, slot, minor, pieces in groups:
        for i in range(len(major)):
            text = b"".join(p.encode() if isinstance(p, str) else strings[p][i] for p in pieces)
            rows.append(((major[i], slot, minor[i]), text))
    rows.sort(key=lambda r: r[0])  # stable: ties keep the order of addition
    return b"".join(text for _, text in rows)


@st.composite
def record_sets(draw):
    """Groups of records whose pieces are constants (some empty) or columns of random strings
    (many empty), with keys that often tie."""
    n_groups = draw(st.integers(1, 5))
    groups, strings = [], []
    text = st.text(st.sampled_from("ab\t\n -"), max_size=6)
    for _ in range(n_groups):
        n = draw(st.integers(0, 300))
        major = draw(st.lists(st.integers(-3, 20), min_size=n, max_size=n))
        minor = draw(st.lists(st.integers(0, 3), min_size=n, max_size=n))
        pieces = []
        for _ in range(draw(st.integers(1, 6))):
            if draw(st.booleans()):
                pieces.append(draw(text))
            else:
                rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
                strings.append([b"xyz0123456789"[: int(k)] for k in rng.integers(0, 14, n) * rng.integers(0, 2, n)])
                pieces.append(len(strings) - 1)
        groups.append((major, draw(st.integers(0, 3)), minor, pieces))
    return groups, strings


def render_with(builder: TextBuilder, groups, strings) -> bytes:
    columns = {}
    for major, slot, minor, pieces in groups:
        for p in pieces:
            if not isinstance(p, str) and p not in columns:
                column = StringColumn([s.decode() for s in strings[p]])
                columns[p] = pick(builder, column, np.arange(len(column)))
        builder.records(np.array(major, np.int64), slot, np.array(minor, np.int64),
                        [p if isinstance(p, str) else columns[p] for p in pieces])
    return builder.render()


@settings(max_examples=80, deadline=None)
@given(record_sets())
def test_rendering_equals_the_serial_definition(case):
    groups, strings = case
    want = serial_render(groups, strings)
    assert render_with(TextBuilder(), groups, strings) == want
    with pytest.MonkeyPatch.context() as mp:  # the parallel kernels on every size
        mp.setattr(gamut.io.threads, "PARALLEL_MIN_WORK", 0)
        assert render_with(TextBuilder(parallel=True), groups, strings) == want


def test_many_rows_in_parallel(always_parallel):
    rng = np.random.default_rng(7)
    n = 20_000
    values = rng.integers(-10**6, 10**6, n)
    floats = rng.normal(0, 50, n)
    order = rng.permutation(n)
    out = {}
    for parallel in (False, True):
        b = TextBuilder(parallel)
        b.records(order, 1, 0, ["<", b.integers(values), "|", b.fixed(floats, 2), "", ">\n"])
        b.records(np.arange(n), 0, 0, [b.fixed(floats, 6), "\n"])
        out[parallel] = b.render()
    assert out[True] == out[False]
    assert out[False].count(b"\n") == 2 * n
    lengths = rng.integers(0, 9, n)
    data = rng.integers(97, 123, int(lengths.sum())).astype(np.uint8)
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    packed, packed_starts = gather(data, starts, lengths, parallel=True)
    assert packed.tobytes() == data.tobytes() and packed_starts.tolist() == starts.tolist()


def test_run_kernel_asks_a_callable_before_each_kernel():
    """A chunk's post-processing goes on all threads once the alignment beside it has finished."""
    import numba

    from gamut.io.threads import run_kernel

    everyone = numba.get_num_threads()
    answers = iter([False, True])
    asked = []

    def spare() -> bool:
        asked.append(1)
        return next(answers)

    def kernel(x):
        return numba.get_num_threads(), x

    big = gamut.io.threads.PARALLEL_MIN_WORK
    assert run_kernel(kernel, big, spare, 1) == (1, 1)  # still aligning: the calling thread alone
    assert run_kernel(kernel, big, spare, 2) == (everyone, 2)  # done now: every thread
    assert run_kernel(kernel, big - 1, spare, 3) == (1, 3)  # small work is not worth asking
    assert len(asked) == 2 and numba.get_num_threads() == everyone
    assert TextBuilder(spare).parallel is spare


def test_scan_post_processing_keeps_to_threads():
    """--threads bounds the writers' and hits' parallel kernels too, not only the engine."""
    import numba

    from gamut.scanning.pipeline.scan_loop import ScanInput, run_scan

    records = parse_miranda_fasta(b">q1\nUGAGGUAGUAGGUUGUAUAGUU\n>q2\nUAGCAGCACGUAAAUAUUGGCG\n", "q.fa")
    refs = parse_miranda_fasta(b">r1\nACUAUACAACCUACUACCUCAAAAACUAUACAACCUACUACCUCA\n", "r.fa")
    everyone = numba.get_num_threads()
    seen = [numba.get_num_threads() for _ in run_scan(ScanInput(records, refs, ScanParams()), CpuEngine(1),
                                                       threads=1, chunk_pairs=1)]
    assert seen == [1, 1]  # while the caller writes each chunk
    assert numba.get_num_threads() == everyone  # given back at the end


def test_same_column_twice_and_empty_records():
    b = TextBuilder()
    ints = b.integers(np.array([3, -40]))
    b.records(np.array([1, 0]), 0, 0, [ints, ":", ints, ""])
    b.records(np.zeros(0, np.int64), 0, 0, ["never"])
    b.records(np.array([0]), 1, 0, [])
    assert b.render() == b"-40:-403:3"
    assert TextBuilder().render() == b"" and TextBuilder().render_array().dtype == np.uint8
    with pytest.raises(ValueError):
        b.records(np.array([0, 1, 2]), 0, 0, [ints])


def test_parallel_hit_strings_equal_serial(always_parallel):
    rng = np.random.default_rng(3)
    letters = lambda alphabet, n: np.frombuffer(alphabet, np.uint8)[rng.integers(0, len(alphabet), n)]  # noqa: E731
    queries = [letters(b"ACGU", 22).tobytes() for _ in range(6)]
    refs = []
    for _ in range(8):  # random letters with a complementary site of every query
        ref = letters(b"ACGUacgun", 900)
        for k, q in enumerate(queries):
            site = q[::-1].translate(bytes.maketrans(b"ACGU", b"UGCA"))
            ref[100 * k + 20:100 * k + 20 + len(site)] = np.frombuffer(site, np.uint8)
        refs.append(ref.tobytes())
    qs = SequenceSet.build([f"q{k}" for k in range(6)], queries, [encode(q) for q in queries])
    rs = SequenceSet.build([f"r{k}" for k in range(8)], refs, [encode(r) for r in refs])
    pairs = np.array([(a, b) for a in range(6) for b in range(8)], np.int64)
    found = CpuEngine(1).align(SequenceSet.from_codes([encode(q) for q in queries]),
                               SequenceSet.from_codes([encode(r) for r in refs]), pairs,
                               ScanParams(score_threshold=60))
    serial, parallel = (chunk_hits(qs, rs, pairs, found, parallel=p) for p in (False, True))
    assert len(serial) > 50
    for name in ("pair", "pair_off", "width", "text_off", "text", "fold_off", "fold", "n_wc", "n_paired",
                 "strict_ok", "ref_start", "ref_end"):
        assert np.array_equal(getattr(serial, name), getattr(parallel, name)), name


@pytest.mark.parametrize("encoding", ["utf-8", "latin-1", "ascii", "utf-16"])
@pytest.mark.parametrize("data", [b"plain text\n", "caf\xe9\n".encode(), b"caf\xe9 \xff\n", b""])
def test_write_bytes_writes_the_bytes_themselves(encoding, data):
    """Rendered text reaches a text file as its bytes, in order with the text written around it:
    a header's bytes are never decoded and encoded again (miRanda copies them; issue 44). A file
    whose encoding does not write ASCII as ASCII (UTF-16) gets the text of the bytes."""
    got = io.BytesIO()
    handle = io.TextIOWrapper(got, encoding=encoding)
    handle.write("head\n")
    if encoding == "utf-16" and header_text(data) != data.decode("utf-8", "replace"):
        with pytest.raises(UnicodeEncodeError):  # bytes that are not UTF-8 have no UTF-16
            write_bytes(handle, np.frombuffer(data, np.uint8))
        return
    write_bytes(handle, np.frombuffer(data, np.uint8))
    handle.write("tail\n")
    handle.flush()
    if encoding == "utf-16":
        assert got.getvalue() == ("head\n" + data.decode() + "tail\n").encode("utf-16")
    else:
        assert got.getvalue() == b"head\n" + data + b"tail\n"
    strings = io.StringIO()
    write_bytes(strings, data)
    assert strings.getvalue() == header_text(data) and raw_text(strings.getvalue()) == data
    binary = io.BytesIO()
    write_bytes(binary, data)
    assert binary.getvalue() == data


@pytest.mark.parametrize("sequence, bad", [(b"ACGUN1X", "1"), (b"acgu-ACGU", "-"), (b"AC\xe9GU*", "\xe9"),
                                           (b"ACG*U1", "*")])
def test_first_illegal_letter_is_named(sequence, bad):
    with pytest.raises(InputError, match=re.escape(f"illegal character '{bad}' in sequence of record 'x'")):
        parse_miranda_fasta(b">x\n" + sequence + b"\n", "f.fa")
    assert parse_miranda_fasta(b">x d\nAC GU\nacgunx\n>y\nNNN")[0].sequence == b"ACGUacgunx"


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(-2**53 + 1, 2**53 - 1), min_size=1, max_size=20), st.sampled_from([0, 2, 6]),
       st.sampled_from([np.int64, np.int32, np.uint16]))
def test_fixed_text_of_integers_is_printf(values, decimals, dtype):
    """Integer arrays (scores) take the integer path of ``fixed``: the same text as printf of the float."""
    info = np.iinfo(dtype)
    values = [min(max(v, int(info.min)), int(info.max)) for v in values]
    b = TextBuilder()
    b.records(np.arange(len(values)), 0, 0, [b.fixed(np.array(values, dtype), decimals), ";"])
    assert b.render().decode() == "".join(f"{float(v):.{decimals}f};" for v in values)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.floats(allow_nan=True, allow_infinity=False, width=64),
                          st.floats(-100, 100), st.integers(-10_000, 10_000).map(lambda v: v / 100),
                          st.sampled_from([0.0, -0.0, -0.001, 0.005, 2.5, 1e15, -1e16, 123456789.125])),
                min_size=1, max_size=30), st.sampled_from([1, 2, 3]), st.booleans())
def test_decimal_text_is_python_s(values, decimals, json_number):
    """``decimals``: f"{x:.2f}" (TSV) or json.dumps(round(x, 2)) (JSON lines) of every value, the
    null text where NaN, as the table sinks wrote them in Python before (one call per value)."""
    import json
    import math

    b = TextBuilder()
    b.records(np.arange(len(values)), 0, 0, [b.decimals(np.array(values), decimals, "null", json_number), ";"])
    expected = "".join(("null" if math.isnan(v) else json.dumps(round(v, decimals)) if json_number
                        else f"{v:.{decimals}f}") + ";" for v in values)
    assert b.render().decode() == expected


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.floats(allow_nan=True, allow_infinity=True, width=64), st.floats(0, 1),
                          st.floats(1e-30, 1e-3), st.floats(-500, 500),
                          st.sampled_from([0.0, -0.0, 1.0, 0.5, 1e-4, 9.9999995e-5, 0.00099999995, 9999999.5,
                                           12345675.0, 1e7, 5e-324, 1.7976931348623157e308, 0.1, 123.456])),
                min_size=1, max_size=40), st.sampled_from([1, 3, 7, 12]))
def test_general_text_is_python_s(values, digits):
    """``general``: f"{x:.{digits}g}" of every value (RNAplfold prints probabilities with %.7g)."""
    b = TextBuilder()
    b.records(np.arange(len(values)), 0, 0, [b.general(np.array(values), digits, "NA"), ";"])
    expected = "".join(("NA" if v != v else format(v, f".{digits}g")) + ";" for v in values)
    assert b.render().decode() == expected
