"""The dot plot of a Turner fold (PNG, SVG or PDF, chosen by the file name), as RNAfold draws
it: the base-pair probabilities in the upper right triangle, a square per pair whose area is the
probability, and the MFE structure's pairs in the lower left."""
from __future__ import annotations

import os

import numpy as np

from gamut.folding.plot import check_plot_path
from gamut.folding.turner.batch import DEFAULT_CUTOFF, TurnerResult, structure_pairs
from gamut.io import atomic_output

#: Sequences up to this length get their letters along the axes.
LETTERS_MAX = 80


def dot_plot(result: TurnerResult, path: str | os.PathLike, *, cutoff: float = DEFAULT_CUTOFF,
             size: float = 7.0) -> None:
    """Draw ``result``'s pair probabilities (``partition=True``) and MFE pairs into ``path``."""
    from matplotlib.figure import Figure

    suffix = check_plot_path(path)
    n = len(result)
    i, j, p = result.pair_probabilities(cutoff)
    mi, mj = structure_pairs(result.structure)
    fig = Figure(figsize=(size, size), dpi=150)
    ax = fig.add_axes((0.1, 0.1, 0.82, 0.82))
    cell = 0.82 * size * 72 / max(n, 1)  # points per position
    # Upper right: probability p at row i, column j (rows from the top), a square of area p.
    ax.scatter(j + 1, i + 1, s=(cell ** 2) * p, marker="s", c="black", linewidths=0)
    # Lower left: the MFE pairs, full squares.
    ax.scatter(mi + 1, mj + 1, s=np.full(mi.shape[0], cell ** 2 * 0.95), marker="s", c="tab:red", linewidths=0)
    ax.plot([0.5, n + 0.5], [0.5, n + 0.5], color="0.6", linewidth=0.5)
    ax.set_xlim(0.5, n + 0.5)
    ax.set_ylim(n + 0.5, 0.5)
    ax.set_aspect("equal")
    ax.xaxis.set_ticks_position("top")
    if n <= LETTERS_MAX:
        letters = result.sequence.upper().replace("T", "U")
        ticks = np.arange(1, n + 1)
        ax.set_xticks(ticks, list(letters), fontsize=max(3.0, min(8.0, 400 / n)))
        ax.set_yticks(ticks, list(letters), fontsize=max(3.0, min(8.0, 400 / n)))
    energy = f"{result.energy:.2f}"
    ensemble = f", ensemble {result.ensemble_energy:.2f}" if result.ensemble_energy is not None else ""
    fig.text(0.5, 0.015, f"{result.name}: {n:,} nt, MFE {energy} kcal/mol{ensemble}\nupper right: pair "
             "probabilities (square area = p); lower left: the MFE structure's pairs", ha="center", fontsize=8)
    with atomic_output(path, "wb") as handle:
        fig.savefig(handle, format=suffix[1:])
