"""Folding many short sequences at once (e.g. miRNA hairpins): the CPU batch engine and the
checks shared with the GPU batch kernel (:func:`gamut.folding.gpu.fold_batch_gpu`).

Sequences travel end to end: ``(flat, starts, lengths)`` (:func:`layout`, :func:`encode_many`).
Both engines return ``(scores, structures)``: pair counts and the dot-bracket bytes of all
sequences end to end, with the structure :mod:`gamut.folding.traceback` picks.
The CPU engine gives each sequence to one core (CPU2 fill and traceback, Numba ``prange``).
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from gamut.errors import InputError
from gamut.folding.cpu import fill_cpu2
from gamut.folding.gpu import BATCH_MAX_LENGTH  # noqa: F401  (sequences up to this length are batched)
from gamut.folding.sequence import encode
from gamut.folding.traceback import DENSE, _traceback, greedy_pairs


@njit(cache=True, nogil=True, parallel=True)
def _fold_cpu_batch(codes, starts, lengths, min_loop, traceback, scores, partners):
    for s in prange(starts.shape[0]):
        a, n = starts[s], lengths[s]
        if n == 0:
            scores[s] = 0
            continue
        seq = codes[a:a + n]
        M = np.zeros((n, n), np.int16)
        fill_cpu2(seq, min_loop, M)
        scores[s] = M[0, n - 1]
        if traceback:
            partners[a:a + n] = _traceback(DENSE, M, np.zeros((1, 1, 1), np.int16), 1, seq, min_loop)


@njit(cache=True, nogil=True, parallel=True)
def _greedy_batch(codes, starts, lengths, min_loop, out):
    for s in prange(starts.shape[0]):
        out[s] = greedy_pairs(codes[starts[s]:starts[s] + lengths[s]], min_loop)


Layout = tuple[np.ndarray, np.ndarray, np.ndarray]


def starts_of(lengths: np.ndarray) -> np.ndarray:
    starts = np.zeros(lengths.size, dtype=np.int64)
    np.cumsum(lengths[:-1], out=starts[1:])
    return starts


def layout(codes: list[np.ndarray]) -> Layout:
    """``(flat codes, starts, lengths)`` of a list of code arrays laid end to end."""
    lengths = np.array([c.shape[0] for c in codes], dtype=np.int64)
    flat = np.concatenate(codes) if lengths.sum() else np.zeros(0, np.uint8)
    return flat.astype(np.uint8, copy=False), starts_of(lengths), lengths


def encode_many(records: list[tuple[str, str]]) -> Layout:
    """Encode ``(name, sequence)`` records end to end (a bad letter is reported with its record)."""
    lengths = np.array([len(sequence) for _, sequence in records], dtype=np.int64)
    try:
        flat = encode("".join(sequence for _, sequence in records))
    except InputError:
        for name, sequence in records:
            encode(sequence, where=name)
        raise
    return flat, starts_of(lengths), lengths


def fold_batch_cpu(flat: np.ndarray, starts: np.ndarray, lengths: np.ndarray, min_loop: int,
                   traceback: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Fold short sequences on all cores, one sequence per core at a time (int16 CPU2 matrices)."""
    if lengths.size and int(lengths.max()) >= 65_534:
        raise ValueError("the batch engine stores int16 scores: fold long sequences one at a time")
    scores = np.zeros(lengths.size, dtype=np.int64)
    partners = np.full(flat.size, -1, dtype=np.int64)
    _fold_cpu_batch(flat, starts, lengths, np.int64(min_loop), traceback, scores, partners)
    local = np.arange(flat.size) - np.repeat(starts, lengths)
    out = np.full(flat.size, ord("."), dtype=np.uint8)
    out[partners > local] = ord("(")
    out[(partners >= 0) & (partners < local)] = ord(")")
    if traceback:
        failed = lengths > 0
        failed[failed] = partners[starts[failed]] == -2
        scores[failed] = -1
    return scores, out


def check_batch(scores: np.ndarray, structures: np.ndarray | None, flat: np.ndarray, starts: np.ndarray,
                lengths: np.ndarray, min_loop: int) -> int | None:
    """Index of the first inconsistent result, or ``None``: each score must lie between a quick
    valid structure's pair count and ``n / 2`` and equal its structure's pair count."""
    low = np.zeros(lengths.size, dtype=np.int64)
    _greedy_batch(flat, starts, lengths, np.int64(min_loop), low)
    bad = (scores < low) | (scores > lengths // 2)
    if structures is not None:
        opened = np.concatenate([[0], np.cumsum(structures == ord("("))])
        bad |= opened[starts + lengths] - opened[starts] != scores
    where = np.flatnonzero(bad)
    return int(where[0]) if where.size else None
