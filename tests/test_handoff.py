"""A worker's large results reach its parent in shared memory (gamut.scanning.pipeline.handoff): bytes
written once into a memfd, a tile's text joined into a memfd's pages handed over without a copy."""
from __future__ import annotations

import gc
import multiprocessing
import os
import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gamut.io.memfd_array import MemfdArray, joined
from gamut.scanning.pipeline.handoff import send_fds, share, unshare

needs_memfd = pytest.mark.skipif(not hasattr(os, "memfd_create"), reason="no memfd on this system")


@settings(max_examples=50, deadline=None)
@given(st.lists(st.binary(max_size=300), max_size=8))
def test_joined_pieces_are_the_pieces_end_to_end(parts):
    pieces = [np.frombuffer(p, np.uint8) for p in parts]
    text = joined(pieces)
    assert text.dtype == np.uint8 and text.tobytes() == b"".join(parts)
    assert pickle.loads(pickle.dumps(text)).tobytes() == b"".join(parts)
    assert type(pickle.loads(pickle.dumps(text))) is np.ndarray  # a plain array elsewhere
    buffers: list = []  # protocol 5 out of band (as Dask sends a worker's tiles): the pages, not a copy
    data = pickle.dumps(text, protocol=5, buffer_callback=buffers.append)
    assert len(buffers) == 1 and len(data) < 200 and memoryview(buffers[0]).nbytes == len(b"".join(parts))
    assert pickle.loads(data, buffers=buffers).tobytes() == b"".join(parts)


@needs_memfd
def test_a_joined_tile_is_read_only_and_takes_any_pieces():
    """Strided and empty pieces join as their bytes; the memfd's pages are mapped read-only."""
    text = joined([np.arange(10, dtype=np.uint8)[::2], np.zeros(0, np.uint8), np.frombuffer(b"xyz", np.uint8)])
    assert isinstance(text, MemfdArray) and text.tobytes() == bytes(range(0, 10, 2)) + b"xyz"
    assert not text.flags.writeable
    assert os.pread(text.fd, 16, 0) == text.tobytes()  # the memfd holds the bytes themselves


def test_joined_without_memfds_is_a_plain_array(monkeypatch):
    monkeypatch.delattr(os, "memfd_create", raising=False)
    text = joined([np.frombuffer(b"ab", np.uint8), np.arange(10, dtype=np.uint8)[::2]])
    assert type(text) is np.ndarray and text.tobytes() == b"ab" + bytes(range(0, 10, 2))


def _round_trip(value, share_from: int):
    """``value`` through share() on one end of a pipe and unshare() on the other, as between a worker
    and its parent; also how many descriptors went along."""
    parent, child = multiprocessing.Pipe()
    fds: list[int] = []
    try:
        shared = share(value, fds, share_from)
        parent.send(shared)
        if fds:
            send_fds(parent, fds)
        got = unshare(child.recv(), child)
    finally:
        for fd in fds:
            os.close(fd)
        parent.close()
        child.close()
    return got, len(fds)


@needs_memfd
def test_a_joined_tile_is_handed_over_in_its_own_pages():
    text = joined([np.frombuffer(b"query1\tref\n" * 1000, np.uint8), np.frombuffer(b"tail\n", np.uint8)])
    assert isinstance(text, MemfdArray) and text.fd is not None
    (got, offsets), sent = _round_trip((text, np.array([0, 11], np.int64)), share_from=1024)
    assert sent == 1 and bytes(got) == text.tobytes() and offsets.tolist() == [0, 11]
    fd = text.fd
    del text, got
    gc.collect()
    with pytest.raises(OSError):  # the memfd is closed with the array
        os.fstat(fd)


@needs_memfd
def test_small_results_and_plain_bytes_travel_as_before():
    small = joined([np.frombuffer(b"abc", np.uint8)])
    got, sent = _round_trip((small, b"x" * 5000), share_from=1024)
    assert sent == 1 and bytes(got[0]) == b"abc" and bytes(got[1]) == b"x" * 5000
