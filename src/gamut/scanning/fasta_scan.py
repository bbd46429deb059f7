"""The compiled pass of :mod:`gamut.scanning.fasta` over a FASTA file's bytes, by miRanda's rules
(miranda-model §2), and the one-line error of a pass that ended badly: a module of its own, which
the reader imports when it first parses, so that a command that only builds its job (the client of
a Dask cluster, sending its workers their orders) starts without Numba."""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
from numba import njit

from gamut.errors import InputError
from gamut.io.textout import shown
from gamut.io.threads import usable_cores
from gamut.scanning.alphabet import CLASS_OF

# What the compiled pass sees in a byte: a class code (0..4) for a letter, or one of these.
_OTHER, _SPACE, _START = -1, -2, -3
_KINDS = CLASS_OF.copy()
_KINDS[list(b" \t\r\n")] = _SPACE
_KINDS[ord(">")] = _START

# How the compiled pass ended (DONE: without fault; the others: parse_error's cases).
_DONE, _NOT_RECORD, _EOF_IN_HEADER, _EMPTY_ID, _ILLEGAL, _NO_SEQUENCE = range(6)
DONE = _DONE


@njit(cache=True, nogil=True)
def _grown(array, size):  # pragma: no cover - compiled
    """``array`` in a new array of at least ``size`` items (twice as many as needed)."""
    bigger = np.empty(2 * size, array.dtype)
    bigger[:array.shape[0]] = array
    return bigger


@njit(cache=True, nogil=True)
def _scan_records(data, kinds, codes):  # pragma: no cover - compiled
    """One pass over a file's bytes ``data`` (uint8) by miRanda's rules, in place: every record's
    letters are moved to the front of ``data``, one record after the other, and their class codes
    written to ``codes`` beside them; ids and descriptions are copied out as they are passed.

    Returns (how it ended, records read, the letters' bounds (record k's are ``bounds[k]`` up to
    ``bounds[k + 1]``; int64), where each record starts in ``data`` (its '>'; the last item: the
    end of the data), headers, the illegal byte): headers holds each record's id and its
    description, each followed by LF (which none holds), and a record that ended the pass badly
    has its id there after the others'. Positions are unsigned, so that indexing needs no
    wraparound check; a letter moves to where a byte was read already (the header's '>' and LF
    keep it behind)."""
    one = np.uint64(1)
    n = np.uint64(data.shape[0])
    bounds = np.zeros(64, np.int64)
    starts = np.zeros(64, np.int64)
    headers = np.empty(min(data.shape[0] + 2, 1 << 16), np.uint8)
    used = 0  # bytes of headers
    count = 0
    pos = np.uint64(0)
    out = np.uint64(0)
    while True:
        while pos < n and kinds[data[pos]] == _SPACE:
            pos += one
        if pos >= n:
            bounds[count] = out
            starts[count] = n
            return _DONE, count, bounds[:count + 1], starts[:count + 1], headers[:used], 0
        if data[pos] != 62:  # '>'
            return _NOT_RECORD, count, bounds, starts, headers[:used], 0
        if count + 1 >= bounds.shape[0]:
            bounds = _grown(bounds, count + 2)
            starts = _grown(starts, count + 2)
        bounds[count] = out
        starts[count] = pos
        pos += one
        start = pos
        while pos < n and kinds[data[pos]] != _SPACE:
            pos += one
        id_stop = pos
        while pos < n and (data[pos] == 32 or data[pos] == 9 or data[pos] == 13):  # space, tab, CR
            pos += one
        text_start = pos
        while pos < n and data[pos] != 10:  # LF
            pos += one
        size = used + int(pos - start) + 2
        if size > headers.shape[0]:
            headers = _grown(headers, size)
        for at in range(start, id_stop):
            headers[used] = data[at]
            used += 1
        headers[used] = 10
        used += 1
        if pos >= n:
            return _EOF_IN_HEADER, count, bounds, starts, headers[:used], 0
        if id_stop == start:
            return _EMPTY_ID, count, bounds, starts, headers[:used], 0
        for at in range(text_start, pos):
            headers[used] = data[at]
            used += 1
        headers[used] = 10
        used += 1
        pos += one
        first = out
        while pos < n:
            byte = data[pos]
            kind = kinds[byte]
            data[out] = byte  # written always, kept only for a letter: the common case runs straight
            codes[out] = kind
            if kind >= 0:
                out += one
            elif kind == _START:
                break
            elif kind == _OTHER:
                return _ILLEGAL, count, bounds, starts, headers[:used], byte
            pos += one
        if out == first:
            return _NO_SEQUENCE, count, bounds, starts, headers[:used], 0
        count += 1


def parse_error(ended: int, name: str, count: int, texts: list[str], byte: int) -> InputError:
    """The one-line error of a parse that ``ended`` badly at record ``count + 1`` (its id in ``texts``)."""
    if ended == _NOT_RECORD:
        return InputError(f"{name}: illegal format (record {count + 1} does not start with '>')")
    if ended == _EMPTY_ID:
        return InputError(f"{name}: record {count + 1} has an empty id")
    ident = shown(texts[2 * count])
    if ended == _EOF_IN_HEADER:
        return InputError(f"{name}: unexpected end of file in the header of record '{ident}'")
    if ended == _ILLEGAL:
        return InputError(f"{name}: illegal character '{chr(byte)}' in sequence of record '{ident}'")
    return InputError(f"{name}: record '{ident}' has no sequence")


#: Bytes per thread from which a file's records are found by several threads at once, each in a
#: piece of the file that begins a record (124 MB: 0.1 s on one core of the development machine).
PIECE_BYTES = 4 << 20


@njit(cache=True, nogil=True)
def _record_start_from(data, at):  # pragma: no cover - compiled
    """The first '>' at or after ``at`` (> 0) that begins a line, or the end of ``data``: a record
    starts there whatever came before (a header ends at its line's end)."""
    n = data.shape[0]
    for pos in range(at, n):
        if data[pos] == 62 and data[pos - 1] == 10:  # '>' after LF
            return pos
    return n


def _cuts(data: np.ndarray, pieces: int) -> list[int]:
    """Where ``data`` is cut into at most ``pieces`` runs of bytes, each after the first beginning a record."""
    n = data.shape[0]
    cuts = [0]
    for k in range(1, pieces):
        at = _record_start_from(data, max(k * n // pieces, cuts[-1] + 1))
        if at >= n:
            break
        if at > cuts[-1]:
            cuts.append(at)
    return [*cuts, n]


def scan_file(data: np.ndarray, codes: np.ndarray) -> tuple:
    """:func:`_scan_records` of the whole of ``data`` (a file's bytes), by several threads where it is
    large: each scans a piece that begins a record (so every piece is parsed as the whole would be),
    in place; then the pieces' letters and codes move down to follow each other and their bounds,
    record starts and headers are joined. A piece that ends badly ends the whole there, as one pass
    would (the pieces before it were read without fault)."""
    pieces = min(usable_cores(), data.shape[0] // PIECE_BYTES)
    cuts = _cuts(data, pieces) if pieces > 1 else [0, data.shape[0]]
    if len(cuts) == 2:
        return _scan_records(data, _KINDS, codes)
    with ThreadPoolExecutor(len(cuts) - 1, thread_name_prefix="gamut-fasta") as pool:
        scanned = list(pool.map(lambda a, b: _scan_records(data[a:b], _KINDS, codes[a:b]), cuts[:-1], cuts[1:]))
    count = out = 0
    bounds, starts, headers = [], [], []
    for start, (ended, got, piece_bounds, piece_starts, piece_headers, byte) in zip(cuts, scanned):
        headers.append(piece_headers)
        if ended != _DONE:
            return ended, count + got, None, None, np.concatenate(headers), byte
        letters = int(piece_bounds[-1])
        if out != start:  # (NumPy copies overlapping ranges as if through a buffer)
            data[out:out + letters] = data[start:start + letters]
            codes[out:out + letters] = codes[start:start + letters]
        bounds.append(piece_bounds[:-1] + out)
        starts.append(piece_starts[:-1] + start)
        count, out = count + got, out + letters
    bounds.append(np.array([out], np.int64))
    starts.append(np.array([data.shape[0]], np.int64))
    return _DONE, count, np.concatenate(bounds), np.concatenate(starts), np.concatenate(headers), 0
