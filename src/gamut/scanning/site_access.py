"""Site accessibility in a scan (``--accessibility``, docs/accessibility.md): each hit's opening
energy ``dG_open`` and ``ddG = energy + dG_open``.

A hit's site is its reference span (1-based ``ref_start..ref_end``) widened by the flanks of
:class:`~gamut.access.model.SiteAccess` as far as the reference goes; ``dG_open`` is ``-RT ln P``
of that stretch being unpaired under RNAplfold's local partition function of the (scanned)
reference. Every reference is folded once: a first pass aligns every chunk and keeps only the
hits' spans (no energies, no text) and, while they fit a memory budget, the chunks' alignments
for the scan to reuse (:mod:`gamut.scanning.pipeline.replay`); the references that have hits are folded on the device the
scan aligns on (the GPU engine of :mod:`gamut.access.gpu` when the scan runs on CUDA, ViennaRNA on
every core otherwise: :func:`gamut.access.engines.make_folder`) and only the stretches the hits
need are kept (one number per distinct span); the scan itself then looks each hit up. Memory: 16
bytes per distinct span, never a reference's whole table.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from gamut.access.model import AccessParams, SiteAccess, widened_site
from gamut.errors import UsageError

if TYPE_CHECKING:
    from gamut.scanning.hits import HitTable
    from gamut.scanning.pipeline.pairs import ScanInput


@dataclass(frozen=True)
class SiteEnergies:
    """``dG_open`` of every hit span of a scan: sorted keys ``(ref * (L + 1) + start) * (L + 1) + end``
    (``L`` the longest reference) and their energies (kcal/mol; NaN where the stretch is longer
    than the window)."""

    keys: np.ndarray
    energies: np.ndarray
    base: int

    @classmethod
    def encode(cls, ref: np.ndarray, start: np.ndarray, end: np.ndarray, base: int) -> np.ndarray:
        return (np.asarray(ref, np.int64) * base + start) * base + end

    def lookup(self, ref: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
        """``dG_open`` of hits (reference index, 1-based start and end); every span must be known."""
        keys = self.encode(ref, start, end, self.base)
        at = np.searchsorted(self.keys, keys)
        if keys.size and (at.max() >= self.keys.size or not np.array_equal(self.keys[at], keys)):
            raise RuntimeError("site accessibility: a hit span was not in the first pass (a bug: please report it)")
        return self.energies[at]


def stretches(start: np.ndarray, end: np.ndarray, length: np.ndarray, access: SiteAccess) -> tuple[np.ndarray, np.ndarray]:
    """0-based last letter and length of each hit's stretch: ``start..end`` (1-based) widened by
    the flanks (:func:`~gamut.access.model.widened_site`)."""
    first, last = widened_site(np.asarray(start, np.int64), np.asarray(end, np.int64), np.asarray(length, np.int64),
                               access.upstream, access.downstream)
    return last - 1, last - first + 1


def first_pass_input(scan_input: ScanInput) -> ScanInput:
    """The scan of the first pass: the same pairs and hits, without energies, site filter or
    accessibility (its chunks go to :func:`hit_spans`)."""
    return scan_input.with_params(replace(scan_input.params, noenergy=True, site_types=None, site_access=None))


def hit_spans(results: Iterable) -> np.ndarray:
    """Every hit's ``(reference, ref_start, ref_end)`` of the first pass' chunk results, distinct,
    as an (n, 3) array."""
    spans = [np.stack([r.pairs[r.hits.pair, 1], r.hits.ref_start, r.hits.ref_end], axis=1).astype(np.int64)
             for r in results]
    return np.unique(np.concatenate(spans), axis=0) if spans else np.zeros((0, 3), np.int64)


def site_energies(scan_input: ScanInput, spans: np.ndarray, access: SiteAccess, threads: int | None = None,
                  show_progress: bool = False, device: str = "cpu", device_id: int = 0) -> SiteEnergies:
    """``dG_open`` of the hit ``spans`` (:func:`hit_spans`) of the scan, each reference with hits
    folded once on ``device`` (``cpu``: ``threads`` processes; ``cuda``: GPU ``device_id``), with a
    progress bar over the letters folded when ``show_progress``."""
    from gamut.access.engines import make_folder
    from gamut.progress import progress_bar

    references = scan_input.reference_set
    lengths = references.lengths().astype(np.int64)
    base = int(lengths.max(initial=0)) + 2
    if len(lengths) and float(len(lengths)) * base * base >= 2.0**63:
        raise UsageError("--accessibility: the references are too many and too long to index their sites "
                         f"({len(lengths):,} references of up to {base - 2:,} letters); split the reference file")
    ref, start, end = spans[:, 0], spans[:, 1], spans[:, 2]
    last, size = stretches(start, end, lengths[ref], access)
    energies = np.full(ref.shape[0], np.nan)
    cut = np.flatnonzero(np.r_[True, ref[1:] != ref[:-1]]) if ref.size else np.zeros(0, np.int64)
    bounds = np.append(cut, ref.size)
    folded_refs = ref[cut].tolist()
    sequences = [references.sequence(k).decode("latin-1") for k in folded_refs]
    with make_folder(AccessParams(access.window, access.span, 1), device, threads, device_id) as folder, \
            progress_bar(f"accessibility [{folder.name}]", sum(map(len, sequences)), show_progress,
                         unit="nt") as tracker:
        done = folder.stretches(sequences, [last[a:b] for a, b in zip(bounds[:-1], bounds[1:])],
                                [size[a:b] for a, b in zip(bounds[:-1], bounds[1:])], tracker)
    for a, b, values in zip(bounds[:-1], bounds[1:], done):
        energies[a:b] = values
    return SiteEnergies(SiteEnergies.encode(ref, start, end, base), energies, base)


def folding_device(engine) -> tuple[str, int]:
    """Where a scan's references are folded: the first GPU of a CUDA alignment ``engine`` where
    ``auto`` would choose the accessibility GPU engine (:func:`gamut.cuda.device.gpu_engine_verified`),
    else the CPU."""
    from gamut.cuda import device

    gpu_ids = getattr(engine, "gpu_ids", None)
    if getattr(engine, "name", None) == "cuda" and gpu_ids and device.gpu_engine_verified("access"):
        return "cuda", int(gpu_ids[0])
    return "cpu", 0


def apply_site_access(hits: HitTable, refs: np.ndarray, table: SiteEnergies, access: SiteAccess,
                      noenergy: bool) -> np.ndarray:
    """``dG_open`` of every hit of a chunk (``refs``: each hit's reference index), float64; with a
    ``ddg_threshold``, hits whose ``ddG`` exceeds it (or is undefined) are no longer reported."""
    dg_open = table.lookup(refs, hits.ref_start, hits.ref_end)
    if access.ddg_threshold is not None and not noenergy:
        ddg = hits.energy.astype(np.float64) + dg_open
        with np.errstate(invalid="ignore"):
            hits.reported &= ddg <= access.ddg_threshold
    return dg_open
