"""The GPU engine of the Turner model's minimum free energy: our kernels (``cuda/kernels/turner_mfe.cu``,
whose header gives the recurrences and the schedules), integer dcal/mol as ViennaRNA computes them,
with one optimal structure traced back on the device.

:func:`mfe_batch` plans a call (:class:`FoldJob`): sequences shorter than :data:`LONG_FROM` letters
go in length classes, each one launch of ``tmfe_batch`` (a block per sequence, the blocks looping
over the class's sequences with a work area each); longer ones one at a time by diagonals
(``tmfe_diagonal`` per diagonal, then ``tmfe_finish``). A :class:`Runner` carries the job out:
:class:`CupyRunner` on a GPU, a host build of the same kernels in the tests. The batch launches'
measurement variants (:mod:`gamut.folding.turner.batch_tuning`, ``GAMUT_TMFE_*``) change how a
launch runs (:func:`batch_shape`), never what it computes.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from collections.abc import Sequence
from typing import Protocol

import numpy as np

from gamut.errors import InputError
from gamut.folding.turner.batch_tuning import DEFAULT_SHARED_LIMIT, BatchShape, BatchTuning, resident_blocks
from gamut.folding.turner.energy_tables import CODES, hairpin_sizes, turner_tables
from gamut.io.packed import PackedSequences
from gamut.folding.turner.options import TurnerOptions

#: Sequences of at least this many letters fold alone, by diagonals (the batch kernel gives one
#: block to a sequence).
LONG_FROM = 1024
#: Upper ends of the batch's length classes and the threads of a block for each.
CLASSES = ((64, 32), (128, 64), (256, 128), (LONG_FROM - 1, 256))
#: Threads per block of the long path's kernels.
LONG_THREADS = 256
#: Threads a multiprocessor holds at once (Hopper: 2048), for the long path's threads per cell.
RESIDENT_THREADS = 2048
#: Threads of batch blocks per multiprocessor (their registers, about 48 a thread, must fit its 64 K;
#: a batch's blocks are all resident at once, each looping over its share of the sequences).
BATCH_THREADS_PER_SM = 1024
#: Most resident blocks of a multiprocessor (Hopper).
MAX_BLOCKS_PER_SM = 32
#: Share of the free device memory a call's work areas may take.
MEMORY_SHARE = 0.8


class SequenceMemoryError(InputError):
    """A sequence too long for the GPU memory at hand."""


def long_parts(cells: int, threads: int) -> int:
    """Threads per cell of a long sequence's diagonal of ``cells`` cells on a device that holds
    ``threads`` threads at once: a power of two up to 32 (the kernels' ``diagonal_parts``), so that
    the last diagonals, few cells with the most work each, still fill the device."""
    parts = 1
    while parts < 32 and 2 * parts * cells <= threads:
        parts *= 2
    return parts


def work_ints(nmax: int, no_lp: bool) -> int:
    """Ints of one work area for sequences of at most ``nmax`` letters (``tmfe_work_ints``)."""
    tri = nmax * (nmax + 1) // 2
    return (5 if no_lp else 4) * tri + (nmax + 1) + 3 * (nmax + 2)


@dataclass(frozen=True)
class BatchLaunch:
    """One ``tmfe_batch`` launch: the sequences ``ids`` (at most ``nmax`` letters each)."""

    ids: np.ndarray
    nmax: int
    threads: int


@dataclass(frozen=True)
class LongLaunch:
    """One sequence folded by diagonals."""

    seq: int


@dataclass
class FoldJob:
    """A call's letters (codes of every sequence end to end, ``starts``/``lengths`` by sequence), its
    model arrays and its launches; the runner fills ``energy``, ``err`` and ``out`` (the
    structures' bytes, at the letters' places)."""

    options: TurnerOptions
    E: np.ndarray
    HPX: np.ndarray
    S: np.ndarray
    starts: np.ndarray
    lengths: np.ndarray
    launches: list = field(default_factory=list)


class Runner(Protocol):
    """Carries out a :class:`FoldJob` with its batch launches' shapes (None for a long one): returns
    (energy int32, err int32, out uint8). ``tuning``: its batch launches' knobs."""

    tuning: BatchTuning

    def free_bytes(self) -> int: ...

    def multiprocessors(self) -> int: ...

    def shared_limits(self) -> tuple[int, int]:
        """Dynamic shared memory a block may opt in to, and a multiprocessor's shared memory (bytes)."""
        ...

    def resident_blocks(self, kernel: str, threads: int, shared_bytes: int) -> int:
        """Blocks of ``kernel`` one multiprocessor holds at once."""
        ...

    def run(self, job: FoldJob, shapes: list[BatchShape | None]) -> tuple[np.ndarray, np.ndarray, np.ndarray]: ...


#: :data:`CODES` as a ``bytes.translate`` table: a letter's code in one pass at C speed, a byte each
#: (NumPy's fancy indexing would widen every letter to an 8-byte index first).
CODE_TABLE = CODES.tobytes()


def encode_letters(letters: bytes, offsets: np.ndarray, texts: Sequence[str] | None = None) -> np.ndarray:
    """Codes (uint8, :data:`CODES`) of sequences end to end (``letters``, one byte a letter, records at
    ``offsets``); raises :class:`InputError` naming the first sequence with a letter other than
    A C G U T N (any case): its index and the letter (as ``texts``, the sequences as given, hold it)."""
    coded = letters.translate(CODE_TABLE)
    at = coded.find(255)
    if at >= 0:
        seq = int(np.searchsorted(offsets, at, side="right") - 1)
        where = at - int(offsets[seq])
        letter = texts[seq][where] if texts is not None else letters[at:at + 1].decode("latin-1")
        raise InputError(f"sequence {seq}: letter {letter!r} at position {where + 1} is not "
                         f"one of A, C, G, U, T, N")
    return np.frombuffer(coded, np.uint8)


def encode_all(sequences: Sequence[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Letter codes of every sequence end to end, and each one's start and length; raises
    :class:`InputError` naming the first sequence with a letter other than A C G U T N (any case)."""
    if not isinstance(sequences, (PackedSequences, list, tuple)):
        sequences = list(sequences)
    pack = PackedSequences.of(sequences)  # (a letter beyond Latin-1 as '?', which encode_letters refuses)
    codes = encode_letters(pack.letters, pack.offsets, None if pack is sequences else sequences)
    return codes, pack.offsets[:-1], np.diff(pack.offsets).astype(np.int32)


def plan(sequences: Sequence[str], options: TurnerOptions, long_from: int = LONG_FROM) -> FoldJob:
    """The job of folding ``sequences`` (strings, or :class:`PackedSequences`): their codes, the
    model arrays and the launches (sequences of at least ``long_from`` letters by diagonals)."""
    codes, starts, lengths = encode_all(sequences)
    tables = turner_tables(options)
    longest = int(lengths.max(initial=0))
    job = FoldJob(options, tables.values, hairpin_sizes(tables, longest), codes, starts, lengths)
    low = 1
    for high, threads in CLASSES:
        high = min(high, long_from - 1)
        ids = np.flatnonzero((lengths >= low) & (lengths <= high)).astype(np.int64)
        if ids.size:
            job.launches.append(BatchLaunch(ids, int(lengths[ids].max()), threads))
        low = high + 1
    job.launches += [LongLaunch(int(x)) for x in np.flatnonzero(lengths >= long_from)]
    return job


def batch_shape(launch: BatchLaunch, no_lp: bool, free: int, runner: Runner) -> BatchShape:
    """How ``launch`` runs under ``runner.tuning``: by default ``tmfe_batch``, a block per sequence
    at a time, enough blocks to fill the device (:data:`BATCH_THREADS_PER_SM`,
    :data:`MAX_BLOCKS_PER_SM`) and as many work areas as ``free`` bytes hold; a variant's blocks are
    never more than the device holds at once. Raises :class:`SequenceMemoryError` where not one
    work area fits."""
    tuning = runner.tuning
    area = 4 * work_ints(launch.nmax, no_lp)
    warps = tuning.warps if tuning.warps and launch.threads == 32 else 0
    groups = warps or 1
    threads = 32 * warps if warps else launch.threads
    kernel = "tmfe_batch_warps" if warps else "tmfe_batch"
    shared = 0
    if tuning.shared_upto and launch.nmax <= tuning.shared_upto and groups * area <= runner.shared_limits()[0]:
        shared = groups * area
        kernel = "tmfe_batch_warps" if warps else "tmfe_batch_shared"
    per_sm = tuning.blocks_per_sm or min(MAX_BLOCKS_PER_SM, BATCH_THREADS_PER_SM // threads)
    if kernel != "tmfe_batch" or tuning.blocks_per_sm:  # (the default launch's blocks all fit)
        per_sm = max(1, min(per_sm, runner.resident_blocks(kernel, threads, shared)))
    wanted = -(-int(launch.ids.size) // groups)
    blocks = min(wanted, runner.multiprocessors() * per_sm)
    if not shared:
        fit = free // (area * groups)
        if fit < 1:
            raise SequenceMemoryError(f"sequences of {launch.nmax:,} letters need {area * groups / 1e9:.2f} GB of GPU "
                                      f"memory each; {max(free, 0) / 1e9:.2f} GB is free")
        blocks = min(blocks, fit)
    return BatchShape(kernel, int(blocks), threads, groups, shared)


def launch_shapes(job: FoldJob, runner: Runner) -> list[BatchShape | None]:
    """The shape of every batch launch (:func:`batch_shape`; None for a long one); raises
    :class:`SequenceMemoryError` naming a sequence that does not fit the device's memory."""
    free = int(runner.free_bytes() * MEMORY_SHARE) - 2 * int(job.S.nbytes) - 16 * int(job.lengths.size)
    no_lp = job.options.no_lp
    shapes: list[BatchShape | None] = []
    for launch in job.launches:
        if isinstance(launch, BatchLaunch):
            shapes.append(batch_shape(launch, no_lp, free, runner))
        else:
            n = int(job.lengths[launch.seq])
            need = 4 * work_ints(n, no_lp)
            if need > free:
                raise SequenceMemoryError(f"sequence {launch.seq} ({n:,} nt) needs {need / 1e9:.2f} GB of GPU memory "
                                          f"to fold; {max(free, 0) / 1e9:.2f} GB is free")
            shapes.append(None)
    return shapes


def finish(job: FoldJob, energy: np.ndarray, err: np.ndarray, out: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The energies (int32) and the structures end to end (uint8, at the letters' places) of a job
    the runner carried out (a failed traceback is an error)."""
    if err.any():
        seq = int(np.flatnonzero(err)[0])
        raise RuntimeError(f"the GPU MFE traceback found no decomposition for sequence {seq} (a bug in gamut)")
    out = np.asarray(out, np.uint8).reshape(-1)
    if out.shape[0] != job.S.shape[0] or energy.shape[0] != job.lengths.shape[0]:
        raise RuntimeError(f"the GPU MFE runner gave {out.shape[0]:,} structure letters and {energy.shape[0]:,} "
                           f"energies for {job.S.shape[0]:,} letters of {job.lengths.shape[0]:,} sequences (a bug in gamut)")
    return energy.astype(np.int32, copy=False), out


def mfe_batch_flat(sequences: Sequence[str], options: TurnerOptions, *, runner: Runner | None = None,
                   device_id: int = 0, long_from: int = LONG_FROM) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`mfe_batch` with the structures end to end: ``(energies, structures, offsets)``, the
    structures one uint8 array of dot-bracket letters, sequence ``k``'s at
    ``offsets[k]:offsets[k + 1]`` (int64, one more than sequences): no string per sequence.
    ``sequences`` may be :class:`PackedSequences` (letters end to end), taken as they are."""
    job = plan(sequences, options, long_from)
    offsets = np.append(job.starts, job.S.shape[0])
    if not job.launches:
        return np.zeros(job.lengths.shape[0], np.int32), np.full(job.S.shape[0], ord("."), np.uint8), offsets
    if runner is None:
        runner = CupyRunner(device_id)
    shapes = launch_shapes(job, runner)
    energy, structures = finish(job, *runner.run(job, shapes))
    return energy, structures, offsets


def mfe_batch(sequences: Sequence[str], options: TurnerOptions, *, runner: Runner | None = None,
              device_id: int = 0, long_from: int = LONG_FROM) -> tuple[np.ndarray, list[str]]:
    """MFE of every sequence (int32, dcal/mol, ViennaRNA's integers) and one optimal dot-bracket
    structure each, folded on the GPU (``runner``: :class:`CupyRunner` on ``device_id`` unless given).

    Letters: A, C, G, U and T (read as U) in either case, and N (pairs with nothing); any other
    raises :class:`InputError` naming the sequence's index; a sequence whose folding does not fit
    the GPU's free memory raises :class:`SequenceMemoryError`. Sequences of at least ``long_from``
    letters fold one at a time by diagonals, shorter ones in batches. (:func:`mfe_batch_flat`
    gives the structures as one buffer, for many sequences.)"""
    energy, structures, offsets = mfe_batch_flat(sequences, options, runner=runner, device_id=device_id,
                                                 long_from=long_from)
    text = structures.tobytes().decode("ascii")
    bounds = offsets.tolist()
    return energy, [text[a:b] for a, b in zip(bounds[:-1], bounds[1:])]


#: The kernels of the module that CupyRunner calls.
KERNELS = ("tmfe_batch", "tmfe_batch_shared", "tmfe_batch_warps", "tmfe_diagonal", "tmfe_finish")


class CupyRunner:
    """:class:`Runner` on CUDA device ``device_id`` (the kernels compiled once per process; the
    model's arrays kept on the device per options); ``tuning``: the batch launches' knobs
    (:meth:`BatchTuning.from_env` unless given)."""

    def __init__(self, device_id: int = 0, tuning: BatchTuning | None = None) -> None:
        import cupy

        from gamut.cuda.kernels import load_module

        self.cp = cupy
        self.device_id = int(device_id)
        layout = turner_tables(TurnerOptions()).defines  # the same for every option
        with cupy.cuda.Device(self.device_id):
            module = load_module("turner_mfe.cu", options=layout, device_id=self.device_id)
            self.kernels = {name: module.get_function(name) for name in KERNELS}
            attributes = cupy.cuda.Device(self.device_id).attributes
            self._sms = int(attributes["MultiProcessorCount"])
            self._shared = (int(attributes.get("MaxSharedMemoryPerBlockOptin", DEFAULT_SHARED_LIMIT)),
                            int(attributes.get("MaxSharedMemoryPerMultiprocessor", DEFAULT_SHARED_LIMIT)))
        self.tuning = BatchTuning.from_env() if tuning is None else tuning
        #: Seconds in the kernels (device events), summed over calls.
        self.kernel_s = 0.0

    def free_bytes(self) -> int:
        with self.cp.cuda.Device(self.device_id):
            pool = self.cp.get_default_memory_pool()
            return int(self.cp.cuda.runtime.memGetInfo()[0]) + int(pool.free_bytes())

    def multiprocessors(self) -> int:
        return self._sms

    def shared_limits(self) -> tuple[int, int]:
        return self._shared

    def resident_blocks(self, kernel: str, threads: int, shared_bytes: int) -> int:
        k = self.kernels[kernel]
        return resident_blocks(int(k.num_regs), int(k.shared_size_bytes), threads, shared_bytes, self._shared[1])

    def run(self, job: FoldJob, shapes: list[BatchShape | None]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        try:
            return self._run(job, shapes)
        except self.cp.cuda.memory.OutOfMemoryError as exc:
            with self.cp.cuda.Device(self.device_id):
                self.cp.get_default_memory_pool().free_all_blocks()
            raise SequenceMemoryError(f"folding {job.lengths.size:,} sequences (the longest {int(job.lengths.max()):,} "
                                      f"nt) did not fit the GPU's memory ({exc})") from None

    def _run(self, job: FoldJob, shapes: list[BatchShape | None]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        cp = self.cp
        o = job.options
        with cp.cuda.Device(self.device_id):
            model = (cp.asarray(job.E, cp.int32), cp.asarray(job.HPX, cp.int32), np.int32(o.dangles),
                     np.int32(int(o.no_lp)), np.int32(o.max_bp_span))
            S = cp.asarray(job.S, cp.uint8)
            count = int(job.lengths.size)
            out = cp.full(max(1, int(job.S.size)), ord("."), cp.uint8)
            energy = cp.zeros(max(1, count), cp.int32)
            err = cp.zeros(max(1, count), cp.int32)
            start, stop = cp.cuda.Event(), cp.cuda.Event()
            start.record()
            for launch, shape in zip(job.launches, shapes):
                if isinstance(launch, BatchLaunch):
                    self._batch(job, launch, shape, model, S, out, energy, err)
                else:
                    self._long(job, launch, model, S, out, energy, err)
            stop.record()
            stop.synchronize()
            self.kernel_s += cp.cuda.get_elapsed_time(start, stop) / 1000.0
            return cp.asnumpy(energy)[:count], cp.asnumpy(err)[:count], cp.asnumpy(out)[: job.S.size]

    def _batch(self, job, launch: BatchLaunch, shape: BatchShape, model, S, out, energy, err) -> None:
        cp = self.cp
        ids = cp.asarray(launch.ids)
        size = work_ints(launch.nmax, job.options.no_lp)
        work = cp.empty(max(1, shape.global_areas * size), cp.int32)  # not read where the areas are shared
        e = cp.zeros(launch.ids.size, cp.int32)
        f = cp.zeros(launch.ids.size, cp.int32)
        head = (*model, S, cp.asarray(job.starts[launch.ids], cp.int64), cp.asarray(job.lengths[launch.ids], cp.int32),
                np.int32(launch.ids.size), np.int32(launch.nmax))
        tail = (out, e, f)
        if shape.kernel == "tmfe_batch":
            args = (*head, work, np.int64(size), *tail)
        elif shape.kernel == "tmfe_batch_shared":
            args = (*head, np.int64(size), *tail)
        else:
            args = (*head, work, np.int64(size), *tail, np.int32(shape.in_shared))
        kernel = self.kernels[shape.kernel]
        if shape.kernel != "tmfe_batch":
            # the most shared memory for shared work areas (so the blocks counted resident are), the
            # driver's choice (more L1) for global ones; cudaFuncSetAttribute, as the attributes below
            kernel.preferred_shared_memory_carveout = 100 if shape.in_shared else -1
        if shape.shared_bytes > DEFAULT_SHARED_LIMIT and kernel.max_dynamic_shared_size_bytes < shape.shared_bytes:
            kernel.max_dynamic_shared_size_bytes = shape.shared_bytes  # opting in above 48 KB
        kernel((shape.blocks,), (shape.threads,), args, shared_mem=shape.shared_bytes)
        energy[ids] = e
        err[ids] = f
        del work

    def _long(self, job, launch: LongLaunch, model, S, out, energy, err) -> None:
        cp = self.cp
        x = launch.seq
        n = int(job.lengths[x])
        a = int(job.starts[x])
        work = cp.empty(work_ints(n, job.options.no_lp), cp.int32)
        seq, struct = S[a:a + n], out[a:a + n]
        threads = LONG_THREADS
        resident = self._sms * RESIDENT_THREADS
        for d in range(n):
            parts = long_parts(n - d, resident)
            shares = (n - d) * parts
            self.kernels["tmfe_diagonal"](((shares + threads - 1) // threads,), (threads,),
                                          (*model, seq, np.int32(n), work, np.int32(d), np.int32(parts)))
        self.kernels["tmfe_finish"]((1,), (1024,), (*model, seq, np.int32(n), work, struct, energy[x:x + 1],
                                                    err[x:x + 1]))
        del work
