"""The GPU partition function of the Turner 2004 model: RNAfold -p's ensemble free energy and
base-pair probabilities (ViennaRNA's ``fc.pf()`` and ``fc.bpp()``) for many sequences at once, in
double precision (docs/fold_turner_pf.md).

The kernels are those of accessibility (``cuda/kernels/plfold.cu``, whose header gives the
algorithm) with one window per sequence: the window as long as the batch's longest sequence, the
span its maximum base-pair span, the options compiled in (:func:`kernel_defines`). Sequences are
folded longest first, in batches that fit the device's memory.

Scaling. A long sequence's partition function leaves the range of doubles (about e^1500 for 3,000
random letters), so every letter's weight is multiplied by a factor ``s`` (plfold.cu's SC); the
ensemble energy is ``-RT (ln Z_s - n ln s)`` and the probabilities do not change. ``s`` is chosen
from a rough ``ln Z`` of each sequence: the sum over its pieces of :data:`PILOT_LETTERS` letters,
folded first at a scale that keeps any such piece in range, times :data:`PILOT_GAIN` (the pairs
between pieces). A batch whose weights still leave the range is folded in halves, and a lone
sequence at the other :data:`RETRY_GAINS`; then the error stands.
"""
from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Protocol

import numpy as np

from gamut.access.boltzmann import encode, turner_boltzmann_tables
from gamut.access.gpu import BatchMemoryError, PackedBatch, Piece, WeightRangeError, batches, work_doubles
from gamut.errors import InputError
from gamut.folding.turner.options import TurnerOptions
from gamut.folding.turner.results import PartitionResult

#: What is not a letter the model reads (A, C, G, U or T, N, in either case).
_NOT_READ = re.compile(r"[^ACGUTNacgutn]")
#: Most positions in one batch (the kernels list positions as int32).
MAX_BATCH_POSITIONS = 8_000_000
#: Share of the device's free memory a batch may take.
MEMORY_SHARE = 0.85
#: Threads that keep an H100/H200 busy (132 SMs x 2,048), and the fewest terms of a cell's longest
#: sums worth a lane of their own.
BUSY_THREADS = 132 * 2048
TERMS_PER_LANE = 8
#: Device bytes per position beside the doubles: letter, piece bounds, probability row, listed pair.
POSITION_BYTES = 1 + 4 + 4 + 8 + 4
#: Pieces the rough partition functions are folded in, and ln of their per-letter scale: the middle
#: of what a letter weighs (ln Z per letter lies in 0 .. about 2.8), so that ln Z_s of any piece lies
#: within +-280 (plfold.cu accepts +-644).
PILOT_LETTERS = 200
PILOT_LOG_SCALE = -1.4
#: ln Z of a whole sequence over the sum of its pieces' (the pairs between pieces add 11-16% on
#: random RNA of 1,000-1,500 letters, whatever its composition).
PILOT_GAIN = 1.13
#: Factors on a lone sequence's estimated ln Z, tried in turn while its weights leave the range.
RETRY_GAINS = (1.0, 1.0 / PILOT_GAIN, 1.12)


def kernel_defines(options: TurnerOptions) -> tuple[str, ...]:
    """Compile options of plfold.cu for ``options``: the tables' layout, dangles and noLP, and no sums
    for unpaired stretches (which lets a cell's sums be split among lanes)."""
    return (*turner_boltzmann_tables(options).defines, f"-DPLF_DANGLES={options.dangles}", f"-DPLF_NOLP={int(options.no_lp)}",
            "-DPLF_UNPAIRED=0")


def lanes_for(positions: int, span: int) -> int:
    """Threads a cell's sums are split among (plfold.cu's Lanes): enough cells a launch keep the GPU
    busy alone (one lane) for short spans or many positions; else more lanes, up to a warp, while
    each still gets :data:`TERMS_PER_LANE` terms of the longest sums."""
    lanes = 1
    while lanes < 32 and positions * lanes < BUSY_THREADS and span >= 2 * lanes * TERMS_PER_LANE:
        lanes *= 2
    return lanes


def read_sequences(sequences: Sequence[str]) -> list[np.ndarray]:
    """Letter codes of every sequence; :class:`InputError` naming the first that has a letter the
    model does not read."""
    codes = []
    for index, sequence in enumerate(sequences):
        if not isinstance(sequence, str):
            raise InputError(f"sequence {index} is a {type(sequence).__name__}, not a string of RNA letters")
        bad = _NOT_READ.search(sequence)
        if bad:
            raise InputError(f"sequence {index}: {bad.group()!r} at position {bad.start() + 1} is not an RNA letter "
                             "(A, C, G, U or T, N)")
        codes.append(encode(sequence))
    return codes


def span_of(options: TurnerOptions, window: int) -> int:
    """The kernels' span (pairs (i, j) with j - i < span) for a batch whose longest sequence is ``window``."""
    return window if options.max_bp_span < 0 else min(options.max_bp_span, window)


def batch_bytes(positions: int, window: int, span: int, pieces: int, matrix_doubles: int) -> int:
    """Device bytes of a batch: the work area, its scaling table, the results, the per-position arrays."""
    doubles = work_doubles(positions, window, span) + window + 3 + 31 * 31 + pieces + matrix_doubles
    return 8 * doubles + POSITION_BYTES * positions + 8 * pieces + 8 * span


def pair_rows(batch: PackedBatch) -> tuple[np.ndarray, int]:
    """Where each position's (i, i) lies in a batch's results (its pieces' partition functions, then
    their (n x n) probability matrices, row-major, end to end), and the results' length."""
    count = len(batch.pieces)
    sizes = np.array([p.hi - p.lo for p in batch.pieces], np.int64)
    squares = sizes * sizes
    offsets = count + np.cumsum(squares) - squares
    local = np.arange(batch.positions, dtype=np.int64) - np.repeat(batch.starts, sizes)
    rows = np.repeat(offsets, sizes) + local * (np.repeat(sizes, sizes) + 1)
    return rows, count + int(squares.sum())


class PfRunner(Protocol):
    """Folds one packed batch, one window of ``window`` letters per piece, pairs spanning less than
    ``span``, every letter weighed times ``scale``, ``lanes`` threads a cell (:func:`lanes_for`): returns the pieces' (scaled) partition functions,
    then, with ``rows`` (:func:`pair_rows`), their probability matrices. Raises
    :class:`WeightRangeError` where the weights left the range of doubles, :class:`BatchMemoryError`
    where the batch did not fit the device."""

    def free_bytes(self) -> int: ...

    def release(self) -> None: ...

    def partition(self, batch: PackedBatch, window: int, span: int, scale: float,
                  rows: tuple[np.ndarray, int] | None, lanes: int) -> np.ndarray: ...


class CupyPfRunner:
    """:class:`PfRunner` on CUDA device ``device_id``: the accessibility engine's launches
    (:class:`~gamut.access.gpu.CupyRunner`) with the options' tables and kernels, then the results."""

    def __init__(self, options: TurnerOptions, device_id: int = 0) -> None:
        from gamut.access.gpu import CupyRunner

        self.base = CupyRunner(device_id, tables=turner_boltzmann_tables(options), defines=kernel_defines(options))

    def free_bytes(self) -> int:
        return self.base.free_bytes()

    def release(self) -> None:
        self.base.release()

    def partition(self, batch: PackedBatch, window: int, span: int, scale: float,
                  rows: tuple[np.ndarray, int] | None, lanes: int) -> np.ndarray:
        cp, kernels, block = self.base.cp, self.base.kernels, self.base.block
        count = len(batch.pieces)

        def finish(args):
            out = cp.zeros(count if rows is None else rows[1], cp.float64)
            kernels["plf_partition"](((count + block - 1) // block,), (block,),
                                     (*args, cp.asarray(batch.starts, cp.int64), np.int64(count), out))
            if rows is not None:
                cells = span * batch.positions
                kernels["plf_pair_probs"](((cells + block - 1) // block,), (block,),
                                          (*args, cp.asarray(rows[0], cp.int64), out))
            return out

        return self.base.fold_batch(batch, window, span, scale, finish, lanes)


def _budget(runner: PfRunner) -> int:
    return int(runner.free_bytes() * MEMORY_SHARE)


def estimate_log_z(codes: list[np.ndarray], options: TurnerOptions, runner: PfRunner) -> np.ndarray:
    """A rough ln Z of every sequence (see the module's docstring): its pieces' for the longer ones,
    the middle of the possible (1.4 per letter) for the others, which fit any scale."""
    lengths = np.array([c.shape[0] for c in codes], np.int64)
    estimate = -PILOT_LOG_SCALE * lengths.astype(np.float64)
    plan = [Piece(k, lo, min(n, lo + PILOT_LETTERS), lo, min(n, lo + PILOT_LETTERS))
            for k, n in enumerate(lengths.tolist()) if n > PILOT_LETTERS for lo in range(0, n, PILOT_LETTERS)]
    if not plan:
        return estimate
    window = PILOT_LETTERS
    span = span_of(options, window)
    most = min(MAX_BATCH_POSITIONS, _budget(runner) // max(1, batch_bytes(1, window, span, 1, 0)))
    pieces_sum = np.zeros(lengths.shape[0])
    scale = math.exp(PILOT_LOG_SCALE)
    for group in batches(plan, max(most, PILOT_LETTERS)):
        batch = PackedBatch.pack(group, codes)
        try:
            z = runner.partition(batch, window, span, scale, None, lanes_for(batch.positions, span))
        except (WeightRangeError, BatchMemoryError):
            raise InputError(f"the GPU partition function could not fold pieces of {PILOT_LETTERS} letters to choose "
                             "its scale; use --device cpu") from None
        for piece, value in zip(group, z.tolist()):
            pieces_sum[piece.seq] += math.log(value) - (piece.hi - piece.lo) * math.log(scale)
    long = lengths > PILOT_LETTERS
    estimate[long] = PILOT_GAIN * pieces_sum[long]
    return estimate


def plan_batches(lengths: Sequence[int], options: TurnerOptions, budget: int) -> list[list[int]]:
    """Indices of the non-empty sequences, longest first, in groups whose batches fit ``budget``
    bytes; :class:`InputError` for a sequence that alone does not."""
    order = sorted((k for k, n in enumerate(lengths) if n), key=lambda k: -lengths[k])
    groups: list[list[int]] = []
    group: list[int] = []
    positions = matrix = 0
    for k in order:
        n = lengths[k]
        window = lengths[group[0]] if group else n
        span = span_of(options, window)
        if group and (positions + n > MAX_BATCH_POSITIONS
                      or batch_bytes(positions + n, window, span, len(group) + 1, matrix + n * n) > budget):
            groups.append(group)
            group, positions, matrix = [], 0, 0
            window, span = n, span_of(options, n)
        if not group:
            need = batch_bytes(n, n, span, 1, n * n)
            if need > budget:
                raise InputError(f"sequence {k} ({n:,} letters) is too long for the GPU partition function: it needs "
                                 f"{need / 1e9:.1f} GB of GPU memory, {budget / 1e9:.1f} GB are at hand "
                                 "(use --device cpu)")
        group.append(k)
        positions += n
        matrix += n * n
    if group:
        groups.append(group)
    return groups


def pf_batch(sequences: Sequence[str], options: TurnerOptions, *, runner: PfRunner | None = None,
             device_id: int = 0, lanes: int | None = None) -> list[PartitionResult]:
    """The ensemble free energy (kcal/mol) and base-pair probabilities of every sequence, in order,
    on CUDA device ``device_id`` (or any ``runner``); sequences of mixed lengths in one call;
    ``lanes``: threads a cell (None: :func:`lanes_for` each batch).
    :class:`InputError` for a letter the model does not read, a sequence too long for the device's
    memory, or one whose weights no scale keeps in the range of doubles."""
    codes = read_sequences(sequences)
    results: list[PartitionResult | None] = [None] * len(codes)
    for k, c in enumerate(codes):
        if c.shape[0] == 0:
            results[k] = PartitionResult(0.0, np.zeros((0, 0)))
    if all(r is not None for r in results):
        return results  # type: ignore[return-value]
    runner = runner if runner is not None else CupyPfRunner(options, device_id)
    try:
        kt = turner_boltzmann_tables(options).kt
        lengths = [c.shape[0] for c in codes]
        estimate = estimate_log_z(codes, options, runner)
        todo = [(group, 0) for group in reversed(plan_batches(lengths, options, _budget(runner)))]
        while todo:
            group, attempt = todo.pop()
            batch = PackedBatch.pack([Piece(k, 0, lengths[k], 0, lengths[k]) for k in group], codes)
            window = max(lengths[k] for k in group)
            scale = math.exp(-RETRY_GAINS[attempt] * sum(estimate[k] for k in group) / batch.positions)
            rows = pair_rows(batch)
            span = span_of(options, window)
            try:
                out = runner.partition(batch, window, span, scale, rows,
                                       lanes if lanes is not None else lanes_for(batch.positions, span))
            except (WeightRangeError, BatchMemoryError) as exc:
                if len(group) > 1:
                    todo += [(group[len(group) // 2:], attempt), (group[:len(group) // 2], attempt)]
                elif isinstance(exc, WeightRangeError) and attempt + 1 < len(RETRY_GAINS):
                    todo.append((group, attempt + 1))
                else:
                    why = ("its Boltzmann weights left the range of doubles at every scale tried (parts of very "
                           "different strength)" if isinstance(exc, WeightRangeError) else "it did not fit the GPU's memory")
                    raise InputError(f"sequence {group[0]} ({lengths[group[0]]:,} letters): the GPU partition function "
                                     f"failed: {why}; use --device cpu") from None
                continue
            log_scale = math.log(scale)
            for x, (k, row) in enumerate(zip(group, rows[0][batch.starts].tolist())):
                n = lengths[k]
                energy = -kt * (math.log(out[x]) - n * log_scale)
                results[k] = PartitionResult(energy, out[row:row + n * n].reshape(n, n))
    finally:
        runner.release()
    return results  # type: ignore[return-value]
