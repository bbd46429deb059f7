"""The Python API's result: the reported hits as a pandas DataFrame of
:data:`~gamut.scanning.sinks.columns.HIT_COLUMNS` (:attr:`FrameSink.frame` once closed)."""
from __future__ import annotations

from typing import IO, TYPE_CHECKING, ClassVar

import numpy as np

from gamut.io.threads import Parallel
from gamut.scanning.sinks.base import Chunks
from gamut.scanning.sinks.columns import HIT_COLUMNS, ReportedHits

if TYPE_CHECKING:
    import pandas as pd

    from gamut.scanning.pipeline.job import ScanJob
    from gamut.scanning.pipeline.partitions import Partition
    from gamut.scanning.pipeline.scan_loop import ChunkResult


class FrameSink:
    """Collects each chunk's hits as a DataFrame (a partition's data is its DataFrame)."""

    mode: ClassVar[str | None] = None
    needs_file: ClassVar[bool] = False
    regroups: ClassVar[bool] = False

    def __init__(self, job: ScanJob) -> None:
        self.input = job.scan_input
        self.qids = np.array([x.id for x in self.input.queries], dtype=object)
        self.rids = np.array([x.id for x in self.input.references], dtype=object)
        self.frames: list[pd.DataFrame] = []
        self.frame: pd.DataFrame | None = None

    def _chunk_frame(self, result: ChunkResult) -> pd.DataFrame | None:
        import pandas as pd

        c = ReportedHits(result, self.input)
        if not len(c):
            return None
        lines = [c.hits.strings(w) for w in range(3)]
        rows = c.rows.tolist()
        return pd.DataFrame({
            "query_id": self.qids[c.q], "reference_id": self.rids[c.r], "score": c.field("score"),
            "energy": c.energy_rounded(),
            **{n: c.field(n) for n in ("query_start", "query_end", "ref_start", "ref_end", "aln_length",
                                        "identity", "similarity")},
            "aln_mirna": [lines[0][k] for k in rows], "aln_map": [lines[1][k] for k in rows],
            "aln_utr": [lines[2][k] for k in rows],
        })

    def start(self, out: IO | None) -> None:
        pass

    def write(self, result: ChunkResult, spare_cores: Parallel) -> None:
        frame = self._chunk_frame(result)
        if frame is not None:
            self.frames.append(frame)

    def render(self, chunks: Chunks, prev_query: int) -> pd.DataFrame:
        for result, spare in chunks:
            self.write(result, spare)
        frame = self.close()
        self.frames = []
        return frame

    def write_part(self, part: Partition, data: pd.DataFrame) -> None:
        if len(data):
            self.frames.append(data)

    def close(self) -> pd.DataFrame:
        import pandas as pd

        if not self.frames:
            self.frame = pd.DataFrame({name: [] for name in HIT_COLUMNS})
        else:
            self.frame = pd.concat(self.frames, ignore_index=True)
        return self.frame
