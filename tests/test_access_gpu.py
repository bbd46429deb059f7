"""The GPU accessibility engine (gamut.access.gpu, kernels in plfold.cu) against ViennaRNA's
RNAplfold (the CPU engine): its host build on any machine with g++, the CUDA build on a GPU (``gpu``
tests). Both must give ViennaRNA's probabilities to a relative 1e-7 (the issue asks 1e-6), the
same undefined (NaN) cells, and the same order of sites."""
from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("RNA")

from plfold_host import HostRunner, build_plfold_host  # noqa: E402

from gamut.access.boltzmann import encode  # noqa: E402
from gamut.access.cpu import stretch_energies, unpaired_probabilities  # noqa: E402
from gamut.access.gpu import GpuFolder, Piece, batches, pieces  # noqa: E402
from gamut.access.model import AccessParams  # noqa: E402

DATA = Path(__file__).resolve().parent / "data"
#: Relative agreement required of every defined probability.
RELATIVE = 1e-7


@pytest.fixture(scope="module")
def host_library(tmp_path_factory) -> str:
    return build_plfold_host(tmp_path_factory.mktemp("plfold"))


def assert_same_as_vienna(got: np.ndarray, sequence: str, params: AccessParams) -> None:
    expected = unpaired_probabilities(sequence, params)
    assert got.shape == expected.shape
    assert np.array_equal(np.isnan(got), np.isnan(expected))
    defined = ~np.isnan(expected)
    if not defined.any():
        return
    g, e = got[defined], expected[defined]
    worst = float(np.max(np.abs(g - e) / np.maximum(e, 1e-300)))
    assert worst <= RELATIVE, f"relative difference {worst:.3g} (n={len(sequence)}, {params})"
    # The same order of sites: where ViennaRNA's values differ beyond the noise, ours differ alike.
    order = np.argsort(e, kind="stable")
    steps = np.diff(g[order])
    assert (steps >= -4 * RELATIVE * np.abs(g[order][1:])).all()


def random_sequence(rng: random.Random, n: int, letters: str = "ACGU") -> str:
    return "".join(rng.choice(letters) for _ in range(n))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_host_build_is_vienna_on_random_sequences(host_library, data):
    window = data.draw(st.integers(1, 120), label="window")
    span = data.draw(st.integers(1, window), label="span")
    width = data.draw(st.integers(1, min(window, 25)), label="u")
    letters = data.draw(st.sampled_from(["ACGU", "GC", "ACGUNacgut", "AU"]), label="letters")
    count = data.draw(st.integers(1, 3), label="sequences")
    seed = data.draw(st.integers(0, 2**32 - 1), label="seed")
    rng = random.Random(seed)
    sequences = [random_sequence(rng, rng.choice([1, 2, 4, 5, 7, rng.randint(1, 400)]), letters)
                 for _ in range(count)]
    params = AccessParams(window, span, width)
    folded = GpuFolder(params, runner=HostRunner(host_library)).fold(sequences)
    for sequence, got in zip(sequences, folded):
        assert_same_as_vienna(got, sequence, params)


def test_host_build_is_vienna_on_long_and_real_sequences(host_library):
    rng = random.Random(5)
    clip = [line for line in (DATA / "miranda" / "clip_quiet" / "reference.fa").read_text().split()
            if not line.startswith(">")][:20]
    sequences = [random_sequence(rng, 5000), *clip, random_sequence(rng, 300, "GC")]
    for params in (AccessParams(), AccessParams(240, 160, 30), AccessParams(30, 30, 30)):
        folded = GpuFolder(params, runner=HostRunner(host_library)).fold(sequences)
        for sequence, got in zip(sequences, folded):
            assert_same_as_vienna(got, sequence, params)


def golden_references() -> list[str]:
    """Up to four references of at most 2,000 letters of every golden miRanda case
    (tests/data/miranda), and the SARS-CoV-2 genome of one of them."""
    from gamut.io import read_fasta

    cases = sorted(c for c in (DATA / "miranda").iterdir() if c.is_dir())
    short = [r.sequence for case in cases for r in [r for r in read_fasta(case / "reference.fa")
                                                      if len(r.sequence) <= 2000][:4]]
    genome = next(read_fasta(DATA / "miranda" / "sarscov2_default" / "reference.fa")).sequence
    return [*short, genome]


def test_host_build_is_vienna_on_the_golden_references(host_library):
    sequences = golden_references()
    assert len(sequences) >= 11
    params = AccessParams()
    for sequence, got in zip(sequences, GpuFolder(params, runner=HostRunner(host_library)).fold(sequences)):
        assert_same_as_vienna(got, sequence, params)


def test_pieces_cover_each_sequence_once_with_margins():
    plan = pieces([10, 0, 1000], window=20, most=200)
    assert plan[0] == Piece(0, 0, 10, 0, 10) and plan[1] == Piece(1, 0, 0, 0, 0)
    long = plan[2:]
    assert [p.core_lo for p in long] == list(range(0, 1000, 200 - 42))
    assert long[-1].core_hi == 1000 and all(a.core_hi == b.core_lo for a, b in zip(long, long[1:]))
    for p in long:
        assert p.hi - p.lo <= 200 and p.lo == max(0, p.core_lo - 21) and p.hi == min(1000, p.core_hi + 21)
    assert [len(g) for g in batches(plan, 200)] == [3] + [1] * (len(long) - 1)
    with pytest.raises(ValueError, match="cannot hold a window"):
        pieces([5], window=80, most=100)


def test_a_sequence_cut_into_pieces_folds_as_a_whole(host_library):
    rng = random.Random(11)
    sequences = [random_sequence(rng, 1500), random_sequence(rng, 90), random_sequence(rng, 700)]
    params = AccessParams(80, 40, 20)
    whole = GpuFolder(params, runner=HostRunner(host_library)).fold(sequences)
    runner = HostRunner(host_library)
    cut = GpuFolder(params, runner=runner, batch_positions=400).fold(sequences)
    assert len(runner.batches) > len(sequences)  # the long ones were cut
    assert max(n for n, _, _ in runner.batches) <= 400
    for a, b in zip(whole, cut):
        assert np.array_equal(np.isnan(a), np.isnan(b))
        ok = ~np.isnan(a)
        assert np.allclose(a[ok], b[ok], rtol=1e-12, atol=0)


def test_stretch_energies_match_the_cpu_engine(host_library):
    rng = random.Random(3)
    sequences = [random_sequence(rng, n) for n in (400, 60, 3, 1200)]
    params = AccessParams(80, 40, 1)
    ends = [np.array([rng.randrange(len(s)) for _ in range(30)]) for s in sequences]
    lengths = [np.minimum(np.array([rng.randint(1, 100) for _ in range(30)]), e + 1) for e in ends]
    done: list[int] = []
    got = GpuFolder(params, runner=HostRunner(host_library), batch_positions=500).stretches(
        sequences, ends, lengths, done.append)
    assert sum(done) == sum(map(len, sequences))
    for s, e, n, g in zip(sequences, ends, lengths, got):
        expected = stretch_energies(s, params, e, n)
        assert np.array_equal(np.isnan(g), np.isnan(expected))
        ok = ~np.isnan(expected)
        assert np.allclose(g[ok], expected[ok], rtol=1e-9, atol=1e-9)


# ---- on a GPU -----------------------------------------------------------------------------------

def real_references() -> list[str]:
    """100 AGO-CLIP fragments and the golden references (tests/data, the SARS-CoV-2 genome among them)."""
    clip = [line for line in (DATA / "miranda" / "clip_quiet" / "reference.fa").read_text().split()
            if not line.startswith(">")][:100]
    return [*clip, *golden_references()]


@pytest.mark.gpu
def test_cuda_engine_is_vienna_on_random_and_real_sequences():
    from gamut.access.api import accessibility

    rng = random.Random(17)
    random_ones = [random_sequence(rng, rng.randint(1, 3000), "ACGUNacgut") for _ in range(30)]
    for params, sequences in ((AccessParams(), random_ones + real_references()),
                              (AccessParams(150, 100, 25), random_ones[:10]),
                              (AccessParams(7, 5, 7), random_ones[:10])):
        folded = accessibility(sequences, params.window, params.span, params.max_unpaired, device="cuda")
        for sequence, result in zip(sequences, folded):
            assert_same_as_vienna(result.unpaired, sequence, params)


@pytest.mark.gpu
def test_cuda_engine_cuts_long_sequences_like_the_host_build(host_library):
    rng = random.Random(23)
    sequences = [random_sequence(rng, 20_000), random_sequence(rng, 50)]
    params = AccessParams()
    on_host = GpuFolder(params, runner=HostRunner(host_library)).fold(sequences)
    on_gpu = GpuFolder(params, batch_positions=3000).fold(sequences)
    for a, b in zip(on_host, on_gpu):
        assert np.array_equal(np.isnan(a), np.isnan(b))
        ok = ~np.isnan(a)
        assert np.allclose(a[ok], b[ok], rtol=1e-12, atol=0)


@pytest.mark.gpu
def test_shared_sars_genomes_on_the_gpu():
    batch = Path(__file__).resolve().parents[2] / "shared" / "data" / "rna" / "sars-cov-2_batch.fasta"
    if not batch.is_file():
        pytest.skip("../shared/data/rna is not here")
    from gamut.io.fasta import read_fasta

    genomes = [record.sequence for record in read_fasta(batch)]  # all ten
    params = AccessParams()
    folded = GpuFolder(params).fold(genomes)
    for genome, got in zip(genomes, folded):
        assert_same_as_vienna(got, genome, params)


@pytest.mark.gpu
def test_cli_on_the_gpu_writes_the_cpu_numbers(tmp_path):
    import subprocess
    import sys

    import pandas as pd

    fasta = tmp_path / "refs.fa"
    rng = random.Random(29)
    fasta.write_text("".join(f">r{k}\n{random_sequence(rng, rng.randint(1, 900), 'ACGUNacgt')}\n" for k in range(40)))
    tables = {}
    for device in ("cpu", "cuda"):
        out = tmp_path / f"{device}.parquet"
        done = subprocess.run([sys.executable, "-m", "gamut", "access", str(fasta), "-u", "12", "--device", device,
                               "-o", str(out)], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        tables[device] = pd.read_parquet(out)
    cpu, gpu = tables["cpu"], tables["cuda"]
    pd.testing.assert_frame_equal(cpu[["name", "end", "u"]], gpu[["name", "end", "u"]])
    assert np.allclose(gpu["unpaired"], cpu["unpaired"], rtol=RELATIVE, atol=0)


@given(st.text(max_size=60))
def test_letter_codes_are_those_of_the_model_letters(text):
    from gamut.access.boltzmann import encode
    from gamut.access.model import rna_letters

    expected = [" ACGU".index(c) if c in "ACGU" else 0 for c in rna_letters(text)]
    assert encode(text).tolist() == expected


def test_every_scale_gives_the_same_probabilities(host_library):
    """A batch's per-letter scale (GpuFolder.SCALES) only moves the weights: the probabilities stay
    ViennaRNA's whichever scale folds them."""
    from gamut.access.gpu import SCALES, PackedBatch, pieces

    rng = random.Random(31)
    sequence = random_sequence(rng, 400)
    params = AccessParams(200, 150, 20)
    batch = PackedBatch.pack(pieces([400], 200, 10_000), [encode(sequence)])
    runner = HostRunner(host_library)
    for scale in SCALES:
        assert_same_as_vienna(runner.table(batch, 200, 150, 20, scale), sequence, params)


def test_large_windows_are_rescaled_and_mixed_batches_split(host_library, monkeypatch):
    """Weights beyond the range of doubles: a batch is folded again with a per-letter scale, then
    in halves when its sequences need different scales; one that no scale fits is refused
    (WeightRangeError, a DeviceError), never answered with wrong numbers. (ViennaRNA 2.8 itself
    crashes on GC-rich windows of 400 letters and more.)"""
    import math

    from gamut.access import gpu
    from gamut.errors import DeviceError

    gc, poly_a = "GC" * 350, "A" * 700
    params = AccessParams(300, 300, 20)
    runner = HostRunner(host_library)
    assert_same_as_vienna(GpuFolder(params, runner=runner).fold([gc])[0], gc, params)
    assert runner.scales[0] == 1.0 and runner.scales[-1] != 1.0  # out of range unscaled, then rescaled
    monkeypatch.setattr(gpu, "SCALES", (1.0, math.exp(-3.0)))  # GC needs the scale, poly-A refuses it
    runner = HostRunner(host_library)
    together = GpuFolder(params, runner=runner).fold([gc, poly_a])
    assert_same_as_vienna(together[0], gc, params)
    assert np.allclose(together[1][~np.isnan(together[1])], 1.0)
    assert [n for n, _, _ in runner.batches] == [1400, 1400, 700, 700, 700]  # together twice, then apart
    monkeypatch.setattr(gpu, "SCALES", (1.0,))
    with pytest.raises(DeviceError, match="window of 300"):
        GpuFolder(params, runner=HostRunner(host_library)).fold([gc])


def test_a_batch_that_does_not_fit_the_device_is_folded_in_halves(host_library):
    """A batch that finds the device's memory taken (BatchMemoryError: a scan's engine holds some)
    is folded in halves; a single piece that does not fit is an error."""
    from gamut.access.gpu import BatchMemoryError

    class Tight(HostRunner):
        def table(self, batch, window, span, width, scale=1.0):
            if batch.positions > 500:
                raise BatchMemoryError(f"a batch of {batch.positions:,} positions did not fit the GPU's memory")
            return super().table(batch, window, span, width, scale)

    rng = random.Random(41)
    sequences = [random_sequence(rng, 300) for _ in range(4)]
    params = AccessParams(80, 40, 10)
    runner = Tight(host_library)
    folded = GpuFolder(params, runner=runner).fold(sequences)
    assert [n for n, _, _ in runner.batches] == [300, 300, 300, 300]
    for sequence, got in zip(sequences, folded):
        assert_same_as_vienna(got, sequence, params)
    with pytest.raises(BatchMemoryError, match="did not fit"):
        GpuFolder(params, runner=Tight(host_library)).fold([random_sequence(rng, 600)])
