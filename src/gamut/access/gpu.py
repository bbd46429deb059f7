"""The GPU accessibility engine: RNAplfold's unpaired probabilities with our CUDA kernels
(``gamut/cuda/kernels/plfold.cu``, whose header gives the model and the algorithm), in double
precision, many sequences per launch.

Sequences are laid end to end in batches that fit the device's memory. A sequence too long for one
batch is cut into pieces that overlap by a window and a letter on each side: every window that
holds a stretch of a piece's core, with its neighbouring letters, lies in the piece, so a piece
gives exactly the numbers of the whole sequence there. :class:`GpuFolder` has the interface of
:class:`~gamut.access.cpu.CpuFolder`; the work of one batch is a :class:`BatchRunner`
(:class:`CupyRunner` on a GPU, a host build of the same kernels in the tests).
"""
from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from gamut.access.boltzmann import MAXLOOP, PlfoldTables, encode, plfold_tables
from gamut.access.model import AccessParams, energy_to_open
from gamut.errors import DeviceError

#: The kernels of plfold.cu, in launch order (the last two: the global partition function's results,
#: gamut.folding.turner.gpu_pf).
KERNELS = ("plf_inside_list", "plf_inside_pairs", "plf_inside_rest", "plf_exterior", "plf_outside_list",
           "plf_outside_pairs", "plf_suffix", "plf_unpaired", "plf_stretches", "plf_partition", "plf_pair_probs")
#: The phases of a batch, as :attr:`CupyRunner.phase_s` times them.
PHASES = ("inside", "exterior", "outside", "unpaired")
#: Shared-memory doubles per thread of ``plf_outside_pairs`` (its interior-loop sums by gap).
OUTSIDE_SCRATCH_DOUBLES = MAXLOOP + 1
#: Threads per block of every plfold kernel (128 and 64 timed alike on the H100, 256 4% slower).
BLOCK = 128
#: Most threads per block: ``plf_outside_pairs``'s scratch within the 48 KB of shared memory a launch
#: gets without asking.
MAX_BLOCK = (48 * 1024 // (8 * OUTSIDE_SCRATCH_DOUBLES)) // 32 * 32
#: Most positions in one batch (the work area holds about 6.6 KB per position at W=80, L=40:
#: the 8 M positions of an 80 GB card).
MAX_BATCH_POSITIONS = 8_000_000
#: Share of the free device memory one batch's work area may take.
MEMORY_SHARE = 0.6
#: Letters of the records ``gamut access`` folds at a time (their tables are held until written).
RECORD_GROUP_LETTERS = 2_000_000


def work_doubles(positions: int, window: int, span: int) -> int:
    """Doubles of a batch's work area (``plf_work_doubles`` in plfold.cu: 15 arrays by span, IL and
    IR by gap, F and Bz by window offset)."""
    return positions * (15 * span + 2 * (MAXLOOP + 1) + 2 * (window + 1))


#: Per-letter weight factors a batch is folded with, in turn, while a window's partition function
#: leaves the range the kernels accept (plfold.cu's PLF_TINY..PLF_HUGE): none, then the middle of
#: what a letter can weigh (1 unpaired, up to about e^2.8 in a run of GC stacks), then either side.
SCALES = (1.0, math.exp(-1.38), math.exp(-0.69), math.exp(-2.07))


class WeightRangeError(DeviceError):
    """A batch's weights left the range of doubles with the scale it was folded with."""


class BatchMemoryError(DeviceError):
    """A batch's work area did not fit the device's free memory (other work took it meanwhile)."""


def check_batch(bad: bool, window: int) -> None:
    """Raise :class:`WeightRangeError` for a batch whose kernels flagged a window's partition function
    out of range (or a value that is not a probability)."""
    if bad:
        raise WeightRangeError(f"the GPU accessibility engine's Boltzmann weights left the range of doubles with a "
                               f"window of {window} letters; use a smaller window (-W) or --device cpu")


def scale_table(scale: float, window: int, gen: np.ndarray) -> np.ndarray:
    """A batch's ``SC`` argument (plfold.cu): ``scale^k`` for k = 0 .. window + 2, then the generic
    interior loop factors times ``scale^(n1 + n2 + 2)``."""
    n1, n2 = np.meshgrid(np.arange(gen.shape[0]), np.arange(gen.shape[1]), indexing="ij")
    return np.concatenate([scale ** np.arange(window + 3, dtype=np.float64), (gen * scale ** (n1 + n2 + 2)).ravel()])


@dataclass(frozen=True)
class Piece:
    """Letters ``lo..hi-1`` of sequence ``seq`` folded as one sequence, whose results are kept for
    the stretches ending in ``core_lo..core_hi-1``."""

    seq: int
    lo: int
    hi: int
    core_lo: int
    core_hi: int


def pieces(lengths: Sequence[int], window: int, most: int) -> list[Piece]:
    """Every sequence as one piece, or, when longer than ``most`` letters, as overlapping pieces of
    at most ``most`` letters whose cores cover it (margins of ``window + 1`` letters)."""
    margin = window + 1
    core = most - 2 * margin
    if core < 1:
        raise ValueError(f"pieces of {most} letters cannot hold a window of {window} with its margins")
    out = []
    for seq, n in enumerate(lengths):
        if n <= most:
            out.append(Piece(seq, 0, n, 0, n))
            continue
        for core_lo in range(0, n, core):
            core_hi = min(n, core_lo + core)
            out.append(Piece(seq, max(0, core_lo - margin), min(n, core_hi + margin), core_lo, core_hi))
    return out


@dataclass(frozen=True)
class PackedBatch:
    """Pieces end to end: letter codes ``S`` and each position's piece bounds ``SB``/``SE``;
    ``starts[x]``: where piece x begins."""

    pieces: list[Piece]
    S: np.ndarray
    SB: np.ndarray
    SE: np.ndarray
    starts: np.ndarray

    @property
    def positions(self) -> int:
        return int(self.S.shape[0])

    @classmethod
    def pack(cls, group: list[Piece], codes: Sequence[np.ndarray]) -> PackedBatch:
        """``group`` of pieces of the sequences whose letter codes are ``codes``."""
        sizes = np.array([p.hi - p.lo for p in group], np.int64)
        starts = np.zeros(len(group) + 1, np.int64)
        np.cumsum(sizes, out=starts[1:])
        S = np.concatenate([codes[p.seq][p.lo:p.hi] for p in group]) if group else np.zeros(0, np.int8)
        bounds = starts.astype(np.int32)  # repeated as int32: no 64-bit copy of every position
        SB = np.repeat(bounds[:-1], sizes)
        SE = np.repeat(bounds[1:], sizes)
        return cls(group, np.ascontiguousarray(S, np.int8), SB, SE, starts[:-1])


def batches(plan: list[Piece], most: int) -> Iterator[list[Piece]]:
    """Consecutive groups of pieces of at most ``most`` letters in all (a longer piece alone)."""
    group: list[Piece] = []
    size = 0
    for piece in plan:
        n = piece.hi - piece.lo
        if group and size + n > most:
            yield group
            group, size = [], 0
        group.append(piece)
        size += n
    if group:
        yield group


class BatchRunner(Protocol):
    """Folds one packed batch with window ``window`` and span ``span`` (both at most the longest
    piece) and per-letter weight factor ``scale``: ``table(batch, ...)`` returns the (positions,
    ``width``) unpaired probabilities (NaN where a stretch does not fit); ``stretches`` only those
    of ``ends`` and ``lengths``. Both raise :class:`WeightRangeError` where the weights left the
    range of doubles, and :class:`BatchMemoryError` where the batch did not fit the device."""

    def free_bytes(self) -> int: ...

    def release(self) -> None: ...

    def table(self, batch: PackedBatch, window: int, span: int, width: int, scale: float) -> np.ndarray: ...

    def stretches(self, batch: PackedBatch, window: int, span: int, ends: np.ndarray,
                  lengths: np.ndarray, scale: float) -> np.ndarray: ...


class CupyRunner:
    """:class:`BatchRunner` on CUDA device ``device_id`` (CuPy; the kernels compiled once per process),
    with the accessibility model's tables, or ``tables`` and the kernels compiled with ``defines``
    (the global partition function's, :mod:`gamut.folding.turner.gpu_pf`)."""

    def __init__(self, device_id: int = 0, block: int = BLOCK, *, tables: PlfoldTables | None = None,
                 defines: Sequence[str] | None = None) -> None:
        import cupy

        from gamut.cuda.kernels import load_module

        if not 32 <= block <= MAX_BLOCK or block % 32:
            raise ValueError(f"plfold blocks take 32..{MAX_BLOCK} threads in warps (plf_outside_pairs' scratch must fit "
                             f"48 KB of shared memory), not {block}")
        self.cp = cupy
        self.device_id = int(device_id)
        self.block = int(block)
        tables = tables if tables is not None else plfold_tables()
        defines = tuple(defines) if defines is not None else tables.defines
        #: The kernels keep the sums for unpaired stretches (plfold.cu's PLF_UNPAIRED; one lane a cell).
        self.unpaired = "-DPLF_UNPAIRED=0" not in defines
        with cupy.cuda.Device(self.device_id):
            module = load_module("plfold.cu", options=defines, device_id=self.device_id)
            self.kernels = {name: module.get_function(name) for name in KERNELS}
            self.T = cupy.asarray(tables.doubles)
            self.I = cupy.asarray(tables.ints)
        self.gen = tables.gen
        #: Seconds in the kernels (device events), summed over batches, in all and by phase.
        self.kernel_s = 0.0
        self.phase_s: dict[str, float] = {}

    def free_bytes(self) -> int:
        with self.cp.cuda.Device(self.device_id):
            pool = self.cp.get_default_memory_pool()
            return int(self.cp.cuda.runtime.memGetInfo()[0]) + int(pool.free_bytes())

    def release(self) -> None:
        """Give the memory pool's unused blocks back to the device (a folder's batches are large, and
        a scan aligns again after folding)."""
        with self.cp.cuda.Device(self.device_id):
            self.cp.get_default_memory_pool().free_all_blocks()

    def fold_batch(self, batch: PackedBatch, window: int, span: int, scale: float, finish: Callable,
                   lanes: int = 1) -> np.ndarray:
        """Fold ``batch`` (inside, exterior, outside, suffix sums) with ``lanes`` threads a cell's
        sums (plfold.cu's Lanes: 1, 2, 4, .. 32; 1 where the kernels keep the unpaired sums), then
        ``finish(args)`` (the kernels' arguments) launches what reads the results into a CuPy
        array, returned on the host."""
        if lanes not in (1, 2, 4, 8, 16, 32) or (self.unpaired and lanes != 1):
            raise ValueError(f"plfold kernels take 1, 2, 4, .. 32 lanes a cell (1 with PLF_UNPAIRED), not {lanes}")
        try:
            return self._fold_on_device(batch, window, span, scale, finish, lanes)
        except self.cp.cuda.memory.OutOfMemoryError as exc:
            self.release()
            raise BatchMemoryError(f"a batch of {batch.positions:,} positions did not fit the GPU's memory "
                                   f"({exc})") from None

    def _fold_on_device(self, batch: PackedBatch, window: int, span: int, scale: float, finish: Callable,
                        lanes: int) -> np.ndarray:
        cp = self.cp
        n = batch.positions
        with cp.cuda.Device(self.device_id):
            bad = cp.zeros(1, cp.int32)
            args = [self.T, self.I, cp.asarray(batch.S), cp.asarray(batch.SB), cp.asarray(batch.SE), np.int64(n),
                    np.int32(window), np.int32(span), cp.zeros(work_doubles(n, window, span), cp.float64), bad,
                    cp.asarray(scale_table(scale, window, self.gen)), np.int32(lanes)]
            block = self.block
            grid = ((n + block - 1) // block,)
            wide = ((n * lanes + block - 1) // block,)  # lanes a cell, a pair or a window
            # Per span: the positions of its pairs with loop sums (plfold.cu's append_live), and their count.
            pairs, counts = cp.empty(n, cp.int32), cp.zeros(2 * span, cp.int32)
            k = self.kernels
            marks = [cp.cuda.Event() for _ in range(5)]
            marks[0].record()
            for d in range(span):
                listed = (*args, np.int32(d), pairs, counts[d:d + 1])
                k["plf_inside_list"](grid, (block,), listed)
                k["plf_inside_pairs"](wide, (block,), listed)
                k["plf_inside_rest"](wide, (block,), (*args, np.int32(d)))
            marks[1].record()
            k["plf_exterior"](wide, (block,), tuple(args))
            marks[2].record()
            scratch = OUTSIDE_SCRATCH_DOUBLES * block * 8 if self.unpaired else 0
            for d in range(span - 1, -1, -1):
                listed = (*args, np.int32(d), pairs, counts[span + d:span + d + 1])
                k["plf_outside_list"](wide, (block,), listed)
                k["plf_outside_pairs"](wide, (block,), listed, shared_mem=scratch)
            marks[3].record()
            if self.unpaired:
                self.kernels["plf_suffix"](grid, (block,), tuple(args))
            out = finish(args)
            marks[4].record()
            marks[4].synchronize()
            for name, a, b in zip(PHASES, marks, marks[1:]):
                self.phase_s[name] = self.phase_s.get(name, 0.0) + cp.cuda.get_elapsed_time(a, b) / 1000.0
            self.kernel_s += cp.cuda.get_elapsed_time(marks[0], marks[4]) / 1000.0
            del args
            check_batch(bool(int(bad.get()[0])), window)
            return cp.asnumpy(out)

    def table(self, batch: PackedBatch, window: int, span: int, width: int, scale: float = 1.0) -> np.ndarray:
        cp = self.cp

        def finish(args):
            out = cp.full(batch.positions * width, np.nan)
            count = batch.positions * width
            self.kernels["plf_unpaired"](((count + self.block - 1) // self.block,), (self.block,),
                                         (*args, np.int32(width), out))
            return out

        return self.fold_batch(batch, window, span, scale, finish).reshape(batch.positions, width)

    def stretches(self, batch: PackedBatch, window: int, span: int, ends: np.ndarray, lengths: np.ndarray,
                  scale: float = 1.0) -> np.ndarray:
        cp = self.cp

        def finish(args):
            count = int(ends.shape[0])
            out = cp.full(max(count, 1), np.nan)
            if count:
                self.kernels["plf_stretches"](((count + self.block - 1) // self.block,), (self.block,),
                                              (*args, cp.asarray(ends, np.int64), cp.asarray(lengths, np.int32),
                                               np.int64(count), out))
            return out[:count]

        return self.fold_batch(batch, window, span, scale, finish)


class GpuFolder:
    """Folds sequences on a GPU (:class:`CupyRunner` on ``device_id``, or any ``runner``), with the
    interface of :class:`~gamut.access.cpu.CpuFolder`; ``batch_positions`` caps the letters per batch."""

    name = "cuda"

    def __init__(self, params: AccessParams, device_id: int = 0, *, runner: BatchRunner | None = None,
                 batch_positions: int | None = None) -> None:
        self.params = params
        self.runner = runner if runner is not None else CupyRunner(device_id)
        self._batch_positions = batch_positions

    def __enter__(self) -> GpuFolder:
        return self

    def __exit__(self, *exc) -> None:
        self.runner.release()

    def record_groups(self, records: Sequence[tuple[str, str]]) -> Iterator[list[tuple[str, str]]]:
        """Consecutive groups of ``(name, sequence)`` records to fold at a time (output in order, memory
        bounded): about :data:`RECORD_GROUP_LETTERS` letters each."""
        group: list[tuple[str, str]] = []
        letters = 0
        for record in records:
            group.append(record)
            letters += len(record[1])
            if letters >= RECORD_GROUP_LETTERS:
                yield group
                group, letters = [], 0
        if group:
            yield group

    def _batch_positions_for(self) -> int:
        if self._batch_positions is not None:
            return self._batch_positions
        # the work area, the output table and its copy, the letters and piece bounds
        per = 8 * (work_doubles(1, self.params.window, min(self.params.span, self.params.window))
                   + 2 * self.params.max_unpaired) + 9
        fit = int(self.runner.free_bytes() * MEMORY_SHARE) // per
        return max(4 * (self.params.window + 1), min(MAX_BATCH_POSITIONS, fit))

    def _plan(self, sequences: Sequence[str]) -> tuple[list[np.ndarray], list[list[Piece]]]:
        """The sequences' letter codes and their pieces in groups of at most a batch's letters."""
        codes = [encode(s) for s in sequences]
        most = self._batch_positions_for()
        plan = pieces([c.shape[0] for c in codes], self.params.window, most)
        return codes, list(batches([p for p in plan if p.hi > p.lo], most))

    def _shape(self, batch: PackedBatch) -> tuple[int, int]:
        """The batch's window and span arrays (at most its longest piece: see plfold.cu)."""
        longest = max(p.hi - p.lo for p in batch.pieces)
        window = min(self.params.window, longest)
        return window, min(self.params.span, window)

    @staticmethod
    def _scaled(run: Callable, *args) -> np.ndarray:
        """``run(*args, scale)`` with the first of :data:`SCALES` that keeps the weights in range."""
        for scale in SCALES[:-1]:
            try:
                return run(*args, scale)
            except WeightRangeError:
                continue
        return run(*args, SCALES[-1])

    @staticmethod
    def _solved(codes: list[np.ndarray], groups: list[list[Piece]],
                solve: Callable[[PackedBatch], object]) -> Iterator[tuple[PackedBatch, object]]:
        """``(batch, solve(batch))`` for every group in order; a group whose weights no scale keeps
        in range (sequences of very different strength in large windows), or that did not fit the
        device's memory, is folded in halves, down to single pieces (then the error stands)."""
        todo = list(reversed(groups))
        while todo:
            group = todo.pop()
            batch = PackedBatch.pack(group, codes)
            try:
                result = solve(batch)
            except (WeightRangeError, BatchMemoryError):
                if len(group) == 1:
                    raise
                todo += [group[len(group) // 2:], group[:len(group) // 2]]
                continue
            yield batch, result

    def fold(self, sequences: Sequence[str]) -> list[np.ndarray]:
        """Unpaired probabilities of every sequence, (n, max_unpaired) each, in order (NaN where a
        stretch does not fit: before the sequence's start or longer than its window). A sequence
        folded whole is a view into its batch's table (no copy)."""
        width = self.params.max_unpaired
        codes, groups = self._plan(sequences)
        out: list[np.ndarray | None] = [None] * len(codes)

        def solve(batch: PackedBatch) -> np.ndarray:
            window, span = self._shape(batch)
            return self._scaled(self.runner.table, batch, window, span, min(width, window))

        for batch, table in self._solved(codes, groups, solve):
            if table.shape[1] < width:  # every sequence of the batch shorter than max_unpaired
                table = np.concatenate([table, np.full((table.shape[0], width - table.shape[1]), np.nan)], axis=1)
            for piece, start in zip(batch.pieces, batch.starts.tolist()):
                rows = table[start + piece.core_lo - piece.lo:start + piece.core_hi - piece.lo]
                if piece.core_lo == 0 and piece.core_hi == codes[piece.seq].shape[0]:
                    out[piece.seq] = rows
                    continue
                if out[piece.seq] is None:
                    out[piece.seq] = np.empty((codes[piece.seq].shape[0], width))
                out[piece.seq][piece.core_lo:piece.core_hi] = rows
        return [np.full((0, width), np.nan) if o is None else o for o in out]

    def stretches(self, sequences: Sequence[str], ends: Sequence[np.ndarray], lengths: Sequence[np.ndarray],
                  progress: Callable[[int], None] | None = None) -> list[np.ndarray]:
        """Opening energies (kcal/mol) of the stretches of ``lengths`` letters ending at 0-based
        ``ends`` of every sequence, in order (NaN for a stretch longer than the window)."""
        codes, groups = self._plan(sequences)
        ends = [np.asarray(e, np.int64) for e in ends]
        lengths = [np.asarray(n, np.int64) for n in lengths]
        out = [np.full(e.shape[0], np.nan) for e in ends]

        def solve(batch: PackedBatch) -> tuple[list[tuple[int, np.ndarray]], np.ndarray]:
            picks = []  # per piece: its sequence and the indices of that sequence's stretches it holds
            for piece in batch.pieces:
                e = ends[piece.seq]
                picks.append((piece.seq, np.flatnonzero((e >= piece.core_lo) & (e < piece.core_hi))))
            shifts = batch.starts - np.array([p.lo for p in batch.pieces], np.int64)
            pos = np.concatenate([ends[q][m] + shift for (q, m), shift in zip(picks, shifts.tolist())])
            size = np.concatenate([lengths[q][m] for q, m in picks])
            window, span = self._shape(batch)
            return picks, self._scaled(self.runner.stretches, batch, window, span, pos,
                                       np.minimum(size, 2**31 - 1).astype(np.int32))

        for batch, (picks, probs) in self._solved(codes, groups, solve):
            energies = energy_to_open(probs)
            at = 0
            for q, m in picks:
                out[q][m] = energies[at:at + m.shape[0]]
                at += m.shape[0]
            if progress is not None:
                progress(int(sum(p.core_hi - p.core_lo for p in batch.pieces)))
        return out
