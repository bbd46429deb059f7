"""The Python API's result: the reported hits as a pandas DataFrame of
:func:`~gamut.scanning.sinks.columns.table_columns` (:attr:`FrameSink.frame` once closed)."""
from __future__ import annotations

from collections.abc import Sequence
from typing import IO, TYPE_CHECKING, ClassVar

import numpy as np

from gamut.io.threads import Parallel
from gamut.scanning.params import SITE_TYPES
from gamut.scanning.sinks.base import Chunks
from gamut.scanning.sinks.columns import (
    ReportedHits,
    hit_genome,
    output_genome_map,
    table_columns,
)

if TYPE_CHECKING:
    import pandas as pd

    from gamut.scanning.pipeline.pairs import Partition
    from gamut.scanning.results import ChunkResult
    from gamut.scanning.sinks.spec import OutputSpec


class FrameSink:
    """Collects each chunk's hits as a DataFrame (a partition's data is its DataFrame)."""

    mode: ClassVar[str | None] = None
    needs_file: ClassVar[bool] = False
    regroups: ClassVar[bool] = False

    def __init__(self, spec: OutputSpec) -> None:
        self.input = spec.scan_input
        self.qids = np.array([x.id for x in self.input.queries], dtype=object)
        self.rids = np.array([x.id for x in self.input.references], dtype=object)
        self.frames: list[pd.DataFrame] = []
        self.frame: pd.DataFrame | None = None
        self.names = table_columns(spec)
        self.genome = output_genome_map(spec)

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
            **self._extra(c),
        })

    def _extra(self, c: ReportedHits) -> dict:
        """The context columns and, with an annotation, the genome columns (None where unmapped)."""
        import pandas as pd

        sites = c.sites()
        out = {"site_type": pd.Categorical.from_codes(sites.site, SITE_TYPES), "dist_to_end": sites.dist_to_end,
               "supp_pairs": sites.supp_pairs.astype(np.int64), "local_au": np.round(sites.local_au.astype(np.float64), 2)}
        access = c.access()
        if access is not None:
            out.update(dict(zip(("dG_open", "ddG"), access)))
        if self.genome is not None:
            from gamut.scanning.genome import block_text

            g = hit_genome(self.genome, c, sites)
            buf, starts, lengths = block_text(g.block_off, g.block_start, g.block_end, mid="-")
            text = buf.tobytes().decode("ascii")
            mapped = g.mapped.tolist()
            chroms = np.array(self.genome.chroms + [None], dtype=object)
            out.update({
                "chrom": chroms[np.where(g.mapped, g.chrom, len(self.genome.chroms))],
                "genome_start": pd.arrays.IntegerArray(g.start, ~g.mapped),  # nullable: <NA> where unmapped
                "genome_end": pd.arrays.IntegerArray(g.end, ~g.mapped),
                "strand": np.array(["-", None, "+"], dtype=object)[g.strand.astype(np.int64) + 1],
                "blocks": [text[a:a + n] if m else None for a, n, m in zip(starts.tolist(), lengths.tolist(), mapped)],
            })
        return out

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

    def render_tile(self, chunks: Chunks) -> tuple[pd.DataFrame, np.ndarray]:
        """A tile's hits and each row's output-order number (:meth:`write_rows` orders by them)."""
        ordinals = []
        for result, spare in chunks:
            frame = self._chunk_frame(result)
            if frame is not None:
                self.frames.append(frame)
                ordinals.append(result.ordinal(ReportedHits(result, self.input).pair))
        frame = self.close()
        self.frames = []
        return frame, (np.concatenate(ordinals) if ordinals else np.zeros(0, np.int64))

    def write_rows(self, tiles: Sequence[tuple[pd.DataFrame, np.ndarray]], stop: int) -> None:
        import pandas as pd

        frames = [frame for frame, _ in tiles if len(frame)]
        if frames:
            order = np.argsort(np.concatenate([o for f, o in tiles if len(f)]), kind="stable")
            self.frames.append(pd.concat(frames, ignore_index=True).take(order).reset_index(drop=True))

    def close(self) -> pd.DataFrame:
        import pandas as pd

        if not self.frames:
            self.frame = pd.DataFrame({name: [] for name in self.names})
        else:
            self.frame = pd.concat(self.frames, ignore_index=True)
        return self.frame
