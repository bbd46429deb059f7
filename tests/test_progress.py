"""Progress bars read as written: a label with brackets shows, counts carry units and SI prefixes."""
from __future__ import annotations

import io
import re
import time

import pytest

from gamut.progress import human_count, human_rate, progress_bar


def _render(label: str, total: int | None, steps: list[int], unit: str = "", width: int = 160) -> str:
    from rich.console import Console

    sink = io.StringIO()
    console = Console(file=sink, force_terminal=True, width=width, color_system=None)
    with progress_bar(label, total, True, unit=unit, console=console) as advance:
        for n in steps:
            advance(n)
            time.sleep(0.05)  # two samples apart in time give a rate
    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", sink.getvalue())  # cursor moves of the live display


def test_label_brackets_survive_rich_markup_and_totals_are_readable():
    text = _render("scan [cpu]", 41_414_000_000, [1_000_000_000, 11_300_000_000], unit="cells")
    assert "scan [cpu]" in text
    assert "12.3/41.4 G cells" in text
    assert "41414000000" not in text
    assert re.search(r"\d+\.\d (G|M|T) cells/s", text), text


def test_an_80_column_terminal_keeps_each_count_on_one_line():
    text = _render("fold [blocked] 10,000 nt", 169_100_000_000, [1_000_000_000, 111_600_000_000], "ops", width=80)
    assert "112.6/169.1 G ops" in text
    assert re.search(r"\d+\.\d [GT] ops/s", text), text


def test_small_counts_stay_whole_numbers():
    text = _render("folding [records]", 9, [3, 4], unit="records")
    assert "folding [records]" in text
    assert "7/9 records" in text


def test_an_unknown_total_counts_what_is_done():
    """A stream of unknown length (reads mode reads its file as it goes): the count, no total."""
    text = _render("reads to exon chains", None, [8192, 8192], unit="reads")
    assert "16.4 k reads " in text and "/16" not in text


def test_markup_like_labels_are_not_interpreted():
    text = _render("[bold]x[/bold] [red]", 10, [10])
    assert "[bold]x[/bold] [red]" in text


@pytest.mark.parametrize("done, total, unit, expected", [
    (12_345_678_901, 41_414_000_000, "cells", "12.3/41.4 G cells"),
    (500, 2_000_000, "pairs", "0.0/2.0 M pairs"),
    (3, 9, "", "3/9"),
    (1500, 1500, "", "1.5/1.5 k"),
    (999, 999, "cases", "999/999 cases"),
])
def test_human_count(done, total, unit, expected):
    assert human_count(done, total, unit) == expected


def test_human_rate():
    assert human_rate(3.1e9, "cells") == "3.1 G cells/s"
    assert human_rate(2.5, "records") == "2.5 records/s"
    assert human_rate(None, "cells") == "? cells/s"
    assert human_rate(4.0) == "4.0/s"


def test_hidden_bar_writes_nothing(capsys):
    with progress_bar("scan [cpu]", 10, False) as advance:
        advance(10)
    assert capsys.readouterr().err == ""


def test_fold_fill_in_bands_gives_the_same_triangle_and_counts_all_work():
    """The banded fill behind the fold bar computes what the one-call fill does."""
    import numpy as np

    from gamut.folding.sequence import encode
    from gamut.folding.tiled import diagonal_work, fill_tiled

    rng = np.random.default_rng(7)
    codes = encode("".join(rng.choice(list("ACGU"), 1500)))
    steps: list[int] = []
    banded = fill_tiled(codes, 1, 16, advance=steps.append)
    assert np.array_equal(banded, fill_tiled(codes, 1, 16))
    assert sum(steps) == int(diagonal_work(1500, 16).sum())
    assert len(steps) > 1 and all(s > 0 for s in steps)


def test_fold_with_progress_gives_the_same_result(capsys):
    import numpy as np

    import gamut

    rng = np.random.default_rng(3)
    sequence = "".join(rng.choice(list("ACGU"), 900))
    shown = gamut.fold(sequence, device="cpu", progress=True)
    plain = gamut.fold(sequence, device="cpu", progress=False)
    assert (shown.pairs, shown.structure) == (plain.pairs, plain.structure)
    assert capsys.readouterr().out == ""  # a bar never writes to stdout


def test_progress_into_a_log_writes_plain_lines_not_a_blank_line(monkeypatch):
    """``--progress`` with stderr a file or a pipe (issue 44): readable lines, no control characters,
    never a lone blank line."""
    from rich.console import Console

    import gamut.progress as progress

    monkeypatch.setattr(progress, "LOG_INTERVAL", 0.0)
    sink = io.StringIO()
    console = Console(file=sink, force_terminal=False, width=80)
    with progress_bar("scan [cpu]", 2_000_000_000, True, unit="cells", console=console) as advance:
        advance(500_000_000)
        advance(1_500_000_000)
    lines = sink.getvalue().splitlines()
    assert lines and all(line.startswith("scan [cpu]: ") for line in lines), lines
    assert lines[-1].startswith("scan [cpu]: 2.0/2.0 G cells, ") and "\x1b" not in sink.getvalue()


def test_fold_progress_into_a_file_is_no_blank_line(tmp_path):
    import os
    import subprocess
    import sys

    err = tmp_path / "err.txt"
    with open(err, "w") as handle:
        done = subprocess.run([sys.executable, "-m", "gamut", "fold", "GGGGAAAACCCCAUAUAUGGGGAAAACCCC", "--device", "cpu",
                               "--progress"], stdout=subprocess.PIPE, stderr=handle, text=True,
                              env={**os.environ, "GAMUT_SERVER": "off"})
    assert done.returncode == 0 and "((((" in done.stdout
    lines = err.read_text().split("\n")
    assert lines[-1] == "" and lines[:-1], lines  # whole lines, at least one
    assert all(re.fullmatch(r"[^:]+: [\d.]+/[\d.]+ .*, .*/s, \d+:\d\d:\d\d", line) for line in lines[:-1]), lines
