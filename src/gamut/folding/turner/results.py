"""What a partition-function engine returns for one sequence (the engine contract of issue 46)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class PartitionResult:
    """The ensemble free energy (kcal/mol, as RNA's ``fc.pf()[1]``) and the base-pair probabilities:
    float64 (n, n), ``p[i, j]`` for 0-based ``i < j``, zero elsewhere."""

    ensemble_energy: float
    probabilities: np.ndarray
