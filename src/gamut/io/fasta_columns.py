"""A FASTA file read as columns: the names, the header lines and the sequences end to end
(:class:`~gamut.io.packed.PackedSequences`), for inputs of many short records (``gamut fold
--model turner`` on a million windows).

dnaio's FASTA reader is a Python loop (about 0.5 s a million records here, before any of our
own work per record), so plain files are read by one compiled pass over their bytes instead
(:func:`_scan`), which copies the letters, the names and the headers out end to end. It reads exactly what :func:`gamut.io.fasta.read_fasta` reads, because
it only takes the files where the two cannot differ: ASCII text, ``\\n`` or ``\\r\\n`` line ends,
records that start with ``>``, no ``#`` lines, no line that starts or ends with whitespace, a
name and letters in every record, names unique. Any other file (and every error) goes through
:func:`gamut.io.fasta.read_fasta_stream` on the same bytes: its records and its messages.
"""
from __future__ import annotations

import io
import os
from typing import NamedTuple

import numpy as np
from numba import njit

from gamut.io.fasta import read_fasta_stream
from gamut.io.inputs import read_input_array
from gamut.io.packed import PackedSequences


class FastaColumns(NamedTuple):
    """``names`` (the ids), ``headers`` (``id description`` as RNAfold prints it, the id alone
    without a description) and ``sequences`` (:class:`PackedSequences`, or a list of strings for
    a file the compiled pass left to dnaio)."""

    names: list[str]
    headers: list[str]
    sequences: PackedSequences | list[str]


@njit(cache=True, nogil=True, inline="always")
def _space(c):  # pragma: no cover - compiled
    """What Python's ``str.strip`` removes, among ASCII bytes."""
    return c == 32 or 9 <= c <= 13 or 28 <= c <= 31


@njit(cache=True, nogil=True)
def _scan(data, ends, letters, names, heads):  # pragma: no cover - compiled
    """One pass over a FASTA file's bytes ``data`` (left as they are): the letters end to end in
    ``letters``, record ``k``'s end at ``ends[k]``; the names and the header texts (``id description``) copied to ``names`` and
    ``heads``, each followed by ``\\n``. Returns ``(records, letters, names used, heads used)``, or
    records -1 for a file left to dnaio (see the module's docstring)."""
    size = data.shape[0]
    records = 0
    w = 0
    nw = 0
    hw = 0
    pos = 0
    opened = 0  # where the last record's letters start
    while pos < size:
        end = pos
        odd = 0  # bytes beyond ASCII, and carriage returns
        while end < size:
            c = data[end]
            if c == 10:
                break
            if c >= 128 or c == 13:
                odd += 1
            end += 1
        nxt = end + 1
        if end > pos and data[end - 1] == 13:
            end -= 1
            odd -= 1
        if end > pos:
            if odd:
                return -1, 0, 0, 0
            if _space(data[pos]) or _space(data[end - 1]) or data[pos] == 35:  # 35: '#'
                return -1, 0, 0, 0
            if data[pos] == 62:  # '>'
                if records > 0 and opened == w:  # the last record had no letters
                    return -1, 0, 0, 0
                stop = pos + 1
                while stop < end and data[stop] != 32:
                    if _space(data[stop]):
                        return -1, 0, 0, 0
                    stop += 1
                if stop == pos + 1:
                    return -1, 0, 0, 0
                for x in range(pos + 1, stop):
                    names[nw] = data[x]
                    heads[hw] = data[x]
                    nw += 1
                    hw += 1
                names[nw] = 10
                nw += 1
                start = stop
                while start < end and _space(data[start]):
                    start += 1
                if start < end:
                    heads[hw] = 32
                    hw += 1
                    for x in range(start, end):
                        heads[hw] = data[x]
                        hw += 1
                heads[hw] = 10
                hw += 1
                ends[records] = w
                opened = w
                records += 1
            elif records == 0:
                return -1, 0, 0, 0
            else:
                for x in range(pos, end):
                    letters[w] = data[x]
                    w += 1
                ends[records - 1] = w
        pos = nxt
    if records == 0 or opened == w:
        return -1, 0, 0, 0
    return records, w, nw, hw


def read_fasta_columns(path: str | os.PathLike) -> FastaColumns:
    """The records of the FASTA input ``path`` (a file, compressed or not, ``-`` or a pipe) as
    columns, names unique; every error is :func:`gamut.io.fasta.read_fasta`'s own
    (:class:`~gamut.errors.InputError` naming the file and record)."""
    path = os.fspath(path)
    data = read_input_array(path)
    size = data.shape[0]
    ends = np.empty(size // 2 + 1, np.int64)  # a record takes at least 2 bytes: '>' and a letter
    letters = np.empty(size, np.uint8)
    names = np.empty(size + 1, np.uint8)
    heads = np.empty(size + 1, np.uint8)
    records, used_letters, used_names, used_heads = _scan(data, ends, letters, names, heads)
    if records >= 0:
        name_list = names[:used_names].tobytes().decode("ascii").split("\n")[:-1]
        if len(set(name_list)) == records:  # else a name twice: dnaio's reader says which
            header_list = name_list if used_heads == used_names else \
                heads[:used_heads].tobytes().decode("ascii").split("\n")[:-1]
            offsets = np.zeros(records + 1, np.int64)
            offsets[1:] = ends[:records]
            return FastaColumns(name_list, header_list, PackedSequences(letters[:used_letters].tobytes(), offsets))
    del ends, letters, names, heads
    records = list(read_fasta_stream(io.BytesIO(data), path, unique=True))
    return FastaColumns([r.name for r in records], [f"{r.name} {r.description}" if r.description else r.name
                                                    for r in records], [r.sequence for r in records])
