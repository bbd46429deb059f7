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


#: Seconds between two progress lines when stderr is no terminal (a log file, a pipe).
LOG_INTERVAL = 10.0


class _LogLines:
    """Progress as plain lines (``label: 12.3/41.4 G cells, 3.1 G cells/s, 0:00:20``) at most every
    ``interval`` seconds and once at the end: what a log file can hold, where a live bar would
    leave nothing but control characters or a blank line."""

    def __init__(self, label: str, total: int | None, unit: str, write: Callable[[str], None],
                 interval: float) -> None:
        import time

        self.label, self.total, self.unit, self.write, self.interval = label, total, unit, write, interval
        self.clock = time.monotonic
        self.began = self.last = self.clock()
        self.done = 0

    def advance(self, n: int) -> None:
        self.done += n
        if self.clock() - self.last >= self.interval:
            self.line()

    def line(self) -> None:
        self.last = now = self.clock()
        elapsed = now - self.began
        rate = human_rate(self.done / elapsed if elapsed > 0 else None, self.unit)
        minutes, seconds = divmod(int(elapsed), 60)
        self.write(f"{self.label}: {human_count(self.done, self.total, self.unit)}, {rate}, "
                   f"{minutes // 60}:{minutes % 60:02d}:{seconds:02d}")


@contextlib.contextmanager
def progress_bar(label: str, total: int | None, show: bool, *, unit: str = "",
                 console: Console | None = None) -> Iterator[Callable[[int], None]]:
    """Yield ``advance(n)``: a transient rich bar on stderr (or ``console``) counting ``unit``
    (``cells``, ``pairs``, ...) up to ``total`` (None: not known ahead) when ``show``, else a no-op.
    Where the console is no terminal (``--progress`` into a log), plain lines instead (:class:`_LogLines`)."""
    if not show:
        yield lambda n: None
        return
    from rich.console import Console
    from rich.progress import Progress

    console = console or Console(stderr=True)
    if not console.is_terminal:
        lines = _LogLines(label, total, unit, lambda text: console.file.write(text + "\n") or console.file.flush(),
                          LOG_INTERVAL)
        yield lines.advance
        lines.line()
        return
    with Progress(*_columns(label, unit), console=console, transient=True) as bar:
        task = bar.add_task(label, total=total)
        yield lambda n: bar.advance(task, n)
