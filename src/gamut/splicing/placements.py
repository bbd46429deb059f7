"""Where a read aligned on the genome (below the readers of alignments, minimap2's placement and
the batches that read them)."""
from __future__ import annotations

from typing import NamedTuple


class ReadPlacement(NamedTuple):
    """A read's best alignment to the genome: chromosome, the strand the read aligned on (+1: as
    given, -1: its reverse complement), 0-based half-open span, matching letters."""

    chrom: str
    strand: int
    start: int
    end: int
    matches: int
