"""Site accessibility in a scan (``--accessibility``, docs/accessibility.md): each hit's opening
energy ``dG_open`` and ``ddG = energy + dG_open``.

A hit's site is its reference span (1-based ``ref_start..ref_end``) widened by the flanks of
:class:`~gamut.access.model.SiteAccess` as far as the reference goes; ``dG_open`` is ``-RT ln P``
of that stretch being unpaired under RNAplfold's local partition function of the (scanned)
reference. Every reference with hits is folded once, after the scan has aligned every chunk (the
order of :mod:`gamut.scanning.pipeline.access_scan`), on the device the scan aligns on (the GPU
engine of :mod:`gamut.access.gpu` when the scan runs on CUDA, ViennaRNA on every core otherwise:
:func:`gamut.access.engines.make_folder`), and only the stretches the hits need are kept (one
number per distinct span); each hit then looks its own up. Memory: 16 bytes per distinct span,
never a reference's whole table.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from gamut.access.model import AccessParams, SiteAccess, widened_site
from gamut.errors import UsageError

if TYPE_CHECKING:
    from gamut.scanning.hits import HitTable
    from gamut.scanning.pipeline.pairs import ScanInput
    from gamut.scanning.results import ChunkResult


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
        return self.energies[span_index(self.keys, self.base, ref, start, end)]


def span_index(keys: np.ndarray, base: int, ref: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Where each hit's span (reference index, 1-based start and end) is in the sorted distinct
    ``keys`` of :class:`SiteEnergies` (``base``); every span must be there."""
    wanted = SiteEnergies.encode(ref, start, end, base)
    order = np.argsort(wanted)  # sorted needles: about 4 times faster to search
    at = np.empty(wanted.shape[0], np.int64)
    at[order] = np.searchsorted(keys, wanted[order])
    if wanted.size and (at.max() >= keys.size or not np.array_equal(keys[at], wanted)):
        raise RuntimeError("site accessibility: a hit span was not in the first pass (a bug: please report it)")
    return at


def stretches(start: np.ndarray, end: np.ndarray, length: np.ndarray, access: SiteAccess) -> tuple[np.ndarray, np.ndarray]:
    """0-based last letter and length of each hit's stretch: ``start..end`` (1-based) widened by
    the flanks (:func:`~gamut.access.model.widened_site`)."""
    first, last = widened_site(np.asarray(start, np.int64), np.asarray(end, np.int64), np.asarray(length, np.int64),
                               access.upstream, access.downstream)
    return last - 1, last - first + 1


def span_base(scan_input: ScanInput) -> int:
    """The base of :class:`SiteEnergies`' keys for a scan's references (their longest length + 2);
    a scan whose keys would not fit 63 bits is refused."""
    lengths = scan_input.reference_set.lengths()
    base = int(lengths.max(initial=0)) + 2
    if len(lengths) and float(len(lengths)) * base * base >= 2.0**63:
        raise UsageError("--accessibility: the references are too many and too long to index their sites "
                         f"({len(lengths):,} references of up to {base - 2:,} letters); split the reference file")
    return base


def distinct_keys(keys: np.ndarray) -> np.ndarray:
    """The distinct values of int64 ``keys``, sorted (NumPy 2.4's ``np.unique`` of integers hashes
    them: about 20 times slower than this sort on 2.7 million keys)."""
    ordered = np.sort(np.asarray(keys, np.int64))
    return ordered[np.r_[True, ordered[1:] != ordered[:-1]]] if ordered.size else ordered


def span_keys(result: ChunkResult, base: int) -> np.ndarray:
    """The distinct :class:`SiteEnergies` keys of a chunk result's hits (every hit, reported or not),
    sorted."""
    hits = result.hits
    return distinct_keys(SiteEnergies.encode(result.pairs[hits.pair, 1], hits.ref_start, hits.ref_end, base))


def site_folder(access: SiteAccess, engine, threads: int | None = None):
    """The folder of a scan's sites (on the device :func:`folding_device` picks for ``engine``;
    ``threads`` processes on the CPU), not yet entered."""
    from gamut.access.engines import make_folder

    device, device_id = folding_device(engine)
    return make_folder(AccessParams(access.window, access.span, 1), device, threads, device_id)


def site_energies(scan_input: ScanInput, keys: np.ndarray, base: int, access: SiteAccess, folder,
                  show_progress: bool = False) -> SiteEnergies:
    """``dG_open`` of the hit spans of the scan (distinct sorted ``keys`` of :func:`span_keys` in
    ``base``), each reference with hits folded once by ``folder`` (:func:`site_folder`, entered),
    with a progress bar over the letters folded when ``show_progress``."""
    from gamut.progress import progress_bar

    references = scan_input.reference_set
    lengths = references.lengths().astype(np.int64)
    keys = np.asarray(keys, np.int64)
    ref, start, end = keys // (base * base), keys // base % base, keys % base
    last, size = stretches(start, end, lengths[ref], access)
    energies = np.full(ref.shape[0], np.nan)
    cut = np.flatnonzero(np.r_[True, ref[1:] != ref[:-1]]) if ref.size else np.zeros(0, np.int64)
    bounds = np.append(cut, ref.size)
    folded_refs = ref[cut].tolist()
    sequences = [references.sequence(k).decode("latin-1") for k in folded_refs]
    with progress_bar(f"accessibility [{folder.name}]", sum(map(len, sequences)), show_progress,
                      unit="nt") as tracker:
        done = folder.stretches(sequences, [last[a:b] for a, b in zip(bounds[:-1], bounds[1:])],
                                [size[a:b] for a, b in zip(bounds[:-1], bounds[1:])], tracker)
    for a, b, values in zip(bounds[:-1], bounds[1:], done):
        energies[a:b] = values
    return SiteEnergies(keys, energies, base)


def folding_device(engine) -> tuple[str, int]:
    """Where a scan's references are folded: the first GPU of a CUDA alignment ``engine`` where
    ``auto`` would choose the accessibility GPU engine (:func:`gamut.cuda.device.gpu_engine_verified`),
    else the CPU."""
    from gamut.cuda import device

    gpu_ids = getattr(engine, "gpu_ids", None)
    if getattr(engine, "name", None) == "cuda" and gpu_ids and device.gpu_engine_verified("access"):
        return "cuda", int(gpu_ids[0])
    return "cpu", 0


def hit_span_index(result: ChunkResult, keys: np.ndarray, base: int) -> np.ndarray:
    """:func:`span_index` of every hit of a chunk result."""
    hits = result.hits
    return span_index(keys, base, result.pairs[hits.pair, 1], hits.ref_start, hits.ref_end)


def set_dg_open(hits: HitTable, dg_open: np.ndarray, access: SiteAccess, noenergy: bool) -> np.ndarray:
    """``dg_open`` (float64, a chunk's hits in order), after applying ``access``' ``ddg_threshold``:
    hits whose ``ddG`` exceeds it (or is undefined) are no longer reported."""
    if access.ddg_threshold is not None and not noenergy:
        ddg = hits.energy.astype(np.float64) + dg_open
        with np.errstate(invalid="ignore"):
            hits.reported &= ddg <= access.ddg_threshold
    return dg_open


def apply_site_access(hits: HitTable, refs: np.ndarray, table: SiteEnergies, access: SiteAccess,
                      noenergy: bool) -> np.ndarray:
    """``dG_open`` of every hit of a chunk (``refs``: each hit's reference index), float64, with
    :func:`set_dg_open`'s threshold applied."""
    return set_dg_open(hits, table.lookup(refs, hits.ref_start, hits.ref_end), access, noenergy)
