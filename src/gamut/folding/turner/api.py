"""``gamut.fold(..., model="turner")``: the minimum free energy and structure of RNAs with
ViennaRNA's Turner 2004 model (and with ``partition=True`` the partition function), as RNAfold
computes them, on the CPU (ViennaRNA on every core) or the GPU (our kernels)."""
from __future__ import annotations

import time
from operator import itemgetter
from collections.abc import Iterable, Sequence
from typing import Any, Union

import numpy as np

from gamut.errors import DeviceError, GamutError, UsageError
from gamut.folding.turner.batch import TurnerBatch, TurnerResult, first_inconsistent, structure_buffer
from gamut.folding.turner.letters import check_letters, record_name
from gamut.io.packed import PackedSequences
from gamut.folding.turner.options import DEFAULT_TEMPERATURE, TurnerOptions
from gamut.io.fasta import named_records

Records = Union[str, Iterable[Union[str, tuple[str, str]]]]


def fold_turner(sequences: Records, *, partition: bool = False, temperature: float = DEFAULT_TEMPERATURE,
                dangles: int = 2, no_lp: bool = False, max_bp_span: int = -1, device: str = "auto",
                threads: int | None = None, name: str = "sequence") -> TurnerResult | TurnerBatch:
    """Fold one RNA (a :class:`TurnerResult`) or a list of sequences or ``(name, sequence)`` pairs
    (a :class:`TurnerBatch`: columns, in input order) with the Turner 2004 model.

    The options are RNAfold's: ``temperature`` (``-T``, C), ``dangles`` 0 or 2 (``-d0``/``-d2``),
    ``no_lp`` (``--noLP``) and ``max_bp_span`` (``--maxBPspan``, -1: none); ``partition`` adds the
    ensemble free energy and the base-pair probabilities (``-p``). ``device``: ``cpu`` folds with
    ViennaRNA on ``threads`` processes (default every core), ``cuda`` with the GPU kernels,
    ``auto`` takes the CPU for small work. Letters: A, C, G, U, T (read as U) and N (pairs with
    nothing), in either case; anything else, and an empty sequence, is an :class:`InputError`.
    """
    if not isinstance(partition, bool):
        raise UsageError(f"partition must be True or False, got {partition!r}")
    options = TurnerOptions(temperature=temperature, dangles=dangles, no_lp=no_lp, max_bp_span=max_bp_span)
    if isinstance(sequences, str):
        return fold_records([sequences], [name], options, partition, device, threads)[0]
    items, names = split_records(sequences)
    return fold_records(items, names, options, partition, device, threads)


def split_records(items: Any) -> tuple[Sequence[str], Sequence[str] | None]:
    """The sequences and names of an API's list: sequences alone keep no names (``sequence_1``,
    ... are made when asked), so that a list of a million strings is taken as it is; a list of
    ``(name, sequence)`` pairs is split by columns (a few passes at C speed, no loop in Python).
    Anything else (pairs and strings mixed, other items) goes through
    :func:`gamut.io.fasta.named_records`, which names the first bad item."""
    if isinstance(items, (bytes, bytearray)) or not hasattr(items, "__iter__"):
        raise UsageError(f"sequences must be a string or an iterable of them, got {type(items).__name__}")
    if not isinstance(items, (list, tuple)):
        items = list(items)
    kinds = set(map(type, items))
    if kinds <= {str}:
        return items, None
    if kinds == {tuple} and set(map(len, items)) == {2}:
        names = list(map(itemgetter(0), items))
        sequences = list(map(itemgetter(1), items))
        if set(map(type, names)) == {str} and set(map(type, sequences)) == {str}:
            return sequences, names
    records = named_records(items)
    return [sequence for _, sequence in records], [record_name for record_name, _ in records]


def fold_records(sequences: Sequence[str], names: Sequence[str] | None, options: TurnerOptions,
                 partition: bool = False, device: str = "auto", threads: int | None = None) -> TurnerBatch:
    """Check and fold ``sequences`` on the engine ``device`` picks (see :func:`fold_turner`)."""
    from gamut.folding.turner.cpu import check_memory
    from gamut.folding.turner.engines import make_engine, pick_device

    if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int) or threads < 1):
        raise UsageError(f"threads must be a whole number >= 1, got {threads!r}")
    letters, offsets = check_letters(sequences, names)
    lengths = np.diff(offsets)
    resolved = pick_device(device, lengths, partition, threads)
    if resolved == "cpu":
        check_memory(lengths, lambda k: record_name(names, k), partition)
    with make_engine(resolved, threads) as engine:
        return fold_with(engine, sequences, names, offsets, options, partition, letters)


def fold_with(engine: Any, sequences: Sequence[str], names: Sequence[str] | None, offsets: np.ndarray,
              options: TurnerOptions, partition: bool, letters: bytes | None = None) -> TurnerBatch:
    """Fold checked ``sequences`` (their ``offsets``, and ``letters`` end to end when at hand, from
    :func:`check_letters`) on ``engine`` (see :mod:`gamut.folding.turner.engines`; it gets the
    letters as :class:`PackedSequences`, not joined again) and check what it gives: a structure
    that is not valid dot-bracket or disagrees with its energy is reported, never returned."""
    start = time.perf_counter()
    given = sequences
    if letters is not None and not isinstance(sequences, PackedSequences):
        given = PackedSequences(letters, offsets)
    if partition:
        energies, structures, pf = engine.pf(given, options)
    else:
        (energies, structures), pf = engine.mfe(given, options), None
    error = DeviceError if engine.name == "gpu" else GamutError
    energies = np.asarray(energies)
    try:
        if energies.shape != (len(sequences),) or (pf is not None and len(pf) != len(sequences)):
            raise ValueError(f"{energies.shape} energies for {len(sequences)} sequences")
        buffer = structure_buffer(structures, offsets)
    except ValueError as exc:
        raise error(f"the {engine.name} Turner engine gave a malformed result ({exc}; nothing is returned; "
                    "please report this)") from None
    bad = first_inconsistent(buffer, offsets, energies)
    if bad is not None:
        raise error(f"folding {record_name(names, bad)} with the {engine.name} Turner engine gave an inconsistent "
                    f"result (energy {int(energies[bad]) / 100:.2f} with structure "
                    f"{buffer[offsets[bad]:offsets[bad + 1]].tobytes()[:80]!r}; nothing is returned; please report this)")
    return TurnerBatch(sequences, names, energies.astype(np.int32, copy=False), buffer, offsets, options,
                       engine.name, pf, time.perf_counter() - start)
