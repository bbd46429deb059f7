"""One progress bar for every analysis: a rich bar on stderr, or nothing."""
from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Callable, Iterator

if TYPE_CHECKING:
    from rich.console import Console

_PREFIXES = ("", "k", "M", "G", "T", "P", "E")


def _scale(value: float) -> tuple[float, str]:
    """The divisor and SI prefix that put ``value`` in [1, 1000) (1 and no prefix below 1000)."""
    power = 0
    while power + 1 < len(_PREFIXES) and abs(value) >= 1000 ** (power + 1):
        power += 1
    return 1000.0 ** power, _PREFIXES[power]


def _number(value: float, divisor: float) -> str:
    return f"{value:,.0f}" if divisor == 1 else f"{value / divisor:.1f}"


def _with_unit(prefix: str, unit: str) -> str:
    """``" G cells"``, ``" cells"``, ``" G"`` or ``""``: what follows a number."""
    words = " ".join(w for w in (prefix, unit) if w)
    return f" {words}" if words else ""


def human_count(done: float, total: float | None, unit: str = "") -> str:
    """``12.3/41.4 G cells``: done and total in the total's SI prefix (``3/9 records`` below 1000)."""
    divisor, prefix = _scale(total if total else done)
    shown = _number(done, divisor) if total is None else f"{_number(done, divisor)}/{_number(total, divisor)}"
    return shown + _with_unit(prefix, unit)


def human_rate(per_second: float | None, unit: str = "") -> str:
    """``3.1 G cells/s``; ``?`` until a rate is known."""
    if per_second is None:
        return f"? {unit}/s".replace(" /", "/")
    divisor, prefix = _scale(per_second)
    number = f"{per_second:.1f}" if divisor == 1 else f"{per_second / divisor:.1f}"
    return f"{number}{_with_unit(prefix, unit)}/s"


def _columns(label: str, unit: str) -> list:
    """Label (markup-escaped, so ``scan [cpu]`` shows as written), bar, count, rate and times."""
    from rich.markup import escape
    from rich.progress import BarColumn, ProgressColumn, TextColumn, TimeElapsedColumn, TimeRemainingColumn
    from rich.table import Column
    from rich.text import Text

    whole = Column(no_wrap=True)  # a count split over two lines is unreadable; the bar shrinks instead

    class CountColumn(ProgressColumn):
        def render(self, task) -> Text:
            return Text(human_count(task.completed, task.total, unit), style="progress.download")

    class RateColumn(ProgressColumn):
        def render(self, task) -> Text:
            speed = task.finished_speed or task.speed  # rich's recent rate needs two updates
            if speed is None and task.completed and task.elapsed:
                speed = task.completed / task.elapsed
            return Text(human_rate(speed, unit), style="progress.data.speed")

    bar = BarColumn(bar_width=None, table_column=Column(ratio=1, max_width=40))
    return [TextColumn(escape(label), table_column=whole), bar, CountColumn(table_column=whole),
            RateColumn(table_column=whole), TimeElapsedColumn(table_column=whole),
            TimeRemainingColumn(table_column=whole)]


@contextlib.contextmanager
def progress_bar(label: str, total: int | None, show: bool, *, unit: str = "",
                 console: Console | None = None) -> Iterator[Callable[[int], None]]:
    """Yield ``advance(n)``: a transient rich bar on stderr (or ``console``) counting ``unit``
    (``cells``, ``pairs``, ...) up to ``total`` (None: not known ahead) when ``show``, else a no-op."""
    if not show:
        yield lambda n: None
        return
    from rich.console import Console
    from rich.progress import Progress

    with Progress(*_columns(label, unit), console=console or Console(stderr=True), transient=True) as bar:
        task = bar.add_task(label, total=total)
        yield lambda n: bar.advance(task, n)
