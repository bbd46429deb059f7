"""Several outputs of one scan (#26): ``gamut scan -o hits.tsv -o hits.bed -o hits.txt``.

Every output is byte for byte the output of a single-output run of its format, in one process,
in a run directory (also resumed after a SIGKILL) and on a Dask cluster; the rules of --format;
the one-line errors; and the outputs appear together: a failure before the last one is complete
leaves every old output as it was, and no temporary file behind.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from gamut.cli import main
from gamut.errors import UsageError
from gamut.scanning.api import scan_files
from gamut.scanning.cli import output_formats
from gamut.scanning.params import ScanParams
from gamut.scanning.pipeline.rundir import computed_by_run
from gamut.scanning.sinks import FORMAT_BY_SUFFIX, sink_class

ROOT = Path(__file__).resolve().parent.parent
QUERY, REFERENCE = ROOT / "examples" / "mirnas.fa", ROOT / "examples" / "targets.fa"
CLIP = Path(__file__).parent / "data" / "miranda" / "clip_quiet"
HOOKS = Path(__file__).parent / "scan_kill_hooks.py"
PY = sys.executable
HAVE_PYARROW = True
try:
    import pyarrow  # noqa: F401
except ImportError:
    HAVE_PYARROW = False
#: One output per format, and per suffix that names one (miRanda's text under both of its suffixes).
SUFFIXES = [s[1:] for s, fmt in FORMAT_BY_SUFFIX.items() if HAVE_PYARROW or fmt != "parquet"]


def _env() -> dict[str, str]:
    path = os.pathsep.join(p for p in (str(ROOT / "src"), os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "PYTHONPATH": path}


def _scan(*argv: str, query: Path = QUERY, reference: Path = REFERENCE) -> int:
    return main(["scan", str(query), str(reference), "--device", "cpu", *argv])


def _outs(folder: Path, stem: str, suffixes=SUFFIXES) -> list[Path]:
    return [folder / f"{stem}.{suffix}" for suffix in suffixes]


def _no_temporaries(folder: Path) -> None:
    assert not [p.name for p in folder.rglob(".*.tmp")]


@pytest.fixture(scope="module")
def singles(tmp_path_factory) -> dict[str, bytes]:
    """Each format's output from a run of that output alone."""
    folder = tmp_path_factory.mktemp("single")
    out = {}
    for path in _outs(folder, "single"):
        assert _scan("-o", str(path)) == 0
        out[path.suffix[1:]] = path.read_bytes()
    return out


@pytest.mark.parametrize("where", ["process", "run-dir"])
def test_every_output_equals_its_single_run(where, tmp_path, singles):
    outs = _outs(tmp_path, "hits")
    extra = ["--run-dir", str(tmp_path / "run"), "--partition-pairs", "7"] if where == "run-dir" else []
    assert _scan(*(a for p in outs for a in ("-o", str(p))), *extra) == 0
    for path in outs:
        assert path.read_bytes() == singles[path.suffix[1:]], path.name
    _no_temporaries(tmp_path)


def test_two_outputs_of_one_format_and_standard_output(tmp_path, singles, capsys):
    a, b = tmp_path / "a.tsv", tmp_path / "b.tsv"
    assert _scan("-o", str(a), "-o", "-", "-o", str(b), "--format", "miranda") == 0
    assert a.read_bytes() == b.read_bytes() == singles["tsv"]
    assert capsys.readouterr().out.encode("latin-1") == singles["txt"]  # the --format of the unnamed output


def test_api_outputs(tmp_path, singles):
    outs = [tmp_path / "h.tsv", (tmp_path / "h.out", "bed"), tmp_path / "h.unknown"]
    assert scan_files(str(QUERY), str(REFERENCE), ScanParams(), outputs=outs, device="cpu", fmt="tsv") == 0
    assert (tmp_path / "h.tsv").read_bytes() == singles["tsv"]
    assert (tmp_path / "h.out").read_bytes() == singles["bed"]
    assert (tmp_path / "h.unknown").read_bytes() == singles["tsv"]  # no suffix format: fmt
    with pytest.raises(UsageError, match="output or outputs, not both"):
        scan_files(str(QUERY), str(REFERENCE), ScanParams(), output=str(tmp_path / "x.tsv"), outputs=outs)


# --- the rule of --format ------------------------------------------------------------------------

def test_format_rules():
    assert output_formats(None, None) == [("-", "tsv")]
    assert output_formats(["a.bed", "a.txt", "b"], None) == [("a.bed", "bed"), ("a.txt", "miranda"), ("b", "tsv")]
    assert output_formats(["a.out"], ["jsonl"]) == [("a.out", "jsonl")]  # --format writes any other suffix
    assert output_formats(["a.bed", "b.out"], ["bed", "jsonl"]) == [("a.bed", "bed"), ("b.out", "jsonl")]
    # The suffix under a compression suffix names the format (#44).
    assert output_formats(["a.tsv.gz", "b.BED.bgz", "c.gz", "d.txt.zst"], None) == [
        ("a.tsv.gz", "tsv"), ("b.BED.bgz", "bed"), ("c.gz", "tsv"), ("d.txt.zst", "miranda")]
    # A suffix naming another format than --format, or none at all, is refused (#44).
    with pytest.raises(UsageError, match="a.tsv: the suffix .tsv names the tsv format, not --format jsonl"):
        output_formats(["a.tsv"], ["jsonl"])
    with pytest.raises(UsageError, match="a.tsv.gz: the suffix .tsv names the tsv format, not --format bed"):
        output_formats(["a.tsv.gz", "b.out"], ["bed", "jsonl"])
    with pytest.raises(UsageError, match="no output format has the suffix .out"):
        output_formats(["a.tsv", "b.out"], None)
    # Once, with several outputs: those whose suffix names no format (standard output too).
    assert output_formats(["a.tsv", "-", "b.out"], ["miranda"]) == [("a.tsv", "tsv"), ("-", "miranda"),
                                                                   ("b.out", "miranda")]
    with pytest.raises(UsageError, match="--format given 3 times for 2 outputs"):
        output_formats(["a.tsv", "b.bed"], ["tsv", "bed", "jsonl"])
    with pytest.raises(UsageError, match="--format given 2 times for 3 outputs"):
        output_formats(["a", "b", "c"], ["tsv", "bed"])
    with pytest.raises(UsageError, match="--format given 2 times for 1 outputs"):
        output_formats(None, ["tsv", "bed"])
    with pytest.raises(UsageError, match="applies to no output"):
        output_formats(["a.tsv", "b.bed"], ["jsonl"])


ERRORS = [
    (["-o", "{d}/a.tsv", "-o", "{d}/a.tsv"], "two outputs to the same file: {d}/a.tsv"),
    (["-o", "{d}/a.tsv", "-o", "{d}/./a.tsv"], "two outputs to the same file"),
    (["-o", "{d}/a.tsv", "-o", "{d}/link.tsv"], "two outputs to the same file: {d}/link.tsv"),
    (["-o", "-", "-o", "{d}/a.tsv", "-o", "-"], "two outputs to standard output"),
    (["-o", "{d}/a.tsv", "-o", "-", "--format", "tsv", "--format", "parquet"], "--format parquet needs an output file"),
    (["-o", "{d}/a.tsv", "--format", "tsv", "--format", "bed"], "--format given 2 times for 1 outputs"),
    (["-o", "{d}/a.tsv", "-o", "{d}/a.bed", "--format", "jsonl"], "--format jsonl applies to no output"),
    # Outputs that cannot be written are refused as a single output's are (exit status 1).
    (["-o", "{d}/a.tsv", "-o", "{d}/q.fa"], "it is the input file"),
    (["-o", "{d}/a.tsv", "-o", "{d}/no/such/dir/b.bed"], "does not exist"),
    (["-o", "{d}/a.tsv", "--annotation", "{d}/missing.gtf"], "--annotation {d}/missing.gtf: no such file"),
    (["-o", "{d}/a.tsv", "--annotation", "{d}"], "is a directory"),
]


@pytest.mark.parametrize("argv, message", ERRORS, ids=[e[1].split(":")[0][:40] for e in ERRORS])
def test_one_line_errors_before_any_output(argv, message, tmp_path, capsys):
    (tmp_path / "q.fa").write_bytes(QUERY.read_bytes())
    (tmp_path / "link.tsv").symlink_to(tmp_path / "a.tsv")
    before = sorted(p.name for p in tmp_path.iterdir())
    try:
        code = _scan(*(a.format(d=tmp_path) for a in argv), query=tmp_path / "q.fa")
    except SystemExit as exc:
        code = exc.code
    assert code == (1 if message in ("it is the input file", "does not exist") else 2)
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message.format(d=tmp_path) in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing written


# --- atomic together -----------------------------------------------------------------------------

@pytest.mark.parametrize("where", ["process", "run-dir"])
@pytest.mark.parametrize("failing", ["write", "close"])
def test_a_failure_leaves_every_old_output(where, failing, tmp_path, monkeypatch, capsys):
    """The BED sink (the last output) fails after the others wrote all (close) or some (write) of
    their data: every old output is unchanged, no temporary file is left."""
    outs = _outs(tmp_path, "old")
    for path in outs:
        path.write_bytes(b"old " + path.name.encode())
    outs.append(outs.pop(outs.index(tmp_path / "old.bed")))
    method = "write_part" if failing == "write" and where == "run-dir" else failing

    def fail(self, *args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(sink_class(FORMAT_BY_SUFFIX[".bed"]), method, fail)
    extra = ["--run-dir", str(tmp_path / "run"), "--partition-pairs", "7"] if where == "run-dir" else []
    assert _scan(*(a for p in outs for a in ("-o", str(p))), *extra) == 1
    assert "No space left on device" in capsys.readouterr().err
    for path in outs:
        assert path.read_bytes() == b"old " + path.name.encode()
    _no_temporaries(tmp_path)


def test_a_signal_during_the_renames_waits_for_all_of_them(tmp_path):
    """SIGINT at the first rename: the process ends (130) once every output is replaced."""
    script = textwrap.dedent(f"""
        import os, signal
        from gamut.io import atomic
        from gamut.io.interrupt import end_promptly_on_signals
        replace = atomic.replace_file
        def replacing(src, dst):
            os.kill(os.getpid(), signal.SIGINT)
            replace(src, dst)
        atomic.replace_file = replacing
        with end_promptly_on_signals():
            with atomic.atomic_outputs([("{tmp_path}/a.txt", "w"), ("{tmp_path}/b.txt", "w")]) as (a, b):
                a.write("new a")
                b.write("new b")
            print("not reached")
    """)
    for name in ("a.txt", "b.txt"):
        (tmp_path / name).write_text("old")
    done = subprocess.run([PY, "-c", script], env=_env(), capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 130 and "interrupted" in done.stderr and "not reached" not in done.stdout
    assert (tmp_path / "a.txt").read_text() == "new a" and (tmp_path / "b.txt").read_text() == "new b"
    _no_temporaries(tmp_path)


# --- run directories and clusters ----------------------------------------------------------------

CLIP_OUTS = ["txt", "tsv", "bed"]


@pytest.fixture(scope="module")
def clip_singles(tmp_path_factory) -> dict[str, bytes]:
    folder = tmp_path_factory.mktemp("clip")
    out = {}
    for suffix in CLIP_OUTS:
        path = folder / f"single.{suffix}"
        assert _scan("--quiet", "-o", str(path), query=CLIP / "query.fa", reference=CLIP / "reference.fa") == 0
        out[suffix] = path.read_bytes()
    return out


def test_killed_run_with_three_outputs_resumes(tmp_path, clip_singles):
    """SIGKILL after 3 of 8 partitions: no output appears; the same command resumes, computes
    only the rest, and writes the three outputs of a single-output run."""
    outs = _outs(tmp_path, "hits", CLIP_OUTS)
    run_dir = tmp_path / "run"
    argv = ["scan", str(CLIP / "query.fa"), str(CLIP / "reference.fa"), "--quiet", "--device", "cpu",
            *(a for p in outs for a in ("-o", str(p))), "--run-dir", str(run_dir), "--partition-pairs", "4000"]
    first = subprocess.run([PY, str(HOOKS), "--die-after-partitions", "3", *argv], env=_env(), capture_output=True, check=False,
                           timeout=240)
    assert first.returncode == -signal.SIGKILL, first.stderr.decode()
    assert not any(p.exists() for p in outs)
    killed = sorted(tmp_path.glob(".*.tmp"))  # a SIGKILL leaves its temporary files; the rerun removes them
    assert [p.name.split(".gamut-")[0] for p in killed] == [f".{p.name}" for p in sorted(outs)]
    second = subprocess.run([PY, "-m", "gamut", *argv], env=_env(), capture_output=True, timeout=240, check=False)
    assert second.returncode == 0, second.stderr.decode()
    for path in outs:
        assert path.read_bytes() == clip_singles[path.suffix[1:]], path.name
    computed = computed_by_run(run_dir)
    assert computed[1] == [0, 1, 2] and sorted(computed[2]) == list(range(3, 8))
    assert not list(tmp_path.rglob(".*.tmp"))


def test_run_dir_keeps_its_formats(tmp_path, singles, capsys):
    """A run directory holds each partition for the formats it began with: the same formats under
    other names and in another order reuse every part; other formats are refused in one line."""
    run_dir = tmp_path / "run"
    first = [tmp_path / "a.tsv", tmp_path / "a.bed"]
    assert _scan(*(a for p in first for a in ("-o", str(p))), "--run-dir", str(run_dir), "--partition-pairs", "7") == 0
    again = [tmp_path / "b.bed", tmp_path / "b.tsv"]
    assert _scan(*(a for p in again for a in ("-o", str(p))), "--run-dir", str(run_dir)) == 0
    assert (tmp_path / "b.bed").read_bytes() == singles["bed"] and (tmp_path / "b.tsv").read_bytes() == singles["tsv"]
    assert sorted(computed_by_run(run_dir)) == [1]  # the second run computed nothing
    capsys.readouterr()
    for outs in (["c.tsv"], ["c.tsv", "c.bed", "c.txt"], ["c.tsv", "c.jsonl"]):
        assert _scan(*(a for name in outs for a in ("-o", str(tmp_path / name))), "--run-dir", str(run_dir)) == 1
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "was started with outputs of format tsv, bed" in err, err
        assert not any((tmp_path / name).exists() for name in outs)


def test_dask_local_cluster_with_two_outputs(tmp_path, singles):
    pytest.importorskip("distributed")
    outs = [tmp_path / "d.txt", tmp_path / "d.bed"]
    assert scan_files(str(QUERY), str(REFERENCE), ScanParams(), outputs=outs, device="cpu", cluster="local:2",
                      threads=1, partition_pairs=9, banner=_banner()) == 0
    assert outs[0].read_bytes() == singles["txt"] and outs[1].read_bytes() == singles["bed"]


def _banner() -> str:
    from gamut.scanning.miranda_cli import banner

    return banner()


def test_render_all_hands_every_chunk_to_every_sink_and_reports_a_failure():
    from gamut.scanning.pipeline.partitions import render_all

    class Collect:
        def render(self, chunks, prev_query):
            return [prev_query, *chunks]

    class Fail:
        def render(self, chunks, prev_query):
            next(iter(chunks))
            raise ValueError("broken sink")

    assert render_all([Collect(), Collect(), Collect()], iter(range(5)), 7) == ([7, 0, 1, 2, 3, 4],) * 3
    with pytest.raises(ValueError, match="broken sink"):
        render_all([Collect(), Fail(), Collect()], iter(range(5)), 7)
    with pytest.raises(ValueError, match="broken sink"):
        render_all([Fail(), Collect()], iter(range(5)), 7)
