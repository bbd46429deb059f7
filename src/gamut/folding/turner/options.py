"""The Turner model's options as RNAfold takes them, and ViennaRNA's model details for them.

Every Turner engine (ViennaRNA on the CPU, our kernels on the GPU) folds with the model that
:meth:`TurnerOptions.model_details` describes: Turner 2004 parameters, ``temperature`` in C,
``dangles`` 0 or 2 (RNAfold's ``-d0``/``-d2``; ``-d2`` is its default), lonely pairs allowed unless
``no_lp`` (``--noLP``), and pairs spanning at most ``max_bp_span`` letters (``-1``: no limit).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from gamut.errors import UsageError

DEFAULT_TEMPERATURE = 37.0
DANGLES = (0, 2)


@dataclass(frozen=True)
class TurnerOptions:
    """``temperature`` (C), ``dangles`` (0 or 2), ``no_lp`` and ``max_bp_span`` (-1: none)."""

    temperature: float = DEFAULT_TEMPERATURE
    dangles: int = 2
    no_lp: bool = False
    max_bp_span: int = -1

    def __post_init__(self) -> None:
        t = self.temperature
        if isinstance(t, bool) or not isinstance(t, (int, float)) or not math.isfinite(t) or t <= -273.15:
            raise UsageError(f"temperature must be a finite number of degrees C above -273.15, got {t!r}")
        if self.dangles not in DANGLES or isinstance(self.dangles, bool):
            raise UsageError(f"dangles must be 0 or 2, got {self.dangles!r}")
        if not isinstance(self.no_lp, bool):
            raise UsageError(f"no_lp must be True or False, got {self.no_lp!r}")
        span = self.max_bp_span
        if isinstance(span, bool) or not isinstance(span, int) or (span != -1 and span < 4):
            raise UsageError(f"max_bp_span must be -1 (no limit) or a whole number >= 4, got {span!r}")

    def model_details(self):
        """ViennaRNA's ``RNA.md`` for these options (everything else at ViennaRNA's defaults)."""
        import RNA

        md = RNA.md()
        md.temperature = float(self.temperature)
        md.dangles = int(self.dangles)
        md.noLP = int(self.no_lp)
        md.max_bp_span = int(self.max_bp_span)
        return md
