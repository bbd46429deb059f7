"""``gamut.fold(sequence, min_loop=..., device=...)``: Nussinov maximum base pairing with traceback."""
from __future__ import annotations

import itertools
import sys
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterable, Iterator, Union

import numpy as np

from gamut.errors import UsageError
from gamut.folding.engines import BATCH_ENGINES, ENGINES, choose_engine
from gamut.folding.sequence import encode
from gamut.folding.traceback import dot_bracket
from gamut.io.fasta import named_records

#: The paper's variant (Chang et al. 2010; Li et al. 2014): a pair encloses at least one base.
DEFAULT_MIN_LOOP = 1
BATCH_CHUNK = 4096  # sequences per batch in fold_many and the CLI
#: Length from which a CPU fold shows a progress bar by default (on a terminal): several seconds of work.
PROGRESS_MIN_LENGTH = 8000

Records = Iterable[Union[str, tuple[str, str]]]

if TYPE_CHECKING:
    from gamut.folding.turner.batch import TurnerBatch, TurnerResult


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


def _check_min_loop(min_loop: int) -> int:
    if isinstance(min_loop, bool) or not isinstance(min_loop, (int, np.integer)) or min_loop < 0:
        raise UsageError(f"min_loop must be a non-negative integer, got {min_loop!r}")
    return int(min_loop)


#: The folding models: Nussinov's maximum base pairing (the papers' model, the default) and
#: Zuker's minimum free energy with ViennaRNA's Turner 2004 parameters (RNAfold's model).
MODELS = ("nussinov", "turner")
#: Options of the Turner model and their defaults (RNAfold's): see :func:`gamut.folding.turner.api.fold_turner`.
TURNER_DEFAULTS = {"partition": False, "temperature": 37.0, "dangles": 2, "no_lp": False, "max_bp_span": -1,
                   "threads": None}


def fold(
    sequence: str | Records,
    min_loop: int = DEFAULT_MIN_LOOP,
    device: str = "auto",
    *,
    model: str = "nussinov",
    engine: str = "auto",
    traceback: bool = True,
    corner: int = 0,
    name: str = "sequence",
    progress: bool | None = None,
    **turner,
) -> FoldResult | list[FoldResult] | TurnerResult | TurnerBatch:
    """Fold one RNA ``sequence`` by maximising base pairs (AU, GC, GU) with Nussinov's recurrence,
    or with ``model="turner"`` by minimum free energy (:func:`gamut.folding.turner.api.fold_turner`:
    RNAfold's model and options ``partition``, ``temperature``, ``dangles``, ``no_lp``,
    ``max_bp_span``, ``threads``; a list gives a :class:`~gamut.folding.turner.batch.TurnerBatch`).

    ``min_loop`` is the least number of unpaired bases a pair encloses (the papers' variant is 1;
    3 is the usual biological hairpin minimum). ``device`` is ``auto|cpu|cuda`` (see
    :func:`gamut.folding.engines.choose_engine`); ``engine`` picks
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
    unknown = sorted(set(turner) - set(TURNER_DEFAULTS))
    if unknown:
        raise UsageError(f"fold() got unknown options: {', '.join(unknown)}")
    if model == "turner":
        nussinov = {"min_loop": min_loop != DEFAULT_MIN_LOOP, "engine": engine != "auto",
                    "traceback": traceback is not True, "corner": corner != 0}
        given = [option for option, changed in nussinov.items() if changed]
        if given:
            raise UsageError(f"{', '.join(given)}: options of the Nussinov model, not of model='turner'")
        from gamut.folding.turner.api import fold_turner

        return fold_turner(sequence, device=device, name=name, **turner)
    if model != "nussinov":
        raise UsageError(f"unknown model {model!r} (choose from {', '.join(MODELS)})")
    if turner:
        raise UsageError(f"{', '.join(sorted(turner))}: options of model='turner', not of the Nussinov model")
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
    show = (sys.stderr.isatty() and n >= PROGRESS_MIN_LENGTH) if progress is None else bool(progress)
    pairs, partner, block = ENGINES[engine].fold(codes, min_loop, traceback, corner, show)
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


def _fold_list(items: Records, min_loop: int, device: str, engine: str, traceback: bool, corner: int,
               progress: bool | None = None) -> list[FoldResult]:
    """Fold many sequences: the short ones with a batch engine, the rest one by one."""
    from gamut.folding.batch import BATCH_MAX_LENGTH, check_batch, encode_many, starts_of

    records = named_records(items)
    engine = choose_engine(engine, device)
    flat, starts, lengths = encode_many(records)
    batched = ENGINES[engine].batch if not corner else None
    short = np.flatnonzero(lengths <= BATCH_MAX_LENGTH) if batched else np.zeros(0, np.int64)
    results: list[FoldResult | None] = [None] * len(records)
    if short.size:
        start = time.perf_counter()
        if short.size < lengths.size:  # lay the short ones out on their own
            keep = np.repeat(np.isin(np.arange(lengths.size), short), lengths)
            flat, lengths = flat[keep], lengths[short]
            starts = starts_of(lengths)
        scores, structures = BATCH_ENGINES[batched].fold(flat, starts, lengths, min_loop, traceback)
        bad = check_batch(scores, structures if traceback else None, flat, starts, lengths, min_loop)
        if bad is not None:
            raise BATCH_ENGINES[batched].error(
                f"folding {records[short[bad]][0]} with the {batched} engine gave an inconsistent result "
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
