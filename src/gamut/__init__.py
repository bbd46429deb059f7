"""gamut: GPU-accelerated dynamic programming for RNA and DNA sequence analysis.

- :func:`scan`: miRNA target scanning identical to miRanda 3.3a.
- :func:`fold`: Nussinov maximum base pairing with traceback, or with ``model="turner"`` the
  minimum free energy (and partition function) of ViennaRNA's RNAfold.
- :func:`splice`: Gelfand's exact spliced alignment.
- :func:`accessibility`: how open each stretch of an RNA is (RNAplfold's local partition function).

Each analysis has a CPU engine (NumPy + Numba) and an optional CUDA engine (CuPy), chosen with
``device="auto"|"cpu"|"cuda"``. The functions import their analysis on first use, so
``import gamut`` stays fast and needs no CUDA.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gamut._version import __version__
from gamut.errors import GamutError, InputError, UsageError

if TYPE_CHECKING:
    import pandas as pd

    from gamut.access.api import Accessibility
    from gamut.folding.api import FoldResult
    from gamut.folding.turner.batch import TurnerBatch, TurnerResult
    from gamut.splicing.result import SpliceResult

__all__ = ["GamutError", "InputError", "UsageError", "accessibility", "fold", "scan", "splice", "__version__"]


def scan(queries: Any, references: Any, *args: Any, **options: Any) -> pd.DataFrame:
    """Scan miRNAs against references with miRanda 3.3a's model; see :func:`gamut.scanning.api.scan`."""
    from gamut.scanning.api import scan as run

    return run(queries, references, *args, **options)


def fold(sequence: Any, *args: Any, **options: Any) -> FoldResult | list[FoldResult] | TurnerResult | TurnerBatch:
    """Fold one RNA or many: by maximum base pairing (Nussinov, the default) or with
    ``model="turner"`` by minimum free energy as RNAfold; see :func:`gamut.folding.api.fold`."""
    from gamut.folding.api import fold as run

    return run(sequence, *args, **options)


def splice(base: Any, exons: Any, target: Any, *args: Any, **options: Any) -> SpliceResult:
    """The exact spliced alignment of ``target`` to a chain of ``exons`` of ``base``; see
    :func:`gamut.splicing.api.splice`."""
    from gamut.splicing.api import splice as run

    return run(base, exons, target, *args, **options)


def accessibility(sequences: Any, *args: Any, **options: Any) -> Accessibility | list[Accessibility]:
    """Probabilities that stretches of an RNA are unpaired, and their opening energies; see
    :func:`gamut.access.api.accessibility`."""
    from gamut.access.api import accessibility as run

    return run(sequences, *args, **options)
