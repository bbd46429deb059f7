"""General FASTA reading and atomic output."""
from __future__ import annotations

import gzip
import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gamut.errors import InputError
from gamut.io import atomic_output, read_fasta


def test_read_fasta_plain_and_gzip(tmp_path):
    text = ">a first\nACGU\nAC\n>b\nGG\n"
    plain = tmp_path / "x.fa"
    plain.write_text(text)
    packed = tmp_path / "x.fa.gz"
    packed.write_bytes(gzip.compress(text.encode()))
    for path in (plain, packed):
        records = list(read_fasta(path))
        assert [(r.name, r.description, r.sequence) for r in records] == [("a", "first", "ACGUAC"), ("b", "", "GG")]


@pytest.mark.parametrize(
    "content, message",
    [("", "no FASTA records"), (">a\n", "has no sequence"), ("ACGU\n", "not valid FASTA")],
)
def test_read_fasta_errors(tmp_path, content, message):
    path = tmp_path / "bad.fa"
    path.write_text(content)
    with pytest.raises(InputError, match=message):
        list(read_fasta(path))
    with pytest.raises(InputError, match="no such file"):
        list(read_fasta(tmp_path / "missing.fa"))


def test_atomic_output_only_on_success(tmp_path):
    target = tmp_path / "out.txt"
    with pytest.raises(RuntimeError):
        with atomic_output(target) as handle:
            handle.write("half")
            raise RuntimeError("boom")
    assert not target.exists() and os.listdir(tmp_path) == []
    with atomic_output(target) as handle:
        handle.write("whole")
    assert target.read_text() == "whole"
    umask = os.umask(0)
    os.umask(umask)
    assert target.stat().st_mode & 0o777 == 0o666 & ~umask


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(st.integers(-3, 40), st.integers(0, 4), st.integers(-(2**40), 2**40)), max_size=60))
def test_text_records_sort_by_major_slot_minor(keys):
    """The combined-key sort of TextBuilder rows is the lexicographic order, ties kept stable,
    including key ranges too wide to combine."""
    from gamut.io.textcols import _key_order

    for scale in (1, 2**30):
        major = np.array([k[0] * scale for k in keys], np.int64)
        slot = np.array([k[1] for k in keys], np.int64)
        minor = np.array([k[2] for k in keys], np.int64)
        if not keys:
            continue
        assert _key_order(major, slot, minor).tolist() == np.lexsort((minor, slot, major)).tolist()


def test_write_behind_keeps_order_and_raises_a_failed_write(tmp_path):
    """Pieces are rendered and written on the writer's thread in order; a failed write is raised by
    the next write or by finish (never lost)."""
    import io

    from gamut.io.textout import WriteBehind

    out = io.BytesIO()
    writes = WriteBehind(out)
    for k in range(50):
        writes.write(lambda k=k: np.frombuffer(f"{k},".encode(), np.uint8))
    writes.finish()
    assert out.getvalue().decode() == "".join(f"{k}," for k in range(50))

    class Full(io.RawIOBase):
        def writable(self):
            return True

        def write(self, data):
            raise OSError(28, "No space left on device")

    writes = WriteBehind(Full())
    writes.write(lambda: b"x")
    with pytest.raises(OSError, match="No space"):
        writes.finish()
    writes = WriteBehind(Full())
    writes.write(lambda: b"x")
    with pytest.raises(OSError, match="No space"):
        writes.write(lambda: b"y")
        writes.finish()


@pytest.mark.parametrize("exchange", [True, False], ids=["exchange", "plain-replace"])
def test_replace_file_puts_the_new_file_in_place_and_leaves_nothing_else(tmp_path, monkeypatch, exchange):
    """replace_file swaps the names (renameat2's exchange, where the system has it) and removes the
    old file, or renames as os.replace: either way the destination is the new file (same inode),
    the old one is gone, and a missing destination or a directory behave as with os.replace."""
    from gamut.io import atomic

    if not exchange:
        monkeypatch.setattr(atomic, "_exchange_call", lambda: None)
    elif atomic._exchange_call() is None:
        pytest.skip("no renameat2 here")
    dest, new = tmp_path / "out.tsv", tmp_path / ".out.tsv.tmp"
    dest.write_bytes(b"old\n")
    other = tmp_path / "other-link"
    os.link(dest, other)  # the old file is still reachable through another name
    new.write_bytes(b"new\n")
    inode = new.stat().st_ino
    atomic.replace_file(str(new), str(dest))
    assert dest.read_bytes() == b"new\n" and dest.stat().st_ino == inode
    assert not new.exists() and other.read_bytes() == b"old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other-link", "out.tsv"]
    new.write_bytes(b"fresh\n")
    atomic.replace_file(str(new), str(tmp_path / "missing.tsv"))  # nothing to exchange with
    assert (tmp_path / "missing.tsv").read_bytes() == b"fresh\n" and not new.exists()
    (tmp_path / "d").mkdir()
    new.write_bytes(b"x\n")
    with pytest.raises(IsADirectoryError):
        atomic.replace_file(str(new), str(tmp_path / "d"))
    assert new.read_bytes() == b"x\n" and (tmp_path / "d").is_dir()


def test_atomic_output_replaces_an_old_output_in_one_step(tmp_path):
    out = tmp_path / "hits.tsv"
    out.write_bytes(b"old\n")
    os.chmod(out, 0o640)
    with atomic_output(out, "w") as handle:
        handle.write("new\n")
        assert out.read_bytes() == b"old\n"  # the old output stays until the block succeeds
    assert out.read_bytes() == b"new\n" and oct(out.stat().st_mode & 0o777) == "0o640"
    assert [p.name for p in tmp_path.iterdir()] == ["hits.tsv"]
