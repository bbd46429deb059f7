"""Outputs never lose data: never onto an input, devices and FIFOs written in place, symlinks and
permissions kept, read-only files refused; the format follows the suffix; JSON lines hold numbers."""
from __future__ import annotations

import json
import os
import shutil
import stat
import threading
from pathlib import Path

import pytest

from gamut.cli import main

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
CPU = ["--device", "cpu", "--no-progress"]


@pytest.fixture()
def inputs(tmp_path):
    """Copies of the examples, and splice inputs, that a wrong output could destroy."""
    for name in ("mirnas.fa", "targets.fa", "fold_hairpins.fa"):
        shutil.copy(EXAMPLES / name, tmp_path / name)
    (tmp_path / "restrict.txt").write_text("hsa-let-7a-5p hpcat0000\n")
    (tmp_path / "base.fa").write_text(">chr1\nTTTACGTACGGGGGGCCATGCATTTTTTGGAACCTTAAA\n")
    (tmp_path / "ex.bed").write_text("chr1\t3\t10\te0\nchr1\t15\t23\te1\nchr1\t28\t36\te2\n")
    (tmp_path / "t.fa").write_text(">cdna1\nACGTACGCATGCAGAACCTT\n")
    yield tmp_path
    assert not list(tmp_path.glob(".*.tmp")), "a temporary file was left behind"


def scan_argv(d: Path, out: str, *extra: str) -> list[str]:
    return ["scan", str(d / "mirnas.fa"), str(d / "targets.fa"), "-o", out, *CPU, *extra]


@pytest.fixture(scope="module")
def expected_tsv(tmp_path_factory) -> bytes:
    out = tmp_path_factory.mktemp("expected") / "hits.tsv"
    assert main(["scan", str(EXAMPLES / "mirnas.fa"), str(EXAMPLES / "targets.fa"), "-o", str(out), *CPU]) == 0
    data = out.read_bytes()
    assert data.count(b"\n") > 10
    return data


def one_error_line(capsys) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gamut: error: "), err
    return lines[0]


COMMANDS = {  # command -> (argv with {out}, the input the output is pointed at)
    "scan": (["scan", "{d}/mirnas.fa", "{d}/targets.fa", "-o", "{out}", *CPU], "mirnas.fa"),
    "scan-restrict": (["scan", "{d}/mirnas.fa", "{d}/targets.fa", "--restrict", "{d}/restrict.txt", "-o", "{out}",
                       *CPU], "restrict.txt"),
    "miranda": (["miranda", "{d}/mirnas.fa", "{d}/targets.fa", "-out", "{out}", "--device", "cpu"], "targets.fa"),
    "fold": (["fold", "{d}/fold_hairpins.fa", "-o", "{out}", "--device", "cpu", "--no-progress"], "fold_hairpins.fa"),
    "splice": (["splice", "{d}/base.fa", "{d}/ex.bed", "{d}/t.fa", "--device", "cpu", "-o", "{out}"], "ex.bed"),
    "splice-table": (["splice", "{d}/base.fa", "{d}/ex.bed", "{d}/t.fa", "--device", "cpu", "--table", "{out}"],
                     "t.fa"),
}


@pytest.mark.parametrize("via", ["same", "symlink", "hardlink"])
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_output_onto_an_input_is_refused(inputs, capsys, command, via):
    argv, victim = COMMANDS[command]
    source = inputs / victim
    before = source.read_bytes()
    out = source
    if via == "symlink":
        out = inputs / "link.out"
        out.symlink_to(source)
    elif via == "hardlink":
        out = inputs / "hard.out"
        os.link(source, out)
    code = main([a.replace("{d}", str(inputs)).replace("{out}", str(out)) for a in argv])
    line = one_error_line(capsys)
    assert code == 1
    assert str(out) in line and str(source) in line and "input" in line
    assert source.read_bytes() == before
    if via == "symlink":
        assert out.is_symlink()


def test_fifo_receives_the_output_and_stays_a_fifo(inputs, expected_tsv):
    fifo = inputs / "pipe"
    os.mkfifo(fifo)
    received: list[bytes] = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()), daemon=True)
    reader.start()
    assert main(scan_argv(inputs, str(fifo))) == 0
    reader.join(timeout=60)
    assert not reader.is_alive()
    assert received == [expected_tsv]
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_character_device_is_written_in_place(inputs, capsys):
    if os.geteuid() == 0:  # a private null device: the real /dev/null must never be a root's target
        device = inputs / "null"
        os.mknod(device, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    else:
        device = Path("/dev/null")
    assert main(scan_argv(inputs, str(device))) == 0
    assert main(["fold", str(inputs / "fold_hairpins.fa"), "-o", str(device), "--device", "cpu"]) == 0
    assert capsys.readouterr().out == ""
    assert stat.S_ISCHR(os.lstat(device).st_mode)


def test_dash_writes_to_standard_output(inputs, capsys, expected_tsv):
    assert main(scan_argv(inputs, "-")) == 0
    assert capsys.readouterr().out.encode("latin-1") == expected_tsv


def test_symlink_output_replaces_its_target_and_stays_a_link(inputs, expected_tsv):
    target = inputs / "real.tsv"
    target.write_text("old contents\n")
    link = inputs / "link.tsv"
    link.symlink_to(target.name)  # relative, as users make them
    assert main(scan_argv(inputs, str(link))) == 0
    assert link.is_symlink() and os.readlink(link) == target.name
    assert target.read_bytes() == expected_tsv


def test_replaced_file_keeps_its_permissions(inputs, expected_tsv):
    out = inputs / "hits.tsv"
    out.write_text("old\n")
    out.chmod(0o640)
    assert main(scan_argv(inputs, str(out))) == 0
    assert stat.S_IMODE(out.stat().st_mode) == 0o640
    assert out.read_bytes() == expected_tsv


@pytest.mark.parametrize("command", ["scan", "fold"])
def test_read_only_output_is_refused_and_unchanged(inputs, capsys, command):
    out = inputs / "locked.txt"
    out.write_text("keep me\n")
    out.chmod(0o444)
    argv = scan_argv(inputs, str(out)) if command == "scan" else \
        ["fold", str(inputs / "fold_hairpins.fa"), "-o", str(out), "--device", "cpu"]
    assert main(argv) == 1
    line = one_error_line(capsys)
    assert str(out) in line and "read-only" in line
    assert out.read_text() == "keep me\n" and stat.S_IMODE(out.stat().st_mode) == 0o444


def test_format_follows_the_suffix(inputs, expected_tsv):
    pq = pytest.importorskip("pyarrow.parquet")
    parquet = inputs / "hits.parquet"
    assert main(scan_argv(inputs, str(parquet))) == 0
    table = pq.read_table(parquet)
    assert table.num_rows == expected_tsv.count(b"\n") - 1
    assert str(table.schema.field("aln_length").type) == "int64"

    text = inputs / "hits.txt"
    assert main(scan_argv(inputs, str(text))) == 0
    body = text.read_text()
    assert "Current Settings:" in body and "Scores for this hit:" in body and body.endswith("Scan Complete\n\n")

    forced = inputs / "forced.out"  # --format writes a suffix no format owns
    assert main(scan_argv(inputs, str(forced), "--format", "tsv")) == 0
    assert forced.read_bytes() == expected_tsv

    # A suffix that names another format than --format, or no format, is refused (#44).
    for name, extra in (("clash.parquet", ("--format", "tsv")), ("hits.out", ())):
        with pytest.raises(SystemExit) as done:
            main(scan_argv(inputs, str(inputs / name), *extra))
        assert done.value.code == 2 and not (inputs / name).exists()


def test_jsonl_numbers_are_json_numbers_with_the_tsv_values(inputs, expected_tsv):
    out = inputs / "hits.jsonl"
    assert main(scan_argv(inputs, str(out))) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    header, *lines = expected_tsv.decode("latin-1").splitlines()
    names = header.split("\t")
    assert len(rows) == len(lines) > 0
    for row, line in zip(rows, lines):
        assert list(row) == names
        for name in ("score", "query_start", "query_end", "ref_start", "ref_end", "aln_length"):
            assert isinstance(row[name], int) and not isinstance(row[name], bool), (name, row[name])
        for name in ("energy", "identity", "similarity"):
            assert isinstance(row[name], float), (name, row[name])
        for name in ("query_id", "reference_id", "aln_mirna", "aln_map", "aln_utr"):
            assert isinstance(row[name], str)
        tsv = dict(zip(names, line.split("\t")))
        for name in names:
            value = row[name]
            shown = f"{value:.2f}" if isinstance(value, float) else str(value)
            assert shown == tsv[name], (name, value, tsv[name])


def test_fold_format_follows_the_suffix(inputs):
    out = inputs / "folds.jsonl"
    assert main(["fold", str(inputs / "fold_hairpins.fa"), "-o", str(out), "--device", "cpu"]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert rows and all(isinstance(r["pairs"], int) and set(r["structure"]) <= set("().") for r in rows)
    tsv = inputs / "folds.tsv"
    assert main(["fold", str(inputs / "fold_hairpins.fa"), "-o", str(tsv), "--device", "cpu"]) == 0
    assert tsv.read_text().startswith("name\tlength\tpairs\t")
