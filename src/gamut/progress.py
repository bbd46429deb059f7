"""One progress bar for every analysis: a rich bar on stderr, or nothing."""
from __future__ import annotations

import contextlib
from typing import Callable, Iterator


@contextlib.contextmanager
def progress_bar(label: str, total: int, show: bool) -> Iterator[Callable[[int], None]]:
    """Yield ``advance(n)``: a transient rich bar on stderr counting to ``total`` when ``show``."""
    if not show:
        yield lambda n: None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    with Progress(
        TextColumn(label), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), TimeRemainingColumn(),
        console=Console(stderr=True), transient=True,
    ) as bar:
        task = bar.add_task(label, total=total)
        yield lambda n: bar.advance(task, n)
