"""Spliced-alignment results: score, exon chain (input indices) and the alignment itself."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from gamut.splice.cpu import OP_BASE_GAP, OP_TARGET_GAP
from gamut.splice.model import ALPHABET, SpliceCase

_LETTERS = np.frombuffer(ALPHABET.encode(), dtype=np.uint8)


@dataclass(frozen=True)
class SpliceAlignment:
    """Alignment columns of the chain's concatenated exons (``base``) against the target.

    ``base_pos``/``target_pos`` give each column's 0-based position on the base / target, or -1
    for a gap; ``base`` and ``target`` are the aligned strings with '-' for gaps.
    """

    base: str
    target: str
    base_pos: np.ndarray = field(repr=False)
    target_pos: np.ndarray = field(repr=False)

    @property
    def matches(self) -> int:
        return sum(1 for a, b in zip(self.base, self.target) if a == b and a != "-" and a != "N")

    @property
    def cigar(self) -> str:
        """The target's alignment on the base as a spliced CIGAR (M, I, D and N for introns)."""
        parts: list[tuple[str, int]] = []

        def add(op: str, count: int) -> None:
            if count <= 0:
                return
            if parts and parts[-1][0] == op:
                parts[-1] = (op, parts[-1][1] + count)
            else:
                parts.append((op, count))

        previous = -1
        for b, t in zip(self.base_pos.tolist(), self.target_pos.tolist()):
            if b >= 0:
                if previous >= 0:
                    add("N", b - previous - 1)
                previous = b
                add("M" if t >= 0 else "D", 1)
            else:
                add("I", 1)
        return "".join(f"{count}{op}" for op, count in parts)


@dataclass(frozen=True)
class SpliceResult:
    """The optimal spliced alignment of one case.

    ``chain`` lists input indices of the chosen exons in order, ``exons`` their ``(start, end)``
    and ``target_spans`` the 0-based half-open target segment aligned inside each of them.
    """

    score: int
    chain: list[int]
    exons: list[tuple[int, int]]
    target_spans: list[tuple[int, int]]
    alignment: SpliceAlignment
    name: str = "case"
    engine: str = ""
    cells: int = 0


def build_result(case: SpliceCase, score: int, chain: np.ndarray, ops: np.ndarray, bpos: np.ndarray,
                 tpos: np.ndarray, engine: str) -> SpliceResult:
    """Assemble a :class:`SpliceResult` from a traceback over sorted exons."""
    base_chars = np.full(ops.size, ord("-"), np.uint8)
    target_chars = np.full(ops.size, ord("-"), np.uint8)
    has_base = ops != OP_TARGET_GAP
    has_target = ops != OP_BASE_GAP
    base_chars[has_base] = _LETTERS[case.base[bpos[has_base]]]
    target_chars[has_target] = _LETTERS[case.target[tpos[has_target]]]
    spans = []
    for k in chain:
        inside = (bpos >= case.starts[k]) & (bpos < case.ends[k])
        t_inside = tpos[inside]
        t_inside = t_inside[t_inside >= 0]
        if t_inside.size:
            spans.append((int(t_inside.min()), int(t_inside.max()) + 1))
        else:
            first = np.flatnonzero(inside)[0]
            before = tpos[:first][tpos[:first] >= 0]
            at = int(before.max()) + 1 if before.size else 0
            spans.append((at, at))
    return SpliceResult(
        score=int(score),
        chain=[int(case.order[k]) for k in chain],
        exons=[(int(case.starts[k]), int(case.ends[k])) for k in chain],
        target_spans=spans,
        alignment=SpliceAlignment(base_chars.tobytes().decode(), target_chars.tobytes().decode(), bpos, tpos),
        name=case.name,
        engine=engine,
        cells=case.cells,
    )
