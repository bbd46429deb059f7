"""Output formats of ``gamut access``, by name in :data:`SINKS`: a writer gets the output handle
once (:meth:`start`), each sequence's result (:meth:`write`) and :meth:`close`."""
from __future__ import annotations

from typing import IO, ClassVar, Protocol

import numpy as np

from gamut.access.api import Accessibility

#: Significant digits of probabilities and energies in the text formats (RNAplfold prints 7).
DIGITS = 7


class AccessSink(Protocol):
    name: ClassVar[str]
    suffix: ClassVar[str | None]
    #: How the output is opened (``"w"`` text or ``"wb"`` binary).
    mode: ClassVar[str]

    def start(self, out: IO) -> None: ...
    def write(self, result: Accessibility) -> None: ...
    def close(self) -> None: ...


def _text(values: np.ndarray) -> list[str]:
    return [f"{v:.{DIGITS}g}" for v in values.tolist()]


class TsvSink:
    """One row per sequence, position (``end``, 1-based) and stretch length ``u``: the unpaired
    probability and the opening energy (kcal/mol); undefined stretches (``end < u``) are left out."""

    name, suffix, mode = "tsv", ".tsv", "w"

    def start(self, out: IO) -> None:
        self.out = out
        out.write("name\tend\tu\tunpaired\topening_energy\n")

    def write(self, result: Accessibility) -> None:
        t = result.table()
        self.out.writelines(f"{result.name}\t{e}\t{u}\t{p}\t{g}\n" for e, u, p, g in
                            zip(t["end"].tolist(), t["u"].tolist(), _text(t["unpaired"].to_numpy()),
                                _text(t["opening_energy"].to_numpy())))

    def close(self) -> None:
        pass


class ParquetSink:
    """The rows of the TSV format as a Parquet file (float64 columns), one row group per sequence."""

    name, suffix, mode = "parquet", ".parquet", "wb"

    def start(self, out: IO) -> None:
        self.out = out
        self.writer = None

    def write(self, result: Accessibility) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        table = pa.Table.from_pandas(result.table(), preserve_index=False)
        if self.writer is None:
            self.writer = pq.ParquetWriter(self.out, table.schema)
        self.writer.write_table(table)

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()


class LunpSink:
    """RNAplfold's ``_lunp`` layout, one block per sequence after a ``>name`` line: a header naming
    the stretch lengths, then per position its probabilities for u = 1, 2, ... (``NA`` where
    undefined), tab-separated."""

    name, suffix, mode = "lunp", ".lunp", "w"

    def start(self, out: IO) -> None:
        self.out = out

    def write(self, result: Accessibility) -> None:
        width = result.unpaired.shape[1]
        self.out.write(f">{result.name}\n#unpaired probabilities\n #i$\tl=" + "".join(f"{u}\t" for u in range(1, width + 1))
                       + "\n")
        for i, row in enumerate(result.unpaired, start=1):
            cells = ["NA" if np.isnan(v) else f"{v:.{DIGITS}g}" for v in row.tolist()]
            self.out.write(f"{i}\t" + "\t".join(cells) + "\t\n")

    def close(self) -> None:
        pass


SINKS: dict[str, type[AccessSink]] = {sink.name: sink for sink in (TsvSink, ParquetSink, LunpSink)}
FORMAT_BY_SUFFIX = {sink.suffix: name for name, sink in SINKS.items() if sink.suffix}
DEFAULT_FORMAT = TsvSink.name
