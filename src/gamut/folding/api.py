"""``gamut.fold(sequence, min_loop=..., device=...)``: Nussinov maximum base pairing with traceback."""
from __future__ import annotations

import itertools
import sys
import time
from dataclasses import dataclass, field
from typing import Iterable, Iterator, Union

import numpy as np

from gamut.cuda import resolve_device
from gamut.errors import DeviceError, InputError, UsageError
from gamut.io.memory import available_memory
from gamut.folding.sequence import encode
from gamut.folding.traceback import dot_bracket, greedy_pairs, traceback_dense, traceback_tiled

#: The paper's variant (Chang et al. 2010; Li et al. 2014): a pair encloses at least one base.
DEFAULT_MIN_LOOP = 1
CPU_ENGINES = ("blocked", "multicore", "cpu2", "cpu1")
ENGINES = ("auto", *CPU_ENGINES, "gpu")
CPU_TILE = 64
#: Engines reported for sequences folded by the batch engines (one block / one core per sequence).
BATCH_ENGINES = {"gpu": "gpu-batch", "blocked": "cpu-batch"}
BATCH_CHUNK = 4096  # sequences per batch in fold_many and the CLI
#: Length from which a CPU fold shows a progress bar by default (on a terminal): several seconds of work.
PROGRESS_MIN_LENGTH = 8000

Records = Iterable[Union[str, tuple[str, str]]]


@dataclass
class FoldResult:
    """One folded sequence: ``pairs`` (maximum number of pairs) and an optimal ``structure``.

    ``structure`` is dot-bracket (``None`` when traceback was switched off); ``corner`` is the
    top-right ``k x k`` block of the score matrix, ``corner[a, b] = C(a, n - k + b)`` (pairs in
    ``sequence[a : n - k + b + 1]``), when asked for.
    """

    sequence: str
    pairs: int
    structure: str | None
    min_loop: int
    engine: str
    name: str = "sequence"
    seconds: float = 0.0
    corner: np.ndarray | None = field(default=None, repr=False)

    def __len__(self) -> int:
        return len(self.sequence)

    def pair_list(self) -> list[tuple[int, int]]:
        """The pairs ``(i, j)``, ``i < j``, 0-based, in order of ``i``."""
        if self.structure is None:
            raise UsageError("this result was computed without traceback (traceback=False)")
        opened: list[int] = []
        pairs: list[tuple[int, int]] = []
        for pos, ch in enumerate(self.structure):
            if ch == "(":
                opened.append(pos)
            elif ch == ")":
                pairs.append((opened.pop(), pos))
        return sorted(pairs)


def choose_engine(engine: str = "auto", device: str = "auto") -> str:
    """Resolve ``engine`` and ``device`` to one engine name (``gpu`` or a CPU engine).

    ``device="auto"`` takes the GPU when one is present (the fold GPU engine is listed in
    :data:`gamut.cuda.device.VERIFIED_GPU_ENGINES`); ``device="cuda"`` or ``engine="gpu"`` always can.
    """
    if engine not in ENGINES:
        raise UsageError(f"unknown fold engine '{engine}' (choose from {', '.join(ENGINES)})")
    if engine == "auto":
        return "gpu" if resolve_device(device, "fold") == "cuda" else "blocked"
    if engine == "gpu":
        if device == "cpu":
            raise UsageError("engine 'gpu' cannot run with device 'cpu'")
        resolve_device("cuda")
    elif device == "cuda":
        raise UsageError(f"engine '{engine}' runs on the CPU; use engine 'gpu' (or 'auto') with device 'cuda'")
    return engine


def _check_min_loop(min_loop: int) -> int:
    if isinstance(min_loop, bool) or not isinstance(min_loop, (int, np.integer)) or min_loop < 0:
        raise UsageError(f"min_loop must be a non-negative integer, got {min_loop!r}")
    return int(min_loop)


def _check_host_memory(nbytes: int, what: str) -> None:
    available = available_memory()
    if available is not None and nbytes > available:
        raise InputError(f"{what} needs {nbytes / 1e9:.1f} GB of memory, only {available / 1e9:.1f} GB available")


def fold(
    sequence: str | Records,
    min_loop: int = DEFAULT_MIN_LOOP,
    device: str = "auto",
    *,
    engine: str = "auto",
    traceback: bool = True,
    corner: int = 0,
    name: str = "sequence",
    progress: bool | None = None,
) -> FoldResult | list[FoldResult]:
    """Fold one RNA ``sequence`` by maximising base pairs (AU, GC, GU) with Nussinov's recurrence.

    ``min_loop`` is the least number of unpaired bases a pair encloses (the papers' variant is 1;
    3 is the usual biological hairpin minimum). ``device`` is ``auto|cpu|cuda`` (see
    :func:`choose_engine`); ``engine`` picks
    ``gpu``, ``blocked`` (tiled, multicore; the CPU default), ``multicore`` (OMP2), ``cpu2`` or
    ``cpu1``. ``traceback=False`` skips the structure; ``corner=k`` keeps the top-right ``k x k``
    block of the score matrix in ``result.corner``. T is read as U; IUPAC codes such as N never pair.
    ``progress`` shows a bar on stderr while the blocked CPU engine fills (default: for sequences of
    :data:`PROGRESS_MIN_LENGTH` nt or more when stderr is a terminal; a long fold takes minutes).

    A list (or other iterable) of sequences or ``(name, sequence)`` pairs returns a list of
    results in the same order: sequences up to :data:`gamut.folding.batch.BATCH_MAX_LENGTH` nt are
    folded together by a batch engine (``gpu-batch``: one GPU block per sequence in one launch;
    ``cpu-batch``: one core per sequence), longer ones one by one.
    """
    min_loop = _check_min_loop(min_loop)
    if isinstance(corner, bool) or not isinstance(corner, (int, np.integer)) or corner < 0:
        raise UsageError(f"corner must be a non-negative integer, got {corner!r}")
    if not isinstance(sequence, str):
        if isinstance(sequence, (bytes, bytearray)) or not hasattr(sequence, "__iter__"):
            raise UsageError(f"sequence must be a string or an iterable of them, got {type(sequence).__name__}")
        return _fold_list(sequence, min_loop, device, engine, traceback, corner, progress)
    codes = encode(sequence, where=name)
    n = int(codes.shape[0])
    engine = choose_engine(engine, device)
    start = time.perf_counter()
    if engine == "gpu":
        pairs, partner, block = _fold_gpu(codes, min_loop, traceback, corner)
    else:
        show = (sys.stderr.isatty() and n >= PROGRESS_MIN_LENGTH) if progress is None else bool(progress)
        pairs, partner, block = _fold_cpu(codes, min_loop, engine, traceback, corner, show)
    return FoldResult(
        sequence=sequence,
        pairs=pairs,
        structure=dot_bracket(partner) if partner is not None else None,
        min_loop=min_loop,
        engine=engine,
        name=name,
        seconds=time.perf_counter() - start,
        corner=block,
    )


def fold_many(
    records: Records,
    min_loop: int = DEFAULT_MIN_LOOP,
    device: str = "auto",
    **options,
) -> Iterator[FoldResult]:
    """Fold ``(name, sequence)`` pairs (or sequences) in batches of :data:`BATCH_CHUNK`, yielding
    results in order (see :func:`fold` for the options)."""
    items = iter(records)
    while chunk := list(itertools.islice(items, BATCH_CHUNK)):
        yield from fold(chunk, min_loop, device, **options)


def _named(items: Records) -> list[tuple[str, str]]:
    records = []
    for index, item in enumerate(items):
        if isinstance(item, str):
            records.append((f"sequence_{index + 1}", item))
        elif isinstance(item, tuple) and len(item) == 2 and all(isinstance(x, str) for x in item):
            records.append(item)
        else:
            raise UsageError(f"item {index + 1}: expected a sequence or a (name, sequence) pair, got {item!r}")
    return records


def _fold_list(items: Records, min_loop: int, device: str, engine: str, traceback: bool, corner: int,
               progress: bool | None = None) -> list[FoldResult]:
    """Fold many sequences: the short ones with a batch engine, the rest one by one."""
    from gamut.folding.batch import BATCH_MAX_LENGTH, check_batch, encode_many, fold_batch_cpu, starts_of

    records = _named(items)
    engine = choose_engine(engine, device)
    flat, starts, lengths = encode_many(records)
    batched = BATCH_ENGINES.get(engine) if not corner else None
    short = np.flatnonzero(lengths <= BATCH_MAX_LENGTH) if batched else np.zeros(0, np.int64)
    results: list[FoldResult | None] = [None] * len(records)
    if short.size:
        start = time.perf_counter()
        if short.size < lengths.size:  # lay the short ones out on their own
            keep = np.repeat(np.isin(np.arange(lengths.size), short), lengths)
            flat, lengths = flat[keep], lengths[short]
            starts = starts_of(lengths)
        if engine == "gpu":
            from gamut.folding.gpu import fold_batch_gpu

            scores, structures = fold_batch_gpu(flat, starts, lengths, min_loop)
        else:
            scores, structures = fold_batch_cpu(flat, starts, lengths, min_loop, traceback)
        bad = check_batch(scores, structures if traceback else None, flat, starts, lengths, min_loop)
        if bad is not None:
            error = DeviceError if engine == "gpu" else RuntimeError
            raise error(f"folding {records[short[bad]][0]} with the {batched} engine gave an inconsistent result "
                        f"(score {int(scores[bad])}; nothing is returned; please report this)")
        seconds = (time.perf_counter() - start) / short.size
        text = structures.tobytes().decode("ascii")
        for pos, x in enumerate(short.tolist()):
            name, sequence = records[x]
            begin = int(starts[pos])
            results[x] = FoldResult(sequence=sequence, pairs=int(scores[pos]), min_loop=min_loop, engine=batched,
                                    structure=text[begin:begin + len(sequence)] if traceback else None,
                                    name=name, seconds=seconds)
    for x, result in enumerate(results):
        if result is None:
            name, sequence = records[x]
            results[x] = fold(sequence, min_loop, device, engine=engine, traceback=traceback, corner=corner,
                              name=name, progress=progress)
    return results  # type: ignore[return-value]


def _corner_dense(M: np.ndarray, k: int) -> np.ndarray:
    n = M.shape[0]
    return np.triu(M[:k, n - k:].astype(np.int64), k=k - n) if k else np.zeros((0, 0), np.int64)


def _corner_tiled(tiles: np.ndarray, n: int, k: int) -> np.ndarray:
    from gamut.folding.tiled import tiled_value

    nb = (n + tiles.shape[1]) // tiles.shape[1]
    block = np.zeros((k, k), dtype=np.int64)
    for a in range(k):
        for b in range(k):
            block[a, b] = tiled_value(tiles, nb, a, n - k + b + 1)
    return block


def _fold_cpu(codes: np.ndarray, min_loop: int, engine: str, traceback: bool, corner: int, progress: bool = False):
    from gamut.folding.cpu import fill_matrix, matrix_dtype
    from gamut.folding.tiled import diagonal_work, fill_tiled, tile_count
    from gamut.progress import progress_bar

    n = int(codes.shape[0])
    k = min(corner, n)
    itemsize = np.dtype(matrix_dtype(n)).itemsize
    if engine == "blocked":
        _check_host_memory(tile_count(n, CPU_TILE)[1] * CPU_TILE * CPU_TILE * itemsize, f"folding {n:,} nt")
        with progress_bar(f"fold [{engine}] {n:,} nt", int(diagonal_work(n, CPU_TILE).sum()), progress,
                          unit="ops") as advance:
            tiles = fill_tiled(codes, min_loop, CPU_TILE, advance=advance if progress else None)
        nb = (n + CPU_TILE) // CPU_TILE
        from gamut.folding.tiled import tiled_value

        pairs = int(tiled_value(tiles, nb, 0, n))
        partner = traceback_tiled(tiles, codes, min_loop) if traceback else None
        _check_pairs(pairs, partner, codes, min_loop, f"engine '{engine}'", RuntimeError)
        return pairs, partner, _corner_tiled(tiles, n, k) if corner else None
    _check_host_memory(n * n * itemsize, f"folding {n:,} nt with engine '{engine}'")
    M = fill_matrix(codes, min_loop, engine)
    pairs = int(M[0, n - 1]) if n else 0
    partner = traceback_dense(M, codes, min_loop) if traceback else None
    _check_pairs(pairs, partner, codes, min_loop, f"engine '{engine}'", RuntimeError)
    return pairs, partner, _corner_dense(M, k) if corner else None


def _fold_gpu(codes: np.ndarray, min_loop: int, traceback: bool, corner: int):
    """Fill on the GPU, trace the structure there too: only the partner table and the corner come back."""
    from gamut.folding import gpu

    n = int(codes.shape[0])
    tiles = gpu.fill_gpu(codes, min_loop)
    pairs = gpu.score_of(tiles, n)
    partner = None
    if traceback:
        try:
            partner = gpu.traceback_gpu(tiles, codes, min_loop)
        except RuntimeError as exc:
            raise DeviceError(f"the GPU engine's score triangle for {n:,} nt is inconsistent ({exc})") from exc
    block = gpu.corner_of(tiles, n, min(corner, n)) if corner else None
    del tiles
    _check_pairs(pairs, partner, codes, min_loop, "the GPU engine", DeviceError)
    return pairs, partner, block


def _check_pairs(pairs: int, partner: np.ndarray | None, codes: np.ndarray, min_loop: int, engine: str,
                 error: type[Exception]) -> None:
    """Raise ``error`` unless ``pairs`` lies between a quick valid structure's pair count and
    ``n / 2`` and equals the traceback's pair count: an inconsistent fill is reported, never returned."""
    n = int(codes.shape[0])
    low = int(greedy_pairs(codes, np.int64(min_loop)))
    found = None if partner is None else int(np.count_nonzero(partner > np.arange(n)))
    if low <= pairs <= n // 2 and found in (None, pairs):
        return
    if found is not None and found != pairs:
        detail = f"its traceback finds {found:,}"
    else:
        detail = f"a valid structure with {low:,} exists" if pairs < low else f"at most {n // 2:,} are possible"
    raise error(
        f"folding {n:,} nt with {engine} gave an inconsistent result: the fill scores {pairs:,} pairs but "
        f"{detail} (nothing is returned; please report this, and use the CPU engine meanwhile)"
    )
