"""Text from columns: records assembled from byte pieces in compiled code, no Python work per row.

A writer describes each kind of output record (a hit block, a per-pair header, ...) as a list of
pieces: constant text, a per-row column of strings (a byte buffer with per-row start and
length), or a per-row column of numbers (:class:`Numbers`). :class:`TextBuilder` collects the
records of a chunk with sort keys, orders them and writes every piece into one output buffer in a
single compiled pass (parallel over rows).

Integers, fixed-point and significant-digit numbers become text in compiled code
(:mod:`gamut.io.numtext`: exactly what ``str(int)`` and printf's ``%.Nf`` and ``%.Ng`` print):
integers and fixed point as the rows are written (no text of their own: a chunk's columns of
numbers cost no kernel, buffer or thread start of their own), the rest as columns of strings;
other formats (:meth:`TextBuilder.formatted`) are Python's own, once per distinct value, so their
cost follows the number of distinct values, not of rows.
"""
from __future__ import annotations

import json
from typing import Callable, NamedTuple, Sequence, Union

import llvmlite.ir as llvm_ir
import numpy as np
from numba import njit, prange, types
from numba.extending import intrinsic

from gamut.io.numtext import (
    _POW10,
    _fixed_put,
    _fixed_size,
    _fixed_text,
    _general_text,
    _int_put,
    _int_size,
    _int_text,
    _packed_starts,
)
from gamut.io.textout import raw_text
from gamut.io.threads import Parallel, run_kernel

#: How the render writes a piece (:func:`_render_rows`): a constant, a column of strings, or a column
#: of numbers as integers or fixed point (:class:`Numbers`).
_CONSTANT, _STRINGS, _INTEGERS, _FIXED = 0, 1, 2, 3


class Numbers(NamedTuple):
    """A piece of records: a column of numbers that the render writes as text itself (made by
    :meth:`TextBuilder.integers` and :meth:`TextBuilder.fixed`)."""

    values: np.ndarray  # int64 (integers) or float64 (fixed point), contiguous
    decimals: int  # after the point (integers: '.' and that many zeros if more than 0)
    kind: int  # _INTEGERS or _FIXED


#: A piece of a record: constant text, a column ``(starts, lengths)`` of per-row strings, or a
#: column of numbers (see :class:`TextBuilder`).
Piece = Union[str, tuple[np.ndarray, np.ndarray], Numbers]

_INT64_MIN = -2**63
#: Fixed point written by the render up to this many decimals: a float's 53-bit significand times
#: 10**decimals then fits 64-bit integers, so every finite value below 2**62 / 10**decimals is
#: written in integer arithmetic (:func:`gamut.io.numtext._scaled` never gives up on one).
INLINE_DECIMALS = 3


@njit(cache=True, nogil=True, inline="always")
def _copy_short(out, pos, src, start, size):
    """``out[pos:pos+size] = src[start:start+size]`` for the short strings of records: two bytes a
    step (LLVM turns a plain byte loop into a ``memcpy`` call per piece, whose call overhead
    outweighs the copy of a ~10-byte piece)."""
    y = 0
    while y + 1 < size:
        out[pos + y] = src[start + y]
        out[pos + y + 1] = src[start + y + 1]
        y += 2
    if y < size:
        out[pos + y] = src[start + y]


def _mover(bits: int):
    """An intrinsic ``move(out, pos, address)``: ``bits // 8`` bytes read at ``address`` (an
    integer, unaligned) written to ``out[pos:]``, one load and one store, no bounds check."""

    @intrinsic
    def move(typingctx, out, pos, address):
        def codegen(context, builder, signature, args):
            array = context.make_array(signature.args[0])(context, builder, args[0])
            word = llvm_ir.IntType(bits).as_pointer()
            value = builder.load(builder.inttoptr(args[2], word), align=1)
            builder.store(value, builder.bitcast(builder.gep(array.data, [args[1]]), word), align=1)
            return context.get_dummy_value()

        return types.void(out, types.int64, types.int64), codegen

    return move


_move8, _move4, _move2, _move1 = (_mover(bits) for bits in (64, 32, 16, 8))


@intrinsic
def _peek(typingctx, address):
    """The int64 at ``address`` (an integer; int64 arrays are 8-byte aligned)."""

    def codegen(context, builder, signature, args):
        return builder.load(builder.inttoptr(args[0], llvm_ir.IntType(64).as_pointer()), align=8)

    return types.int64(types.int64), codegen


@intrinsic
def _peek_float(typingctx, address):
    """The float64 at ``address`` (an integer; float64 arrays are 8-byte aligned)."""

    def codegen(context, builder, signature, args):
        return builder.load(builder.inttoptr(args[0], llvm_ir.DoubleType().as_pointer()), align=8)

    return types.float64(types.int64), codegen


@njit(cache=True, nogil=True, inline="always")
def _copy_from(out, pos, address, size):
    """``size`` bytes at ``address`` to ``out[pos:]``: whole words, the last one overlapping the
    one before where ``size`` is not a multiple of its width (as small-copy ``memcpy`` does), so
    nothing outside the piece is read or written."""
    if size >= 8:
        y = 0
        while y + 8 < size:
            _move8(out, pos + y, address + y)
            y += 8
        _move8(out, pos + size - 8, address + size - 8)
    elif size >= 4:
        _move4(out, pos, address)
        _move4(out, pos + size - 4, address + size - 4)
    elif size >= 2:
        _move2(out, pos, address)
        _move2(out, pos + size - 2, address + size - 2)
    elif size == 1:
        _move1(out, pos, address)


@njit(cache=True, nogil=True, inline="always")
def _scale_of(decimals):
    scale = 1
    for _ in range(decimals):
        scale *= 10
    return scale


@njit(cache=True, nogil=True, inline="always")
def _piece_size(kind, start, length, i):
    """Bytes of piece ``(start, length, kind)`` in local row ``i`` (see :func:`_render_rows`)."""
    if kind == _INTEGERS:
        return _int_size(_peek(start + 8 * i), length)
    if kind == _FIXED:
        return _fixed_size(_peek_float(start + 8 * i), length, _scale_of(length))[2]
    return _peek(length + 8 * kind * i)


@njit(cache=True, nogil=True, inline="always")
def _put_piece(out, pos, kind, start, length, i):
    """Write piece ``(start, length, kind)`` of local row ``i`` at ``out[pos]``; return its size."""
    if kind == _INTEGERS:
        v = _peek(start + 8 * i)
        size = _int_size(v, length)
        _int_put(out, pos, size, v, length)
    elif kind == _FIXED:
        q, neg, size = _fixed_size(_peek_float(start + 8 * i), length, _scale_of(length))
        _fixed_put(out, pos, size, q, neg, length)
    else:
        k = 8 * kind * i
        size = _peek(length + k)
        _copy_from(out, pos, _peek(start + k), size)
    return size


@njit(cache=True, nogil=True, parallel=True)
def _render_rows(piece_starts, piece_lengths, piece_kind, spec_off, row_base, order):
    """Rows ``order`` (row numbers over all groups) concatenated, in parallel over rows.

    Group g holds rows ``row_base[g]:row_base[g+1]``; its pieces are ``spec_off[g]:spec_off[g+1]``.
    Piece p of local row i, by ``piece_kind[p]``: a constant (0) or a column of strings (1) is
    ``_peek(piece_lengths[p] + 8 * k)`` bytes at the address ``_peek(piece_starts[p] + 8 * k)``,
    ``k = piece_kind[p] * i`` (``piece_starts[p]`` and ``piece_lengths[p]`` are the addresses of the
    int64 arrays of the piece's start addresses and lengths); a column of numbers is the text of
    the number at ``piece_starts[p] + 8 * i``, an integer (2) or a float written in fixed point (3),
    with ``piece_lengths[p]`` decimals (:class:`Numbers`). :class:`TextBuilder` keeps every array
    alive. Each row's output offset comes from a prefix sum of the row lengths, so rows are written
    independently. Returns the text and those offsets (row ``x`` of ``order`` starts at ``offsets[x]``).
    """
    n = order.shape[0]
    group = np.empty(n, np.int64)
    offsets = np.zeros(n + 1, np.int64)
    for x in prange(n):
        r = order[x]
        g = np.searchsorted(row_base, r, side="right") - 1
        i = r - row_base[g]
        size = 0
        for p in range(spec_off[g], spec_off[g + 1]):
            size += _piece_size(piece_kind[p], piece_starts[p], piece_lengths[p], i)
        group[x] = g
        offsets[x + 1] = size
    for x in range(n):
        offsets[x + 1] += offsets[x]
    out = np.empty(offsets[n], np.uint8)
    for x in prange(n):
        g = group[x]
        i = order[x] - row_base[g]
        pos = offsets[x]
        for p in range(spec_off[g], spec_off[g + 1]):
            pos += _put_piece(out, pos, piece_kind[p], piece_starts[p], piece_lengths[p], i)
    return out, offsets


def _address(array: np.ndarray) -> int:
    """Where ``array``'s data starts in memory."""
    return array.__array_interface__["data"][0]


class TextBuilder:
    """Collects keyed records made of pieces and renders them in key order as one byte string.

    A column is ``(starts, lengths)``: the address in memory where each row's string starts, and
    its length; a column of numbers (:class:`Numbers`) is written as text by the render itself.
    Sources (constants, number text, whole buffers such as a chunk's alignment lines,
    run-wide columns such as ids) are never copied: the builder keeps each one, and every array
    of addresses, alive until it is dropped. A group of records is kept as its keys and piece
    list (no per-row piece table); :meth:`render_array` orders all rows and copies their pieces
    in one compiled pass, parallel over rows if ``parallel`` (see
    :func:`~gamut.io.threads.run_kernel`; number text too).
    """

    def __init__(self, parallel: Parallel = False) -> None:
        self.parallel = parallel
        self._keep: list[np.ndarray] = []  # every array whose memory a column's addresses point into
        self._consts: dict[str, tuple[np.ndarray, np.ndarray]] = {}  # text -> one-row column
        self._groups: list[tuple[np.ndarray, int, np.ndarray, list[tuple[int, int, int]]]] = []

    # -- sources ------------------------------------------------------------------------------
    def _held(self, array: np.ndarray, dtype) -> np.ndarray:
        """``array`` as a contiguous array of ``dtype``, kept alive with the builder."""
        array = np.ascontiguousarray(array, dtype)
        self._keep.append(array)
        return array

    def const(self, text: str) -> tuple[np.ndarray, np.ndarray]:
        """A constant text as a one-row column, made once."""
        found = self._consts.get(text)
        if found is None:
            raw = np.frombuffer(raw_text(text), np.uint8)
            found = self._consts[text] = self.buffer(raw, np.zeros(1, np.int64), np.array([raw.shape[0]], np.int64))
        return found

    def buffer(self, data: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """A column of strings ``data[starts[k]:starts[k]+lengths[k]]`` (``data`` is kept, not copied)."""
        data = self._held(data, np.uint8)
        return np.asarray(starts, np.int64) + _address(data), np.asarray(lengths, np.int64)

    def strings(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """A column from Python strings (for per-sequence columns built once, such as ids)."""
        encoded = [raw_text(t) for t in texts]
        lengths = np.fromiter(map(len, encoded), np.int64, len(encoded))
        starts, _ = _packed_starts(lengths)
        return self.buffer(np.frombuffer(b"".join(encoded), np.uint8), starts, lengths)

    def integers(self, values: np.ndarray) -> Piece:
        """Decimal text of integers (as ``str(int)``), written by the render (:class:`Numbers`)."""
        return self._integers(np.ascontiguousarray(values, np.int64), 0)

    def integer_column(self, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`integers` as a column of strings (for a caller that changes some of its rows)."""
        values = np.ascontiguousarray(values, np.int64)
        piece = self._integers(values, 0)
        if not isinstance(piece, Numbers):  # (written by Python)
            return piece
        buf, starts, lengths = run_kernel(_int_text, values.shape[0], self.parallel, values, 0)
        return self.buffer(buf, starts, lengths)

    def fixed(self, values: np.ndarray, decimals: int) -> Piece:
        """Text of ``f"{float(x):.{decimals}f}"`` for every value, exactly (the same digits as Python
        and C's printf). Integers (such as scores) take the integer path: digits, '.', zeros. With
        at most :data:`INLINE_DECIMALS` decimals, finite values below 2**62 / 10**decimals are
        written by the render (:class:`Numbers`); otherwise the column is one of strings, made in
        compiled code but for values beyond 64-bit integer arithmetic (Python formats those)."""
        values = np.asarray(values)
        if values.dtype.kind in "iu" and (values.size == 0 or (values.min() > -2**53 and values.max() < 2**53)):
            return self._integers(np.ascontiguousarray(values, np.int64), decimals)  # each is exactly its float64
        values = np.ascontiguousarray(values, np.float64)
        if decimals <= INLINE_DECIMALS and (
                values.size == 0 or (np.isfinite(values).all() and np.abs(values).max() < 2.0**62 / 10**decimals)):
            return Numbers(values, decimals, _FIXED)
        return self.fixed_column(values, decimals)

    def fixed_column(self, values: np.ndarray, decimals: int) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`fixed` of float values as a column of strings (for a caller that needs their lengths)."""
        values = np.ascontiguousarray(values, np.float64)
        buf, starts, lengths, ok = run_kernel(_fixed_text, values.shape[0], self.parallel, values, decimals)
        return self._compiled(values, buf, starts, lengths, ok, lambda v: format(v, f".{decimals}f"))

    def _integers(self, values: np.ndarray, decimals: int) -> Piece:
        """Int64 ``values`` as :class:`Numbers`, or as a column of strings written by Python where one is
        INT64_MIN."""
        if values.size and values.min() == _INT64_MIN:  # its magnitude is no int64: Python writes them
            return self.formatted(values, lambda v: format(v, f".{decimals}f") if decimals else str(v))
        return Numbers(values, decimals, _INTEGERS)

    def decimals(self, values: np.ndarray, decimals: int, null: str,
                 json_number: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """Text of every value with ``decimals`` decimals, ``f"{x:.{decimals}f}"`` (with
        ``json_number``: the number ``round(x, decimals)`` as :func:`json.dumps` writes it, i.e.
        without zeros after the first decimal), and ``null`` where NaN; in compiled code but for
        values beyond its range (Python formats those)."""
        values = np.ascontiguousarray(values, np.float64)
        nan = np.isnan(values)
        finite = np.where(nan, 0.0, values)
        buf, starts, lengths, ok = run_kernel(_fixed_text, values.shape[0], self.parallel, finite, decimals)
        if json_number:
            ok &= np.abs(finite) < 1e15  # json.dumps writes larger numbers with an exponent
            for _ in range(decimals - 1):  # '2.50' -> '2.5', '3.00' -> '3.0' (repr of the rounded float)
                if buf.size == 0:
                    break
                end = np.maximum(starts + lengths - 1, 1)
                lengths -= ok & (lengths > 2) & (buf[end] == 48) & (buf[end - 1] != 46)
        fmt = (lambda v: json.dumps(round(v, decimals))) if json_number else (lambda v: format(v, f".{decimals}f"))
        return self._compiled(values, buf, starts, lengths, ok, fmt, nan, null)

    def general(self, values: np.ndarray, digits: int, nan: str = "nan") -> tuple[np.ndarray, np.ndarray]:
        """Text of ``f"{x:.{digits}g}"`` for every value (``nan`` where NaN), in compiled code but
        for the rare values it cannot decide (ties within float error, infinities: Python's)."""
        values = np.ascontiguousarray(values, np.float64)
        buf, starts, lengths, ok = run_kernel(_general_text, values.shape[0], self.parallel, values, digits, _POW10)
        return self._compiled(values, buf, starts, lengths, ok, lambda v: format(v, f".{digits}g"),
                              np.isnan(values), nan)

    def _compiled(self, values: np.ndarray, buf: np.ndarray, starts: np.ndarray, lengths: np.ndarray,
                  ok: np.ndarray, fmt: Callable[[float], str], missing: np.ndarray | None = None,
                  null: str = "") -> tuple[np.ndarray, np.ndarray]:
        """The column a number kernel wrote (``buf``, ``starts``, ``lengths``), with the rows it
        could not decide (``~ok``) formatted by Python's ``fmt`` and ``null`` where ``missing``."""
        starts, lengths = self.buffer(buf, starts, lengths)
        rest = np.flatnonzero(~ok if missing is None else ~ok & ~missing)
        if rest.size:
            starts[rest], lengths[rest] = self.formatted(values[rest], fmt)
        if missing is not None and missing.any():
            starts[missing], lengths[missing] = self.const(null)
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
    def take(column: tuple[np.ndarray, np.ndarray] | Numbers, index: np.ndarray) -> tuple[np.ndarray, np.ndarray] | Numbers:
        """Rows ``index`` of a column (e.g. per-hit query ids from the per-query id column)."""
        if isinstance(column, Numbers):
            return column._replace(values=np.ascontiguousarray(column.values[index]))
        return column[0][index], column[1][index]

    # -- records ------------------------------------------------------------------------------
    def records(self, major: np.ndarray, slot: int, minor: np.ndarray | int, pieces: Sequence[Piece]) -> None:
        """Add ``len(major)`` records ordered by (``major``, ``slot``, ``minor``), each the
        concatenation of ``pieces`` (constants, or columns with one row per record)."""
        major = np.asarray(major, np.int64)
        n = major.shape[0]
        if n == 0 or not pieces:
            return
        spec = []
        for piece in pieces:
            if isinstance(piece, Numbers):
                if piece.values.shape != (n,):
                    raise ValueError(f"a column of {piece.values.shape} numbers in records of {n} rows")
                values = self._held(piece.values, piece.values.dtype)
                spec.append((_address(values), piece.decimals, piece.kind))
                continue
            if isinstance(piece, str):
                starts, lengths = self.const(piece)
                kind = _CONSTANT
            else:
                starts, lengths = piece
                if np.shape(starts) != (n,) or np.shape(lengths) != (n,):
                    raise ValueError(f"a column of {np.shape(starts)} rows in records of {n} rows")
                kind = _STRINGS
            starts, lengths = self._held(starts, np.int64), self._held(lengths, np.int64)
            spec.append((_address(starts), _address(lengths), kind))
        minor_arr = np.broadcast_to(np.asarray(minor, np.int64), (n,))
        self._groups.append((major, slot, minor_arr, spec))

    def render_array(self) -> np.ndarray:
        """All records in key order, as a uint8 array."""
        return self.render_cut(np.zeros(0, np.int64))[0]

    def render_cut(self, cuts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """All records in key order, as a uint8 array, and the offset in it of each of ``cuts``
        (ascending ``major`` keys): where the first record of ``major >= cut`` begins (the end of
        the text if none), so that the text of majors ``cuts[k]..cuts[k+1]-1`` is
        ``text[offsets[k]:offsets[k+1]]``."""
        groups = self._groups
        cuts = np.asarray(cuts, np.int64)
        if not groups:
            return np.zeros(0, np.uint8), np.zeros(cuts.shape[0], np.int64)
        sizes = [g[0].shape[0] for g in groups]
        major = np.concatenate([g[0] for g in groups])
        slot = np.repeat(np.array([g[1] for g in groups], np.int64), sizes)
        minor = np.concatenate([g[2] for g in groups])
        order = _key_order(major, slot, minor)
        row_base = np.zeros(len(groups) + 1, np.int64)
        np.cumsum(sizes, out=row_base[1:])
        spec_off = np.zeros(len(groups) + 1, np.int64)
        np.cumsum([len(g[3]) for g in groups], out=spec_off[1:])
        spec = np.array([piece for g in groups for piece in g[3]], np.int64).reshape(-1, 3)
        pieces = int(np.dot(sizes, np.diff(spec_off)))
        text, offsets = run_kernel(_render_rows, pieces, self.parallel, np.ascontiguousarray(spec[:, 0]),
                                   np.ascontiguousarray(spec[:, 1]), np.ascontiguousarray(spec[:, 2]), spec_off,
                                   row_base, np.ascontiguousarray(order, np.int64))
        if cuts.size == 0:
            return text, np.zeros(0, np.int64)
        return text, offsets[np.searchsorted(major[order], cuts, side="left")]

    def render(self) -> bytes:
        """All records in key order, as bytes."""
        return self.render_array().tobytes()


def _key_order(major: np.ndarray, slot: np.ndarray, minor: np.ndarray) -> np.ndarray:
    """The order of rows by (major, slot, minor): one stable sort of a combined key where the
    ranges allow (they do for any real output), else a lexicographic sort."""
    lows = [int(a.min()) for a in (major, slot, minor)]
    spans = [int(a.max()) - lo + 1 for a, lo in zip((major, slot, minor), lows)]
    if spans[0] * spans[1] * spans[2] < 2**62:
        key = ((major - lows[0]) * spans[1] + (slot - lows[1])) * spans[2] + (minor - lows[2])
        return np.argsort(key, kind="stable")
    return np.lexsort((minor, slot, major))


@njit(cache=True, nogil=True, parallel=True)
def _gather(data, starts, lengths, index):
    """The strings ``index`` of a column, packed: (buffer, starts)."""
    n = index.shape[0]
    picked = np.empty(n, np.int64)
    for k in range(n):
        picked[k] = lengths[index[k]]
    new_starts, total = _packed_starts(picked)
    out = np.empty(total, np.uint8)
    for k in prange(n):
        _copy_short(out, new_starts[k], data, starts[index[k]], picked[k])
    return out, new_starts


class StringColumn:
    """Per-sequence strings kept for a whole run (ids, 'Read Sequence' lines), one buffer."""

    def __init__(self, texts: Sequence[str]) -> None:
        encoded = [raw_text(t) for t in texts]
        self.lengths = np.fromiter(map(len, encoded), np.int64, len(encoded))
        self.starts = np.zeros(len(encoded), np.int64)
        if len(encoded) > 1:
            np.cumsum(self.lengths[:-1], out=self.starts[1:])
        self.data = np.frombuffer(b"".join(encoded), np.uint8)

    def __len__(self) -> int:
        return int(self.lengths.shape[0])


def pick(builder: TextBuilder, column: StringColumn, index: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows ``index`` of a run-wide column (its strings are not copied)."""
    index = np.asarray(index, np.int64)
    return builder.buffer(column.data, column.starts[index], column.lengths[index])


def gather(data: np.ndarray, starts: np.ndarray, lengths: np.ndarray,
           parallel: Parallel = False) -> tuple[np.ndarray, np.ndarray]:
    """The strings ``data[starts[k]:starts[k]+lengths[k]]`` packed one after the other: (buffer, starts)."""
    n = int(np.asarray(starts).shape[0])
    return run_kernel(_gather, n, parallel, np.ascontiguousarray(data, np.uint8),
                      np.ascontiguousarray(starts, np.int64), np.ascontiguousarray(lengths, np.int64),
                      np.arange(n, dtype=np.int64))


_FNV_OFFSET = np.uint64(14695981039346656037)
_FNV_PRIME = np.uint64(1099511628211)


@njit(cache=True, nogil=True, parallel=True)
def _string_hashes(data, offsets):
    """A 64-bit FNV-1a hash of each packed string (length mixed in)."""
    n = offsets.shape[0] - 1
    out = np.empty(n, np.uint64)
    for k in prange(n):
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


#: Hash tables of :func:`_first_copies`, one per value of a hash's top bits, filled in parallel.
_PARTITION_BITS = 6


@njit(cache=True, nogil=True, parallel=True)
def _first_copies(data, offsets, hashes):
    """For each string, the index of the first string with the same bytes. Equal strings have
    equal hashes, so strings are split by their hash's top bits into independent partitions,
    filled in parallel; in each, strings go into an open-addressing table (linear probing on the
    low bits, at least twice as many slots as strings) in index order, so a slot holds its first
    copy; bytes are compared, so a hash collision never merges different strings. O(n) expected,
    no sort."""
    n = hashes.shape[0]
    parts = 1 << _PARTITION_BITS
    shift = np.uint64(64 - _PARTITION_BITS)
    bounds = np.zeros(parts + 1, np.int64)
    for k in range(n):
        bounds[np.int64(hashes[k] >> shift) + 1] += 1
    for q in range(parts):
        bounds[q + 1] += bounds[q]
    members = np.empty(n, np.int64)  # string indices by partition, ascending in each
    fill = bounds[:-1].copy()
    for k in range(n):
        q = np.int64(hashes[k] >> shift)
        members[fill[q]] = k
        fill[q] += 1
    first = np.empty(n, np.int64)
    for q in prange(parts):
        size = 1
        while size < 2 * (bounds[q + 1] - bounds[q]):
            size <<= 1
        table = np.full(size, -1, np.int64)
        for t in range(bounds[q], bounds[q + 1]):
            k = members[t]
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
    buf, starts = run_kernel(_gather, index.shape[0], False, np.ascontiguousarray(data, np.uint8), offsets[:-1],
                             np.diff(offsets), index)
    return buf, np.append(starts, np.int64(buf.shape[0]))
