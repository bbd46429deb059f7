"""Every option of ``gamut fold`` and ``gamut splice`` is checked before any input is read: a bad
value, or options that cannot go together, give one line ``gamut: error: ...`` on standard error,
exit status 2 (as argparse's own errors), nothing on standard output and no file written."""
from __future__ import annotations

from pathlib import Path

import pytest

from gamut.cli import main

BASE = "TTTACGTACGGGGGGCCATGCATTTTTTGGAACCTTAAA"
EXONS = [(3, 10), (15, 23), (28, 36), (5, 18), (30, 33)]
TARGET = "ACGTACGCATGCAGAACCTT"

FOLD = ("fold", "GGGAAACCC", "-o", "out.txt")
SPLICE = ("splice", "base.fa", "ex.bed", "t.fa", "-o", "report.txt")

CASES = [
    # gamut fold
    (FOLD + ("--threads", "abc"), "--threads: expected a whole number of at least 1, got 'abc'"),
    (FOLD + ("--threads", "0"), "--threads: expected a whole number of at least 1, got"),
    (FOLD + ("--threads", "-3"), "--threads: expected a whole number of at least 1, got"),
    (FOLD + ("--min-loop", "-1"), "--min-loop must be >= 0, got -1"),
    (FOLD + ("--min-loop", "two"), "argument --min-loop: expected a whole number, got 'two'"),
    (FOLD + ("--corner", "-2"), "--corner must be >= 0, got -2"),
    (FOLD + ("--corner", "1.5"), "argument --corner: expected a whole number, got '1.5'"),
    (("fold", "GGGAAACCC", "-o", "out", "--corner", "2", "--format", "tsv"),
     "--corner is shown in the dot-bracket and jsonl formats, not tsv"),
    (("fold", "GGGAAACCC", "-o", "out.tsv", "--corner", "2"), "--corner is shown in the dot-bracket and jsonl"),
    (FOLD + ("--plot", "x.gif"), "plot file 'x.gif' must end in"),
    (FOLD + ("--plot", "x.png", "--no-structure"), "--plot needs the structure"),
    (FOLD + ("--engine", "cpu1", "--device", "cuda"), "engine 'cpu1' runs on the CPU"),
    (FOLD + ("--engine", "gpu", "--device", "cpu"), "engine 'gpu' cannot run with device 'cpu'"),
    (FOLD + ("--engine", "fast"), "argument --engine: invalid choice: 'fast'"),
    (FOLD + ("--device", "tpu"), "argument --device: invalid choice: 'tpu'"),
    (FOLD + ("--format", "xml"), "argument --format: invalid choice: 'xml'"),
    (FOLD + ("--no-such-option",), "unrecognized arguments: --no-such-option"),
    # gamut splice
    (SPLICE + ("--threads", "abc"), "--threads: expected a whole number of at least 1, got 'abc'"),
    (SPLICE + ("--threads", "0"), "--threads: expected a whole number of at least 1, got"),
    (SPLICE + ("--gap", "1"), "--gap must be negative, got 1"),
    (SPLICE + ("--gap", "0"), "--gap must be negative, got 0"),
    (SPLICE + ("--gap", "x"), "argument --gap: expected a whole number, got 'x'"),
    (SPLICE + ("--match", "20000"), "scores must lie within -10000..10000"),
    (SPLICE + ("--mismatch", "-1.5"), "argument --mismatch: expected a whole number, got '-1.5'"),
    (SPLICE + ("--feature-type", ","), "--feature-type names no feature type, got ','"),
    (SPLICE + ("--feature-type", ""), "--feature-type names no feature type"),
    (SPLICE + ("--cluster", "local:0"), "--cluster expects local:N with N >= 1"),
    (SPLICE + ("--cluster", "local:x"), "--cluster expects local:N with N >= 1"),
    (SPLICE + ("--cluster", "nowhere"), "--cluster expects local:N or a scheduler address"),
    (SPLICE + ("--engine", "magic"), "argument --engine: invalid choice: 'magic'"),
    (SPLICE + ("--exon-format", "xls"), "argument --exon-format: invalid choice: 'xls'"),
    (SPLICE + ("--device", "tpu"), "argument --device: invalid choice: 'tpu'"),
]


def _inputs(d: Path) -> set[str]:
    (d / "base.fa").write_text(f">chr1\n{BASE}\n")
    (d / "ex.bed").write_text("".join(f"chr1\t{s}\t{e}\te{i}\n" for i, (s, e) in enumerate(EXONS)))
    (d / "t.fa").write_text(f">cdna1\n{TARGET}\n")
    return {p.name for p in d.iterdir()}


@pytest.mark.parametrize("argv,message", CASES, ids=[" ".join(argv[:1] + argv[4:]) for argv, _ in CASES])
def test_bad_option_is_one_line_exit_2_and_writes_nothing(argv, message, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    before = _inputs(tmp_path)
    with pytest.raises(SystemExit) as done:
        main(list(argv))
    assert done.value.code == 2
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("gamut: error: gamut"), captured.err
    assert message in lines[0]
    assert captured.out == ""
    assert {p.name for p in tmp_path.iterdir()} == before


@pytest.mark.parametrize("argv", [FOLD + ("--threads", "2", "--min-loop", "0", "--corner", "1"),
                                  SPLICE + ("--threads", "1", "--feature-type", "exon", "--gap", "-1")])
def test_good_options_still_run(argv, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _inputs(tmp_path)
    assert main(list(argv)) == 0
    assert (tmp_path / argv[argv.index("-o") + 1]).stat().st_size > 0
