"""Site accessibility in a scan (``--accessibility``, gamut.scanning.site_access): every hit's
dG_open is the opening energy ViennaRNA gives its flanked site (gamut.accessibility, the CPU
reference), ddG = energy + dG_open, the ddG threshold only removes hits, and nothing else of the
scan changes."""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import gamut
from gamut.access.model import SiteAccess
from gamut.cli import main
from gamut.errors import UsageError
from gamut.scanning.fasta import read_miranda_fasta

pytest.importorskip("RNA")

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
QUERIES, TARGETS = EXAMPLES / "mirnas.fa", EXAMPLES / "targets.fa"


@pytest.fixture(scope="module")
def plain():
    return gamut.scan(str(QUERIES), str(TARGETS), device="cpu")


@pytest.fixture(scope="module")
def accessible():
    return gamut.scan(str(QUERIES), str(TARGETS), device="cpu", accessibility=True)


def reference_dg_open(row, sequences: dict, access: SiteAccess) -> float:
    """The flanked site's opening energy from gamut.accessibility (ViennaRNA), independently."""
    seq = sequences[row.reference_id]
    first, last = max(1, row.ref_start - access.upstream), min(len(seq), row.ref_end + access.downstream)
    u = last - first + 1
    if u > access.window:
        return math.nan
    result = gamut.accessibility(seq, window=access.window, span=access.span, max_unpaired=u, device="cpu")
    return result.site_opening_energy(row.ref_start, row.ref_end, access.upstream, access.downstream)


def test_hits_unchanged_and_dg_open_is_vienna_s(plain, accessible):
    assert len(accessible) > 10
    assert accessible.drop(columns=["dG_open", "ddG"]).equals(plain)
    sequences = {r.id: r.sequence.decode() for r in read_miranda_fasta(TARGETS)}
    access = SiteAccess()
    for row in accessible.itertuples():
        expected = reference_dg_open(row, sequences, access)
        assert row.dG_open == pytest.approx(round(expected, 2), abs=1e-9)
        # ddG of the unrounded values, rounded: within a rounding step of the rounded sum.
        assert abs(row.ddG - (row.energy + row.dG_open)) <= 0.0101


def test_ddg_threshold_only_removes_hits(accessible):
    threshold = float(np.median(accessible["ddG"]))
    kept = gamut.scan(str(QUERIES), str(TARGETS), device="cpu",
                      accessibility=SiteAccess(ddg_threshold=threshold))
    expected = accessible[accessible["ddG"] <= threshold + 0.005].reset_index(drop=True)
    assert 0 < len(kept) < len(accessible)
    assert kept[["query_id", "reference_id", "ref_start", "ref_end"]].equals(
        expected[["query_id", "reference_id", "ref_start", "ref_end"]])


def test_stretch_longer_than_the_window_has_no_dg_open():
    got = gamut.scan(str(QUERIES), str(TARGETS), device="cpu", accessibility=SiteAccess(window=20, span=20))
    spans = got["ref_end"] - got["ref_start"] + 1 + 3 + 15
    assert got.loc[spans > 20, "dG_open"].isna().all() and got.loc[spans > 20, "ddG"].isna().all()


def test_cli_tables_carry_the_columns(tmp_path, accessible):
    tsv, jsonl, parquet, text = (tmp_path / f"hits.{ext}" for ext in ("tsv", "jsonl", "parquet", "txt"))
    base = ["scan", str(QUERIES), str(TARGETS), "--device", "cpu", "--accessibility"]
    assert main([*base, "-o", str(tsv), "-o", str(jsonl), "-o", str(parquet)]) == 0
    header, first = tsv.read_text().splitlines()[:2]
    assert header.split("\t")[18:20] == ["dG_open", "ddG"]
    assert first.split("\t")[18] == f"{accessible['dG_open'][0]:.2f}"
    row = json.loads(jsonl.read_text().splitlines()[0])
    assert row["dG_open"] == round(float(accessible["dG_open"][0]), 2)
    import pyarrow.parquet as pq

    table = pq.read_table(parquet).to_pandas()
    assert np.allclose(table["ddG"], accessible["ddG"], equal_nan=True)
    # miRanda's text has no such columns: the same bytes with or without --accessibility.
    plain_text = tmp_path / "plain.txt"
    assert main(["scan", str(QUERIES), str(TARGETS), "--device", "cpu", "-o", str(plain_text)]) == 0
    assert main([*base, "-o", str(text)]) == 0
    assert text.read_bytes() == plain_text.read_bytes()


@pytest.mark.parametrize("extra, message", [
    (["--access-window", "60"], "--access-window needs --accessibility"),
    (["--accessibility", "--ddg-threshold", "-5", "--noenergy"], "--ddg-threshold needs energies"),
    (["--accessibility", "--access-flanks", "3"], "--access-flanks expects two whole numbers"),
    (["--accessibility", "--run-dir", "RUN"], "--accessibility runs in one process"),
    (["--accessibility", "--access-window", "0"], "window must be a whole number >= 1"),
])
def test_bad_access_options_are_one_line_errors(tmp_path, capsys, extra, message):
    extra = [str(tmp_path / "run") if e == "RUN" else e for e in extra]
    out = tmp_path / "hits.tsv"
    try:
        code = main(["scan", str(QUERIES), str(TARGETS), "--device", "cpu", "-o", str(out), *extra])
    except SystemExit as exc:  # option errors end the parser with status 2
        code = exc.code
    assert code != 0
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
    assert not out.exists()


def test_site_access_checks_its_values():
    with pytest.raises(UsageError, match="flank"):
        SiteAccess(upstream=-1)
    with pytest.raises(UsageError, match="finite"):
        SiteAccess(ddg_threshold=float("nan"))


def test_run_directories_of_scans_without_accessibility_keep_their_options():
    """Run directories made before --accessibility existed store no site_access: a scan without it
    records the same options, so they still resume; one with it records its settings."""
    from gamut.scanning.params import ScanParams
    from gamut.scanning.pipeline.rundir import scan_options

    assert "site_access" not in scan_options(ScanParams(), "miranda", False, False)["params"]
    with_access = scan_options(ScanParams(site_access=SiteAccess(window=60)), "tsv", False, False)["params"]
    assert with_access["site_access"]["window"] == 60


def test_sites_are_folded_where_the_scan_aligns(monkeypatch):
    from types import SimpleNamespace

    from gamut.cuda import device
    from gamut.scanning.site_access import folding_device

    assert folding_device(SimpleNamespace(name="simd")) == ("cpu", 0)
    verified = device.VERIFIED_GPU_ENGINES
    monkeypatch.setattr(device, "VERIFIED_GPU_ENGINES", verified | {"access"})
    assert folding_device(SimpleNamespace(name="cuda", gpu_ids=[2, 3])) == ("cuda", 2)
    monkeypatch.setattr(device, "VERIFIED_GPU_ENGINES", verified - {"access"})
    assert folding_device(SimpleNamespace(name="cuda", gpu_ids=[2, 3])) == ("cpu", 0)


@pytest.mark.gpu
def test_a_gpu_scan_folds_its_sites_on_the_gpu_with_the_same_columns(accessible, monkeypatch):
    from gamut.cuda import device

    monkeypatch.setattr(device, "VERIFIED_GPU_ENGINES", device.VERIFIED_GPU_ENGINES | {"access"})
    on_gpu = gamut.scan(str(QUERIES), str(TARGETS), device="cuda", accessibility=True)
    assert on_gpu.equals(accessible)


def test_the_scan_aligns_once_and_gives_the_same_table_however_much_it_holds(accessible, monkeypatch):
    """A scan with accessibility holds its chunks' results while they fit a budget and writes them
    once the sites are folded (pipeline.access_scan); chunks past the budget are scanned again from
    their recorded alignments (pipeline.replay), or aligned again when those do not fit either. The
    table is the same in all three cases."""
    from gamut.scanning.pipeline import access_scan, replay

    made = []
    real = replay.RecordingEngine.replay

    def spy(self):
        made.append(real(self))
        return made[-1]

    monkeypatch.setattr(replay.RecordingEngine, "replay", spy)
    held = gamut.scan(str(QUERIES), str(TARGETS), device="cpu", accessibility=True)
    assert held.equals(accessible)
    assert made == []  # every result held: no second pass
    monkeypatch.setattr(access_scan, "result_bytes", lambda result: 1 << 62)  # none held
    replayed = gamut.scan(str(QUERIES), str(TARGETS), device="cpu", accessibility=True)
    assert replayed.equals(accessible)
    assert made[-1].replayed >= 1 and made[-1].aligned == 0 and not made[-1].kept
    monkeypatch.setattr(access_scan, "replay_budget", lambda: 0)  # nor their alignments
    realigned = gamut.scan(str(QUERIES), str(TARGETS), device="cpu", accessibility=True)
    assert realigned.equals(accessible)
    assert made[-1].replayed == 0 and made[-1].aligned >= 1


def test_a_scan_past_its_budget_holds_the_first_chunks_and_scans_the_rest_again(monkeypatch):
    """Some chunks held, the later ones scanned again: the same rows as a scan that holds all."""
    from gamut.scanning.pipeline import access_scan
    from gamut.scanning.pipeline.scan_loop import scan_chunks

    calls = []

    def small_chunks(*args, **kwargs):
        calls.append(kwargs.get("chunks") is not None)
        kwargs.setdefault("chunk_pairs", 3)
        return scan_chunks(*args, **kwargs)

    monkeypatch.setattr(access_scan, "scan_chunks", small_chunks)
    sizes = []
    real_bytes = access_scan.result_bytes

    def sized(result):
        sizes.append(real_bytes(result))
        return sizes[-1]

    monkeypatch.setattr(access_scan, "result_bytes", sized)
    whole = gamut.scan(str(QUERIES), str(TARGETS), device="cpu", accessibility=True)
    assert len(sizes) >= 4 and calls == [False]
    monkeypatch.setattr(access_scan, "replay_budget", lambda: 2 * sum(sizes[:len(sizes) // 2]))  # half held
    calls.clear()
    split = gamut.scan(str(QUERIES), str(TARGETS), device="cpu", accessibility=True)
    assert calls == [False, True]  # a first pass, then the chunks not held
    assert split.equals(whole)


def test_kept_alignments_restore_exactly():
    import numpy as np

    from gamut.scanning.alignments import ChunkAlignments
    from gamut.scanning.pipeline.replay import KeptAlignments, ReplayEngine, chunk_key

    ops = np.arange(7, dtype=np.uint8)
    original = ChunkAlignments(np.array([0, 2, 2, 3]), np.array([2, 2, 3, 3]), *(np.arange(3) + k for k in range(5)),
                               np.array([0, 3, 5]), np.array([3, 5, 7]), ops)
    kept = KeptAlignments.of(original)
    assert kept.pairs_with.tolist() == [0, 2]
    restored = kept.restore()
    for name in ("score", "i_end", "j_end", "i_start", "j_start", "op_start", "op_end", "ops"):
        assert np.array_equal(getattr(restored, name), getattr(original, name)), name
    assert restored.n_pairs == original.n_pairs == 4
    (start, stop), (want_start, want_stop) = restored.dense_ranges(), original.dense_ranges()
    assert (stop - start).tolist() == (want_stop - want_start).tolist() == [2, 0, 1, 0]
    for got, want in zip(restored.survivor_ranges(), original.survivor_ranges(), strict=True):
        assert got.tolist() == want.tolist()
    pairs = np.array([[0, 5], [0, 6], [1, 0], [1, 1]])
    assert chunk_key(pairs) == (0, 5, 4) and chunk_key(np.zeros((0, 2))) == (-1, -1, 0)


@given(st.lists(st.integers(min_value=0, max_value=2**62), max_size=300))
def test_distinct_keys_are_numpys_unique(values):
    from gamut.scanning.site_access import distinct_keys

    keys = np.array(values, np.int64)
    assert np.array_equal(distinct_keys(keys), np.unique(keys))
    assert distinct_keys(keys).dtype == np.int64


def test_span_index_finds_every_span_and_refuses_an_unknown_one():
    import numpy as np

    from gamut.scanning.site_access import SiteEnergies, distinct_keys, span_index

    rng = np.random.default_rng(5)
    ref, start = rng.integers(0, 7, 500), rng.integers(1, 90, 500)
    end = start + rng.integers(0, 9, 500)
    keys = distinct_keys(SiteEnergies.encode(ref, start, end, 101))
    at = span_index(keys, 101, ref, start, end)
    assert np.array_equal(keys[at], SiteEnergies.encode(ref, start, end, 101))
    with pytest.raises(RuntimeError, match="not in the first pass"):
        span_index(keys, 101, np.array([8]), np.array([1]), np.array([2]))
