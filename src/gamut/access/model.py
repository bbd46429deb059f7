"""The accessibility model's parameters and conventions (docs/accessibility.md).

RNAplfold's local partition function: every window of ``window`` letters is folded with base pairs
spanning at most ``span`` letters (Turner 2004 parameters, 37 C, dangles on both sides: ViennaRNA's
defaults), and the probability that the ``u`` letters ending at a position are all unpaired is
averaged over the windows that contain them. A sequence shorter than the window is one window, and
the span is at most the window, as RNAplfold itself does.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np

from gamut.errors import UsageError

#: Window and span recommended for accessibility (Bernhart et al. 2006, "Local RNA base pairing
#: probabilities in large sequences"), and stretches of up to 20 letters (PITA's and TargetScan's
#: site sizes fit).
DEFAULT_WINDOW = 80
DEFAULT_SPAN = 40
DEFAULT_MAX_UNPAIRED = 20
#: RT at 37 C in kcal/mol, with ViennaRNA's gas constant (1.98717 cal/(mol K)) and 273.15 K.
KT_37 = (37.0 + 273.15) * 1.98717 / 1000.0


def energy_to_open(unpaired):
    """``-RT ln P`` in kcal/mol at 37 C of unpaired probabilities (array or number; +inf where 0)."""
    with np.errstate(divide="ignore"):
        return -KT_37 * np.log(unpaired)


@dataclass(frozen=True)
class AccessParams:
    """``window`` (RNAplfold's -W), ``span`` (-L) and ``max_unpaired`` (-u)."""

    window: int = DEFAULT_WINDOW
    span: int = DEFAULT_SPAN
    max_unpaired: int = DEFAULT_MAX_UNPAIRED

    def __post_init__(self) -> None:
        for name in ("window", "span", "max_unpaired"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise UsageError(f"{name} must be a whole number >= 1, got {value!r}")
        if self.max_unpaired > self.window:
            raise UsageError(f"max_unpaired ({self.max_unpaired}) must not exceed the window ({self.window}): "
                             "a stretch is scored inside one window")

    def for_length(self, n: int) -> tuple[int, int]:
        """The window and span folded for a sequence of ``n`` letters (RNAplfold's: both at most ``n``)."""
        window = min(self.window, n)
        return window, min(self.span, window)


#: PITA's flanks around a site (Kertesz et al. 2007): the stretch opened for a site reaches 3 letters
#: before it (5') and 15 after it (3').
PITA_UPSTREAM, PITA_DOWNSTREAM = 3, 15


def widened_site(start, end, length, upstream: int, downstream: int):
    """The 1-based stretch ``start..end`` widened by ``upstream`` letters before and ``downstream``
    after, as far as a sequence of ``length`` letters goes: ``(first, last)`` (numbers or arrays)."""
    return np.maximum(1, start - upstream), np.minimum(length, end + downstream)


@dataclass(frozen=True)
class SiteAccess:
    """A scan's site accessibility (``--accessibility``): every hit gets the opening energy of its
    reference span widened by ``upstream`` and ``downstream`` letters (as far as the reference
    goes), from a local partition function of ``window`` and ``span`` (RNAplfold's -W and -L),
    and ``ddG = energy + dG_open``; with ``ddg_threshold``, only hits with ``ddG <= ddg_threshold``
    are reported."""

    window: int = DEFAULT_WINDOW
    span: int = DEFAULT_SPAN
    upstream: int = PITA_UPSTREAM
    downstream: int = PITA_DOWNSTREAM
    ddg_threshold: float | None = None

    def __post_init__(self) -> None:
        AccessParams(self.window, self.span, 1)  # checks window and span
        for name in ("upstream", "downstream"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise UsageError(f"site flank {name} must be a whole number >= 0, got {value!r}")
        if self.ddg_threshold is not None:
            value = float(self.ddg_threshold)
            if not math.isfinite(value):
                raise UsageError(f"--ddg-threshold must be a finite number, got {self.ddg_threshold!r}")
            object.__setattr__(self, "ddg_threshold", value)


#: a, c, g, u, t and T as the model reads them.
_TO_RNA = str.maketrans("acgutT", "ACGUUU")
_NOT_RNA = re.compile("[^ACGU]")


def rna_letters(sequence: str) -> str:
    """A sequence as the model reads it, letter for letter: A, C, G and U (or T) in either case as
    upper-case RNA, anything else as N (pairs with nothing)."""
    return _NOT_RNA.sub("N", sequence.translate(_TO_RNA))
