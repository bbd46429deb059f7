"""The partition function's result for one sequence, as every Turner engine returns it."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class PartitionResult:
    """``ensemble_energy``: the ensemble free energy in kcal/mol (ViennaRNA's ``fc.pf()[1]``);
    ``probabilities``: float64 (n, n), the probability of the pair (i, j) at ``[i, j]`` for 0-based
    i < j, zero elsewhere (ViennaRNA's ``fc.bpp()`` less its 1-based row and column 0)."""

    ensemble_energy: float
    probabilities: np.ndarray
