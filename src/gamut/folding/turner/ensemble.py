"""What RNAfold's ``-p`` lines show, computed on the host from the base-pair probabilities and the
minimum free energy, for every engine alike (the GPU engine gives probabilities, not these).

- :func:`pf_structure`: RNAfold's pf line, a character per position for how it pairs in the
  ensemble (``.`` mostly unpaired, ``(``/``)`` mostly paired downstream/upstream, ``{``/``}``,
  ``|``, ``,`` weaker tendencies: ViennaRNA's documented rule, with its single-precision sums);
- :func:`centroid`: the pairs of probability above 1/2 and the ensemble's mean distance to them;
- :func:`diversity`: the ensemble's mean base-pair distance, ``sum p (1 - p)`` over ordered pairs;
- :func:`mfe_frequency`: the MFE structure's Boltzmann weight in the ensemble.

The numbers are written vectorised in NumPy; the centroid's free energy is ViennaRNA's
``eval_structure`` (ViennaRNA is a dependency: the reference of every energy here).
"""
from __future__ import annotations

import math

import numpy as np

from gamut.folding.turner.options import TurnerOptions

#: Kelvin of 0 C and the gas constant (cal / (K mol)) of ViennaRNA's ``kT``.
ZERO_C_KELVIN = 273.15
GAS_CONSTANT = 1.98717
#: RNAfold's thresholds of its pf line: a tendency counts above 2/3 (as 0.667).
STRONG = 0.667
#: Rows of the probability matrix summed at a time (bounds the float32 copy of long sequences).
ROW_BLOCK = 2048


def kt(options: TurnerOptions) -> float:
    """RT in kcal/mol at the options' temperature (ViennaRNA's ``exp_params.kT / 1000``)."""
    return (options.temperature + ZERO_C_KELVIN) * GAS_CONSTANT / 1000.0


def _sums(p: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per position, in float32 as ViennaRNA sums them (partners in order of position): the
    probability of being unpaired, of pairing downstream and of pairing upstream."""
    n = p.shape[0]
    unpaired = np.empty(n, np.float32)
    down = np.empty(n, np.float32)
    up = np.empty(n, np.float32)
    for a in range(0, n, ROW_BLOCK):
        b = min(n, a + ROW_BLOCK)
        rows = (p[a:b] + p[:, a:b].T).astype(np.float32)  # row k: every partner of position a + k, in order
        column = np.arange(n)[None, :]
        here = np.arange(a, b)[:, None]
        up[a:b] = np.cumsum(np.where(column < here, rows, np.float32(0)), axis=1, dtype=np.float32)[:, -1]
        down[a:b] = np.cumsum(np.where(column > here, rows, np.float32(0)), axis=1, dtype=np.float32)[:, -1]
        start = np.ones((b - a, 1), np.float32)
        unpaired[a:b] = np.cumsum(np.hstack([start, -rows]), axis=1, dtype=np.float32)[:, -1]
    return unpaired, down, up


def pf_structure(probabilities: np.ndarray) -> str:
    """RNAfold's pf line (without the energy) from the (n, n) probabilities."""
    n = probabilities.shape[0]
    if n == 0:
        return ""
    unpaired, down, up = _sums(probabilities)
    paired = down + up  # float32, as ViennaRNA adds them; compared with the thresholds in double, as C does
    with np.errstate(divide="ignore", invalid="ignore"):
        share_down = (down / paired).astype(np.float64)
        share_up = (up / paired).astype(np.float64)
    out = np.full(n, ord(":"), np.uint8)
    # The first rule that holds decides, so fill from the last rule to the first.
    out[unpaired > paired] = ord(",")
    mixed = paired > unpaired
    out[mixed] = ord("|")
    out[mixed & (share_up > STRONG)] = ord("}")
    out[mixed & (share_down > STRONG)] = ord("{")
    out[up.astype(np.float64) > STRONG] = ord(")")
    out[down.astype(np.float64) > STRONG] = ord("(")
    out[unpaired.astype(np.float64) > STRONG] = ord(".")
    return out.tobytes().decode("ascii")


def centroid(probabilities: np.ndarray) -> tuple[str, float]:
    """The centroid structure (the pairs of probability above 1/2) and its mean base-pair
    distance to the ensemble, as ViennaRNA's ``fc.centroid()``."""
    p = np.triu(probabilities, 1)
    strong = p > 0.5
    distance = float(np.sum(np.where(strong, 1.0 - p, p)))
    out = np.full(p.shape[0], ord("."), np.uint8)
    i, j = np.nonzero(strong)
    out[i] = ord("(")
    out[j] = ord(")")
    return out.tobytes().decode("ascii"), distance


def diversity(probabilities: np.ndarray) -> float:
    """The ensemble's mean base-pair distance (RNAfold's "ensemble diversity", ``fc.mean_bp_distance()``)."""
    p = np.triu(probabilities, 1)
    return float(2.0 * np.sum(p * (1.0 - p)))


def mfe_frequency(ensemble_energy: float, energy_dcal: int, options: TurnerOptions) -> float:
    """The MFE structure's share of the ensemble, ``exp((G - E) / RT)``, from the energies as
    RNAfold holds them (single precision)."""
    ensemble = float(np.float32(ensemble_energy))
    mfe = float(np.float32(energy_dcal / 100.0))
    return math.exp((ensemble - mfe) / kt(options))


def structure_energy(sequence: str, structure: str, options: TurnerOptions) -> float:
    """ViennaRNA's free energy (kcal/mol) of ``structure`` on ``sequence`` with the options' model."""
    import RNA

    return float(RNA.fold_compound(sequence.upper(), options.model_details()).eval_structure(structure))
