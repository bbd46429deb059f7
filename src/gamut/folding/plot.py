"""Arc diagram of a folded structure (PNG, SVG or PDF, chosen by the file name)."""
from __future__ import annotations

import os
import re

import numpy as np

from gamut.errors import UsageError
from gamut.io import atomic_output

FORMATS = (".png", ".svg", ".pdf")


def check_plot_path(path: str | os.PathLike) -> str:
    """The plot file's suffix (its format), or a :class:`UsageError` before any work for one
    matplotlib cannot write here."""
    suffix = os.path.splitext(os.fspath(path))[1].lower()
    if suffix not in FORMATS:
        raise UsageError(f"plot file '{os.fspath(path)}' must end in {', '.join(FORMATS)}")
    return suffix


def plot_paths(template: str, names: list[str]) -> list[str]:
    """One plot file per record: ``template`` alone for one record, else the record name (made safe
    for a file name) before the suffix. Names that become the same file name get ``_2``, ``_3``, ...
    in input order, so that no plot overwrites another."""
    if len(names) == 1:
        return [template]
    stem, suffix = os.path.splitext(template)
    used: set[str] = set()
    paths = []
    for name in names:
        safe = candidate = re.sub(r"[^A-Za-z0-9._-]+", "_", name)
        number = 1
        while candidate in used:
            number += 1
            candidate = f"{safe}_{number}"
        used.add(candidate)
        paths.append(f"{stem}.{candidate}{suffix}")
    return paths


def arc_diagram(result, path: str | os.PathLike, *, title: str | None = None, width: float = 12.0) -> None:
    """Draw each pair of ``result`` (a :class:`~gamut.folding.api.FoldResult`) as an arc over the sequence axis.

    Arcs are coloured by span, so long-range pairs stand out; the file type follows the suffix.
    """
    from matplotlib.collections import LineCollection
    from matplotlib.figure import Figure

    suffix = check_plot_path(path)
    pairs = np.array(result.pair_list(), dtype=float).reshape(-1, 2)
    n = len(result.sequence)
    fig = Figure(figsize=(width, width / 3), dpi=150)
    ax = fig.add_subplot()
    if len(pairs):
        theta = np.linspace(0.0, np.pi, 48)
        centre = (pairs[:, 0] + pairs[:, 1]) / 2 + 1
        radius = (pairs[:, 1] - pairs[:, 0]) / 2
        xs = centre[:, None] - radius[:, None] * np.cos(theta)[None, :]
        ys = radius[:, None] * np.sin(theta)[None, :]
        lines = LineCollection(np.stack([xs, ys], axis=-1), linewidths=0.6 if len(pairs) < 2000 else 0.25,
                               cmap="viridis", alpha=0.8)
        lines.set_array(np.log10(2 * radius))
        ax.add_collection(lines)
        colorbar = fig.colorbar(lines, ax=ax, pad=0.01, fraction=0.03)
        colorbar.set_label("log10 span (nt)")
    ax.set_xlim(0, max(n, 1) + 1)
    ax.set_ylim(0, max(n / 2, 1) * 1.02)
    ax.set_yticks([])
    for side in ("left", "right", "top"):
        ax.spines[side].set_visible(False)
    ax.set_xlabel("position (nt)")
    ax.set_title(title or f"{result.name}: {n:,} nt, {result.pairs:,} pairs (min loop {result.min_loop})")
    fig.tight_layout()
    with atomic_output(path, "wb") as handle:
        fig.savefig(handle, format=suffix[1:])
