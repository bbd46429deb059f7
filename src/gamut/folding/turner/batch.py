"""Results of Turner folding: one sequence (:class:`TurnerResult`) or a batch as columns
(:class:`TurnerBatch`).

A batch keeps what its engine gave as arrays: the energies (int32 dcal/mol, ViennaRNA's integers),
the structures end to end in one byte buffer with the offsets of the records, and the sequences
and names as given, so that folding a million windows builds no Python object per window. It is
a sequence all the same: ``batch[i]`` and iteration give :class:`TurnerResult` views made when
asked, and :meth:`TurnerBatch.to_arrow` / :meth:`TurnerBatch.to_pandas` give the columns.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterator, overload

import numpy as np
from numba import njit, prange

from gamut.errors import UsageError
from gamut.folding.turner import ensemble
from gamut.folding.turner.letters import record_name
from gamut.folding.turner.options import TurnerOptions
from gamut.folding.turner.results import PartitionResult

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

#: The least probability :meth:`TurnerResult.pair_probabilities` reports by default (RNAfold's
#: dot plot leaves out pairs below 1e-5 too).
DEFAULT_CUTOFF = 1e-5


@dataclass(frozen=True)
class TurnerResult:
    """One folded sequence: the minimum free energy ``energy`` (kcal/mol, as RNAfold prints it;
    ``energy_dcal`` is ViennaRNA's exact integer in dcal/mol) and its ``structure`` (dot-bracket);
    with the partition function also ``ensemble_energy`` (kcal/mol) and ``probabilities`` ((n, n)
    float64, ``p[i, j]`` for 0-based ``i < j``), from which the properties of RNAfold's ``-p``
    lines are computed when asked."""

    name: str
    sequence: str
    structure: str
    energy_dcal: int
    options: TurnerOptions
    engine: str
    ensemble_energy: float | None = None
    probabilities: np.ndarray | None = field(default=None, repr=False)

    def __len__(self) -> int:
        return len(self.sequence)

    @property
    def energy(self) -> float:
        """The minimum free energy in kcal/mol (``energy_dcal / 100``)."""
        return self.energy_dcal / 100.0

    def pair_list(self) -> list[tuple[int, int]]:
        """The MFE structure's pairs ``(i, j)``, ``i < j``, 0-based, in order of ``i``."""
        return [(int(i), int(j)) for i, j in zip(*structure_pairs(self.structure))]

    def _probabilities(self) -> np.ndarray:
        if self.probabilities is None:
            raise UsageError(f"{self.name}: folded without the partition function (partition=True)")
        return self.probabilities

    def pair_probabilities(self, cutoff: float = DEFAULT_CUTOFF) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(i, j, p)``: the pairs of probability ``p >= cutoff``, 0-based ``i < j``, by ``i`` then ``j``."""
        p = self._probabilities()
        i, j = np.nonzero(p >= cutoff)
        keep = i < j
        return i[keep], j[keep], p[i[keep], j[keep]]

    @property
    def pf_structure(self) -> str:
        """RNAfold's pf line: how each position pairs in the ensemble (``.,|{}()``)."""
        return ensemble.pf_structure(self._probabilities())

    @property
    def centroid(self) -> tuple[str, float]:
        """The centroid structure and its mean base-pair distance to the ensemble (``d=``)."""
        return ensemble.centroid(self._probabilities())

    @property
    def centroid_energy(self) -> float:
        """The centroid structure's free energy (kcal/mol, ViennaRNA's ``eval_structure``)."""
        return ensemble.structure_energy(self.sequence, self.centroid[0], self.options)

    @property
    def mfe_frequency(self) -> float:
        """The MFE structure's share of the ensemble (RNAfold's "frequency of mfe structure")."""
        self._probabilities()
        return ensemble.mfe_frequency(self.ensemble_energy, self.energy_dcal, self.options)

    @property
    def diversity(self) -> float:
        """The ensemble's mean base-pair distance (RNAfold's "ensemble diversity")."""
        return ensemble.diversity(self._probabilities())


def structure_pairs(structure: str) -> tuple[np.ndarray, np.ndarray]:
    """The 0-based pairs ``(i, j)`` of a dot-bracket structure, ordered by ``i``."""
    opened: list[int] = []
    pairs: list[tuple[int, int]] = []
    for pos, ch in enumerate(structure):
        if ch == "(":
            opened.append(pos)
        elif ch == ")":
            pairs.append((opened.pop(), pos))
    pairs.sort()
    out = np.array(pairs, np.int64).reshape(-1, 2)
    return out[:, 0], out[:, 1]


def structure_buffer(structures: Any, offsets: np.ndarray) -> np.ndarray:
    """An engine's structures (bytes or a uint8 array end to end, or a list of strings) as one
    uint8 array; a ValueError when their lengths are not the sequences' (``offsets``)."""
    if isinstance(structures, (bytes, bytearray, memoryview)):
        buffer = np.frombuffer(structures, np.uint8)
    elif isinstance(structures, np.ndarray):
        buffer = np.ascontiguousarray(structures).reshape(-1).view(np.uint8)
    else:
        structures = list(structures)
        lengths = np.fromiter(map(len, structures), np.int64, len(structures))
        if lengths.shape[0] != offsets.shape[0] - 1 or np.any(lengths != np.diff(offsets)):
            raise ValueError("structures of other lengths than their sequences")
        buffer = np.frombuffer("".join(structures).encode("ascii", errors="replace"), np.uint8)
    if buffer.shape[0] != offsets[-1]:
        raise ValueError(f"structures of {buffer.shape[0]:,} letters for sequences of {int(offsets[-1]):,}")
    return buffer


@njit(cache=True, nogil=True, parallel=True)
def _inconsistent(buffer, offsets, energies, bad):
    for r in prange(energies.shape[0]):
        depth = 0
        pairs = 0
        wrong = energies[r] > 0
        for x in range(offsets[r], offsets[r + 1]):
            c = buffer[x]
            if c == 40:  # (
                depth += 1
                pairs += 1
            elif c == 41:  # )
                depth -= 1
                if depth < 0:
                    wrong = True
            elif c != 46:  # .
                wrong = True
        bad[r] = wrong or depth != 0 or (energies[r] < 0 and pairs == 0)


def first_inconsistent(buffer: np.ndarray, offsets: np.ndarray, energies: np.ndarray) -> int | None:
    """The first record whose structure is no valid dot-bracket string (other characters, brackets
    that do not match inside it) or disagrees with its energy (an MFE is never positive, and a
    negative one needs pairs); None when all are consistent. One compiled pass over the letters."""
    bad = np.zeros(energies.shape[0], np.bool_)
    _inconsistent(buffer, np.ascontiguousarray(offsets, np.int64), np.ascontiguousarray(energies, np.int64), bad)
    where = np.flatnonzero(bad)
    return int(where[0]) if where.size else None


@dataclass(frozen=True)
class EnsembleSummary:
    """What RNAfold's ``-p`` lines show, for each record of a batch: the pf line, the centroid
    structure, its free energy and distance, the MFE structure's frequency and the diversity."""

    pf_structures: list[str]
    centroids: list[str]
    centroid_energies: np.ndarray
    centroid_distances: np.ndarray
    mfe_frequencies: np.ndarray
    diversities: np.ndarray

    @classmethod
    def of(cls, batch: TurnerBatch) -> EnsembleSummary:
        records = list(batch)
        centroids = [r.centroid for r in records]
        return cls(pf_structures=[r.pf_structure for r in records], centroids=[c for c, _ in centroids],
                   centroid_energies=np.array([ensemble.structure_energy(r.sequence, c, r.options)
                                               for r, (c, _) in zip(records, centroids)], np.float64),
                   centroid_distances=np.array([d for _, d in centroids], np.float64),
                   mfe_frequencies=np.array([r.mfe_frequency for r in records], np.float64),
                   diversities=np.array([r.diversity for r in records], np.float64))


class TurnerBatch(Sequence):
    """Many folded sequences as columns: ``energies_dcal`` (int32), ``energies`` (kcal/mol),
    the structures in ``structure_bytes`` (uint8) at ``offsets`` (int64, one more than records),
    and with the partition function ``ensemble_energies`` and each record's probabilities.
    ``batch[i]`` is the :class:`TurnerResult` of record ``i``."""

    def __init__(self, sequences: Sequence[str], names: Sequence[str] | None, energies_dcal: np.ndarray,
                 structure_bytes: np.ndarray, offsets: np.ndarray, options: TurnerOptions, engine: str,
                 partition: Sequence[PartitionResult] | None = None, seconds: float = 0.0) -> None:
        self.sequences = sequences
        self._names = names
        self.energies_dcal = np.asarray(energies_dcal, np.int32)
        self.structure_bytes = structure_bytes
        self.offsets = offsets
        self.options = options
        self.engine = engine
        self.partition = partition
        self.seconds = seconds

    def __len__(self) -> int:
        return int(self.energies_dcal.shape[0])

    @overload
    def __getitem__(self, index: int) -> TurnerResult: ...
    @overload
    def __getitem__(self, index: slice) -> list[TurnerResult]: ...

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self[k] for k in range(*index.indices(len(self)))]
        k = int(index)
        if k < 0:
            k += len(self)
        if not 0 <= k < len(self):
            raise IndexError(f"record {index} of a batch of {len(self)}")
        pf = self.partition[k] if self.partition is not None else None
        return TurnerResult(name=self.name(k), sequence=self.sequences[k], structure=self.structure(k),
                            energy_dcal=int(self.energies_dcal[k]), options=self.options, engine=self.engine,
                            ensemble_energy=None if pf is None else float(pf.ensemble_energy),
                            probabilities=None if pf is None else pf.probabilities)

    def __iter__(self) -> Iterator[TurnerResult]:
        return (self[k] for k in range(len(self)))

    def __repr__(self) -> str:
        return (f"TurnerBatch({len(self):,} records, engine={self.engine!r}, "
                f"partition={self.partition is not None}, options={self.options})")

    def name(self, index: int) -> str:
        return record_name(self._names, index)

    @property
    def names(self) -> Sequence[str]:
        """The records' names (``sequence_1``, ... for sequences given without one)."""
        return self._names if self._names is not None else [self.name(k) for k in range(len(self))]

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)

    @property
    def energies(self) -> np.ndarray:
        """Minimum free energies in kcal/mol (float64, ``energies_dcal / 100``)."""
        return self.energies_dcal / 100.0

    def structure(self, index: int) -> str:
        return self.structure_bytes[self.offsets[index]:self.offsets[index + 1]].tobytes().decode("ascii")

    @property
    def structures(self) -> list[str]:
        """Every structure as a string (made when asked)."""
        text = self.structure_bytes.tobytes().decode("ascii")
        bounds = self.offsets.tolist()
        return [text[a:b] for a, b in zip(bounds[:-1], bounds[1:])]

    @property
    def ensemble_energies(self) -> np.ndarray | None:
        if self.partition is None:
            return None
        return np.fromiter((pf.ensemble_energy for pf in self.partition), np.float64, len(self))

    def ensemble_summary(self) -> EnsembleSummary:
        """RNAfold's ``-p`` numbers of every record (a :class:`UsageError` without the partition function)."""
        if self.partition is None:
            raise UsageError("this batch was folded without the partition function (partition=True)")
        return EnsembleSummary.of(self)

    def to_arrow(self) -> pa.Table:
        """The columns ``name``, ``length``, ``structure``, ``energy`` (kcal/mol) and ``energy_dcal``
        (and ``ensemble_energy`` with the partition function) as a pyarrow Table; the structures are
        handed over as their buffer, not string by string."""
        import pyarrow as pa

        structures = pa.LargeStringArray.from_buffers(len(self), pa.py_buffer(self.offsets),
                                                      pa.py_buffer(self.structure_bytes))
        columns = {"name": pa.array(self.names, pa.string()), "length": pa.array(self.lengths.astype(np.int64)),
                   "structure": structures.cast(pa.string()), "energy": pa.array(self.energies),
                   "energy_dcal": pa.array(self.energies_dcal)}
        if self.partition is not None:
            columns["ensemble_energy"] = pa.array(self.ensemble_energies)
        return pa.table(columns)

    def to_pandas(self) -> pd.DataFrame:
        """:meth:`to_arrow` as a pandas DataFrame."""
        return self.to_arrow().to_pandas()
