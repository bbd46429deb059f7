"""Folding lists of sequences: the batch engines (``cpu-batch`` here; the GPU kernel's host build
and, on a GPU machine, the kernel itself) give exactly the per-sequence engines' scores and structures."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gamut
from gamut.cli import main
from gamut.errors import InputError, UsageError
from gamut.folding.batch import BATCH_MAX_LENGTH, check_batch, fold_batch_cpu, layout
from gamut.folding.sequence import encode

from fold_helpers import FoldHarness, check_structure, slow_max_pairs
from host_build import require_compiler

ROOT = Path(__file__).resolve().parents[1]
#: miRBase hairpins: shared/ inside or beside the checkout, or a copy in .fold-data/
HAIRPINS = [ROOT / "shared" / "data" / "mirbase" / "hairpin.fa.gz",
            ROOT.parent / "shared" / "data" / "mirbase" / "hairpin.fa.gz", ROOT / ".fold-data" / "hairpin.fa.gz"]


def human_hairpins() -> list[tuple[str, str]]:
    """All human miRBase hairpins (``hsa-`` records), or skip where the shared data is absent."""
    path = next((p for p in HAIRPINS if p.exists()), None)
    if path is None:
        pytest.skip("miRBase hairpin.fa.gz not present")
    from gamut.io import read_fasta

    return [(r.name, r.sequence) for r in read_fasta(path) if r.name.startswith("hsa-")]


def one_by_one(records, min_loop, engine="cpu2"):
    return [gamut.fold(seq, min_loop, "cpu", engine=engine, name=name) for name, seq in records]


@settings(max_examples=40, deadline=None)
@given(seqs=st.lists(st.text(alphabet="ACGUN", max_size=90), max_size=12), min_loop=st.integers(0, 5))
def test_cpu_batch_equals_one_by_one(seqs, min_loop):
    results = gamut.fold(seqs, min_loop, device="cpu")
    assert isinstance(results, list) and len(results) == len(seqs)
    for seq, got, want in zip(seqs, results, one_by_one([("s", s) for s in seqs], min_loop)):
        assert got.engine == "cpu-batch" and got.sequence == seq
        assert (got.pairs, got.structure) == (want.pairs, want.structure)
        check_structure(seq, got.structure, got.pairs, min_loop)
        if len(seq) <= 40:
            assert got.pairs == slow_max_pairs(seq, min_loop)


def test_list_mixes_batch_and_long_sequences():
    rng = np.random.default_rng(5)
    seqs = ["".join(rng.choice(list("ACGU"), n)) for n in (0, 1, 50, BATCH_MAX_LENGTH, BATCH_MAX_LENGTH + 1, 700)]
    results = gamut.fold([(f"r{i}", s) for i, s in enumerate(seqs)], 3, device="cpu")
    assert [r.name for r in results] == [f"r{i}" for i in range(len(seqs))]
    assert [r.engine for r in results] == ["cpu-batch"] * 4 + ["blocked"] * 2
    for r, want in zip(results, one_by_one([(r.name, r.sequence) for r in results], 3)):
        assert (r.pairs, r.structure) == (want.pairs, want.structure)


def test_list_options_and_errors():
    assert [r.name for r in gamut.fold(["ACGU", "GGGAAACCC"])] == ["sequence_1", "sequence_2"]
    assert [r.structure for r in gamut.fold(["GGGAAACCC"], traceback=False)] == [None]
    with_corner = gamut.fold(["GGGAAACCC"], corner=2, device="cpu")
    assert with_corner[0].engine == "blocked" and with_corner[0].corner.shape == (2, 2)
    assert gamut.fold(["GGGAAACCC"], engine="cpu1")[0].engine == "cpu1"
    assert gamut.fold([]) == []
    with pytest.raises(UsageError, match="item 2"):
        gamut.fold(["ACGU", 7])
    with pytest.raises(InputError, match="bad: letter"):
        gamut.fold([("ok", "ACGU"), ("bad", "AC*")])


def test_fold_many_batches(monkeypatch):
    import gamut.folding.api as api

    monkeypatch.setattr(api, "BATCH_CHUNK", 2)
    records = [(f"r{i}", "GGGAAACCC"[: 3 + i]) for i in range(5)]
    results = list(api.fold_many(records, 1, "cpu"))
    assert [r.name for r in results] == [name for name, _ in records]
    assert [r.pairs for r in results] == [r.pairs for r in one_by_one(records, 1)]


def test_check_batch_catches_inconsistent_results():
    codes = layout([encode("GGGAAACCC"), encode("ACGU"), encode("")])
    scores, structures = fold_batch_cpu(*codes, 1)
    assert list(scores) == [3, 1, 0] and check_batch(scores, structures, *codes, 1) is None
    assert check_batch(scores + np.array([0, 1, 0]), structures, *codes, 1) == 1  # more than n / 2
    assert check_batch(scores - np.array([1, 0, 0]), structures, *codes, 1) == 0  # structure has 3 pairs
    assert check_batch(scores - np.array([1, 0, 0]), None, *codes, 1) == 0  # below a greedy structure's 3


def test_cli_folds_many_records_in_batches(tmp_path, data_dir, capsys):
    fasta = data_dir / "fold" / "mirbase_hairpins.fa"
    out = tmp_path / "out.tsv"
    assert main(["fold", str(fasta), "--format", "tsv", "-o", str(out), "--min-loop", "3", "--device", "cpu"]) == 0
    rows = [line.split("\t") for line in out.read_text().splitlines()[1:]]
    from gamut.io import read_fasta

    records = [(r.name, r.sequence) for r in read_fasta(fasta)]
    assert [row[0] for row in rows] == [name for name, _ in records]
    for row, want in zip(rows, one_by_one(records, 3)):
        assert row[4] == "cpu-batch" and int(row[2]) == want.pairs and row[5] == want.structure


def test_human_hairpins_cpu_batch_and_kernel_host_build(tmp_path):
    records = human_hairpins()
    assert len(records) > 1000
    codes = [encode(seq, where=name) for name, seq in records]
    require_compiler()
    harness = FoldHarness(tmp_path)
    for min_loop in (1, 3):
        flat, starts, lengths = layout(codes)
        scores, structures = fold_batch_cpu(flat, starts, lengths, min_loop)
        assert check_batch(scores, structures, flat, starts, lengths, min_loop) is None
        text = structures.tobytes().decode()
        for x in range(0, len(codes), 7 if min_loop == 1 else 1):  # the host build is slow: a sample
            score, structure = harness.batch_fold(codes[x], min_loop)
            assert score == scores[x]
            assert structure == text[starts[x]:starts[x] + len(codes[x])]


def test_gpu_list_path_with_the_host_built_kernel(monkeypatch, tmp_path):
    """``gamut.fold(list, device="cuda")``'s plumbing, the batch kernel run by its host build."""
    require_compiler()
    import gamut.folding.api as api
    import gamut.folding.gpu as gpu

    harness = FoldHarness(tmp_path)

    def fake_batch(flat, starts, lengths, min_loop):
        scores, out = [], []
        for a, n in zip(starts, lengths):
            score, structure = harness.batch_fold(flat[a:a + n], min_loop)
            scores.append(score)
            out.append(structure)
        return np.array(scores, np.int64), np.frombuffer("".join(out).encode(), np.uint8)

    monkeypatch.setattr(api, "choose_engine", lambda engine, device: "gpu")
    monkeypatch.setattr(gpu, "fold_batch_gpu", fake_batch)
    seqs = ["", "A", "GGGGAAACCCC", "ACGUNACGUACGGUUCA" * 5]
    got = gamut.fold(seqs, 1, device="cuda")
    want = gamut.fold(seqs, 1, device="cpu")
    assert [r.engine for r in got] == ["gpu-batch"] * 4
    assert [(r.pairs, r.structure) for r in got] == [(r.pairs, r.structure) for r in want]
