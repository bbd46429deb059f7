"""gamut: GPU-accelerated dynamic programming for RNA and DNA sequence analysis.

- ``gamut.scan(queries, references, **params)``: miRNA target scanning identical to miRanda 3.3a.
- ``gamut.fold(sequence, min_loop=..., device=...)``: Nussinov maximum base pairing with traceback.
- ``gamut.splice(base, exons, target, ...)``: Gelfand's exact spliced alignment.

Each analysis has a CPU engine (NumPy + Numba) and an optional CUDA engine (CuPy), chosen with
``device="auto"|"cpu"|"cuda"``.
"""
from gamut import fold, scan, splice  # noqa: F401  (callable subpackages)
from gamut.errors import GamutError, InputError, UsageError

__version__ = "0.1.0"
__all__ = ["GamutError", "InputError", "UsageError", "fold", "scan", "splice", "__version__"]
