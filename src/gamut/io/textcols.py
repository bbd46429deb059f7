"""Text from columns: records assembled from byte pieces in compiled code, no Python work per row.

A writer describes each kind of output record (a hit block, a per-pair header, ...) as a list of
pieces: constant text, or a per-row column of strings (a byte buffer with per-row start and
length). :class:`TextBuilder` collects the records of a chunk with sort keys, orders them and
copies every piece into one output buffer in a single compiled pass.

Numbers become text once per distinct value (:meth:`TextBuilder.formatted`), so the formatting
is Python's own (exactly what ``f"{x:f}"`` prints) while the cost follows the number of distinct
values, not the number of rows.
"""
from __future__ import annotations

import math
from typing import Callable, Sequence, Union

import numpy as np
from numba import njit

#: A piece of a record: constant text, or ``(starts, lengths)`` of per-row strings in the pool.
Piece = Union[str, tuple[np.ndarray, np.ndarray]]


@njit(cache=True, nogil=True)
def _copy_records(pool, starts, lengths, order):
    """Concatenate, for the rows ``r`` in ``order``, the pieces ``pool[starts[r, k]:starts[r, k] +
    lengths[r, k]]`` of that row in piece order."""
    width = starts.shape[1]
    total = 0
    for r in range(starts.shape[0]):
        for k in range(width):
            total += lengths[r, k]
    out = np.empty(total, np.uint8)
    pos = 0
    for x in range(order.shape[0]):
        r = order[x]
        for k in range(width):
            a = starts[r, k]
            n = lengths[r, k]
            for y in range(n):
                out[pos + y] = pool[a + y]
            pos += n
    return out


@njit(cache=True, nogil=True)
def _int_text(values):
    """Decimal text of int64 ``values``: one buffer and per-value start/length."""
    n = values.shape[0]
    lengths = np.empty(n, np.int64)
    for k in range(n):
        v = values[k]
        d = 1
        a = -v if v < 0 else v
        while a >= 10:
            a //= 10
            d += 1
        lengths[k] = d + (1 if v < 0 else 0)
    starts = np.zeros(n, np.int64)
    total = 0
    for k in range(n):
        starts[k] = total
        total += lengths[k]
    buf = np.empty(total, np.uint8)
    for k in range(n):
        v = values[k]
        end = starts[k] + lengths[k]
        if v < 0:
            buf[starts[k]] = 45  # '-'
            v = -v
        pos = end - 1
        while True:
            buf[pos] = 48 + v % 10
            v //= 10
            pos -= 1
            if v == 0:
                break
    return buf, starts, lengths


@njit(cache=True, nogil=True)
def _fixed_text(values, decimals):
    """``printf("%.{decimals}f")`` of float64 ``values``, exactly (round half to even on the exact
    binary value, as glibc does), in integer arithmetic. Rows whose scaled value does not fit
    64-bit integers are flagged in ``ok`` (the caller formats those in Python)."""
    n = values.shape[0]
    scale = 1
    for _ in range(decimals):
        scale *= 10
    limit = 9223372036854775807 // scale
    q_all = np.zeros(n, np.int64)
    neg = np.zeros(n, np.bool_)
    ok = np.ones(n, np.bool_)
    lengths = np.zeros(n, np.int64)
    for k in range(n):
        v = values[k]
        neg[k] = v < 0 or (v == 0 and math.copysign(1.0, v) < 0)
        a = abs(v)
        if not math.isfinite(a):
            ok[k] = False
            continue
        m, e = math.frexp(a)
        M = np.int64(m * 9007199254740992.0)  # m * 2^53, exact
        E = e - 53
        while M != 0 and (M & 1) == 0 and E < 0:
            M >>= 1
            E += 1
        if M > limit:
            ok[k] = False
            continue
        N = M * scale
        if E >= 0:
            if E > 62 or N > (9223372036854775807 >> E):
                ok[k] = False
                continue
            q = N << E
        else:
            sh = -E
            if sh > 62:
                q = np.int64(0)
            else:
                q = N >> sh
                rem = N - (q << sh)
                half = np.int64(1) << (sh - 1)
                if rem > half or (rem == half and (q & 1) == 1):
                    q += 1
        q_all[k] = q
        digits = 1
        t = q // scale
        while t >= 10:
            t //= 10
            digits += 1
        lengths[k] = digits + (1 + decimals if decimals > 0 else 0) + (1 if neg[k] else 0)
    starts = np.zeros(n, np.int64)
    total = 0
    for k in range(n):
        starts[k] = total
        total += lengths[k] if ok[k] else 0
    buf = np.empty(total, np.uint8)
    for k in range(n):
        if not ok[k]:
            continue
        pos = starts[k] + lengths[k] - 1
        q = q_all[k]
        for _ in range(decimals):
            buf[pos] = 48 + q % 10
            q //= 10
            pos -= 1
        if decimals > 0:
            buf[pos] = 46  # '.'
            pos -= 1
        while True:
            buf[pos] = 48 + q % 10
            q //= 10
            pos -= 1
            if q == 0:
                break
        if neg[k]:
            buf[pos] = 45  # '-'
    return buf, starts, lengths, ok


class TextBuilder:
    """Collects keyed records made of pieces and renders them in key order as one byte string."""

    def __init__(self) -> None:
        self._pool: list[np.ndarray] = []
        self._size = 0
        self._consts: dict[str, tuple[int, int]] = {}
        self._records: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []

    # -- sources ------------------------------------------------------------------------------
    def _add(self, data: np.ndarray) -> int:
        base = self._size
        self._pool.append(np.ascontiguousarray(data, np.uint8))
        self._size += int(data.shape[0])
        return base

    def const(self, text: str) -> tuple[int, int]:
        """Pool position of a constant text (latin-1), added once."""
        found = self._consts.get(text)
        if found is None:
            raw = np.frombuffer(text.encode("latin-1"), np.uint8)
            found = self._consts[text] = (self._add(raw), raw.shape[0])
        return found

    def buffer(self, data: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """A column of strings ``data[starts[k]:starts[k]+lengths[k]]``."""
        base = self._add(data)
        return np.asarray(starts, np.int64) + base, np.asarray(lengths, np.int64)

    def strings(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """A column from Python strings (for per-sequence columns built once, such as ids)."""
        encoded = [t.encode("latin-1") for t in texts]
        lengths = np.fromiter(map(len, encoded), np.int64, len(encoded))
        starts = np.zeros(len(encoded), np.int64)
        if len(encoded) > 1:
            np.cumsum(lengths[:-1], out=starts[1:])
        return self.buffer(np.frombuffer(b"".join(encoded), np.uint8), starts, lengths)

    def integers(self, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Decimal text of integers (as ``str(int)``)."""
        buf, starts, lengths = _int_text(np.ascontiguousarray(values, np.int64))
        return self.buffer(buf, starts, lengths)

    def fixed(self, values: np.ndarray, decimals: int) -> tuple[np.ndarray, np.ndarray]:
        """Text of ``f"{float(x):.{decimals}f}"`` for every value, in compiled code (exact: the
        same digits as Python and C's printf); the rare values beyond 64-bit integer arithmetic
        are formatted by Python."""
        values = np.ascontiguousarray(values, np.float64)
        buf, starts, lengths, ok = _fixed_text(values, decimals)
        starts, lengths = self.buffer(buf, starts, lengths)
        if not ok.all():
            bad = np.flatnonzero(~ok)
            spec = f".{decimals}f"
            starts[bad], lengths[bad] = self.formatted(values[bad], lambda v: format(v, spec))
        return starts, lengths

    def formatted(self, values: np.ndarray, fmt: Callable[[float], str]) -> tuple[np.ndarray, np.ndarray]:
        """``fmt(value)`` for every value, computed once per distinct value."""
        values = np.asarray(values)
        if values.size == 0:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        distinct, inverse = np.unique(values, return_inverse=True)
        starts, lengths = self.strings([fmt(v) for v in distinct.tolist()])
        return starts[inverse], lengths[inverse]

    @staticmethod
    def take(column: tuple[np.ndarray, np.ndarray], index: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Rows ``index`` of a column (e.g. per-hit query ids from the per-query id column)."""
        return column[0][index], column[1][index]

    # -- records ------------------------------------------------------------------------------
    def records(self, major: np.ndarray, slot: int, minor: np.ndarray | int, pieces: Sequence[Piece]) -> None:
        """Add ``len(major)`` records ordered by (``major``, ``slot``, ``minor``), each the
        concatenation of ``pieces`` (constants, or columns with one row per record)."""
        major = np.asarray(major, np.int64)
        n = major.shape[0]
        if n == 0 or not pieces:
            return
        starts = np.empty((n, len(pieces)), np.int64)
        lengths = np.empty((n, len(pieces)), np.int64)
        for k, piece in enumerate(pieces):
            if isinstance(piece, str):
                starts[:, k], lengths[:, k] = self.const(piece)
            else:
                starts[:, k], lengths[:, k] = piece
        minor_arr = np.broadcast_to(np.asarray(minor, np.int64), (n,))
        self._records.append((major, np.full(n, slot, np.int64), minor_arr, starts, lengths))

    def render(self) -> bytes:
        """All records in key order, as bytes."""
        if not self._records:
            return b""
        major = np.concatenate([r[0] for r in self._records])
        slot = np.concatenate([r[1] for r in self._records])
        minor = np.concatenate([r[2] for r in self._records])
        width = max(r[3].shape[1] for r in self._records)
        starts = np.zeros((major.shape[0], width), np.int64)
        lengths = np.zeros((major.shape[0], width), np.int64)
        row = 0
        for r in self._records:
            n, k = r[3].shape
            starts[row:row + n, :k] = r[3]
            lengths[row:row + n, :k] = r[4]
            row += n
        order = _key_order(major, slot, minor)
        pool = np.concatenate(self._pool) if self._pool else np.zeros(0, np.uint8)
        return _copy_records(pool, starts, lengths, order).tobytes()


def _key_order(major: np.ndarray, slot: np.ndarray, minor: np.ndarray) -> np.ndarray:
    """The order of rows by (major, slot, minor): one stable sort of a combined key where the
    ranges allow (they do for any real output), else a lexicographic sort."""
    lows = [int(a.min()) for a in (major, slot, minor)]
    spans = [int(a.max()) - lo + 1 for a, lo in zip((major, slot, minor), lows)]
    if spans[0] * spans[1] * spans[2] < 2**62:
        key = ((major - lows[0]) * spans[1] + (slot - lows[1])) * spans[2] + (minor - lows[2])
        return np.argsort(key, kind="stable")
    return np.lexsort((minor, slot, major))


@njit(cache=True, nogil=True)
def _gather(data, starts, lengths, index):
    """The strings ``index`` of a column, packed: (buffer, starts)."""
    total = 0
    for k in range(index.shape[0]):
        total += lengths[index[k]]
    out = np.empty(total, np.uint8)
    new_starts = np.empty(index.shape[0], np.int64)
    pos = 0
    for k in range(index.shape[0]):
        s = starts[index[k]]
        n = lengths[index[k]]
        new_starts[k] = pos
        for x in range(n):
            out[pos + x] = data[s + x]
        pos += n
    return out, new_starts


class StringColumn:
    """Per-sequence strings kept for a whole run (ids, 'Read Sequence' lines), one buffer."""

    def __init__(self, texts: Sequence[str]) -> None:
        encoded = [t.encode("latin-1") for t in texts]
        self.lengths = np.fromiter(map(len, encoded), np.int64, len(encoded))
        self.starts = np.zeros(len(encoded), np.int64)
        if len(encoded) > 1:
            np.cumsum(self.lengths[:-1], out=self.starts[1:])
        self.data = np.frombuffer(b"".join(encoded), np.uint8)

    def __len__(self) -> int:
        return int(self.lengths.shape[0])


def pick(builder: TextBuilder, column: StringColumn, index: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows ``index`` of a run-wide column, copied (only those rows) into ``builder``'s pool."""
    index = np.ascontiguousarray(index, np.int64)
    buf, starts = _gather(column.data, column.starts, column.lengths, index)
    return builder.buffer(buf, starts, column.lengths[index])


def gather(data: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The strings ``data[starts[k]:starts[k]+lengths[k]]`` packed one after the other: (buffer, starts)."""
    n = int(np.asarray(starts).shape[0])
    return _gather(np.ascontiguousarray(data, np.uint8), np.ascontiguousarray(starts, np.int64),
                   np.ascontiguousarray(lengths, np.int64), np.arange(n, dtype=np.int64))


_FNV_OFFSET = np.uint64(14695981039346656037)
_FNV_PRIME = np.uint64(1099511628211)


@njit(cache=True, nogil=True)
def _string_hashes(data, offsets):
    """A 64-bit FNV-1a hash of each packed string (length mixed in)."""
    n = offsets.shape[0] - 1
    out = np.empty(n, np.uint64)
    for k in range(n):
        h = _FNV_OFFSET
        for i in range(offsets[k], offsets[k + 1]):
            h = (h ^ np.uint64(data[i])) * _FNV_PRIME
        out[k] = h ^ np.uint64(offsets[k + 1] - offsets[k])
    return out


@njit(cache=True, nogil=True)
def _same_string(data, offsets, a, b):
    la = offsets[a + 1] - offsets[a]
    if la != offsets[b + 1] - offsets[b]:
        return False
    sa, sb = offsets[a], offsets[b]
    for i in range(la):
        if data[sa + i] != data[sb + i]:
            return False
    return True


@njit(cache=True, nogil=True)
def _first_copies(data, offsets, hashes):
    """For each string, the index of the first string with the same bytes: strings go into an
    open-addressing table (linear probing, at least twice as many slots as strings) in index
    order, so a slot holds its first copy; bytes are compared, so a hash collision never merges
    different strings. O(n) expected, no sort."""
    n = hashes.shape[0]
    size = 1
    while size < 2 * n:
        size <<= 1
    table = np.full(size, -1, np.int64)
    first = np.empty(n, np.int64)
    for k in range(n):
        h = hashes[k]
        slot = np.int64(h & np.uint64(size - 1))
        while True:
            r = table[slot]
            if r < 0:
                table[slot] = k
                first[k] = k
                break
            if hashes[r] == h and _same_string(data, offsets, k, r):
                first[k] = r
                break
            slot = (slot + 1) & (size - 1)
    return first


def distinct_strings(data: np.ndarray, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct strings among packed strings (string k is ``data[offsets[k]:offsets[k+1]]``),
    byte for byte: ``(keep, inverse)`` with ``keep`` the index of each distinct string's first
    copy (ascending) and ``inverse[k]`` the position in ``keep`` of string k's first copy."""
    data = np.ascontiguousarray(data, np.uint8)
    offsets = np.ascontiguousarray(offsets, np.int64)
    hashes = _string_hashes(data, offsets)
    first = _first_copies(data, offsets, hashes)
    keep = np.flatnonzero(first == np.arange(first.shape[0]))
    slot = np.empty(first.shape[0], np.int64)
    slot[keep] = np.arange(keep.shape[0])
    return keep, slot[first]


def take_strings(data: np.ndarray, offsets: np.ndarray, index: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Packed strings ``index`` of packed strings, as (data, offsets)."""
    offsets = np.ascontiguousarray(offsets, np.int64)
    index = np.ascontiguousarray(index, np.int64)
    buf, starts = _gather(np.ascontiguousarray(data, np.uint8), offsets[:-1], np.diff(offsets), index)
    return buf, np.append(starts, np.int64(buf.shape[0]))
