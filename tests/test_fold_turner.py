"""``gamut.fold(..., model="turner")``: the CPU engine against ViennaRNA itself (defaults and each
option), the batch API, the -p numbers computed on the host, letters, and the GPU engine's
plumbing with a stand-in for the kernels."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gamut
from gamut.errors import DeviceError, InputError, UsageError
from gamut.folding.turner import cpu, ensemble
from gamut.folding.turner.batch import TurnerBatch, TurnerResult
from gamut.folding.turner.letters import check_letters
from gamut.folding.turner.options import TurnerOptions

from turner_helpers import install_standin_gpu, reference_mfe, reference_pf

OPTION_SETS = [{}, {"temperature": 25.0}, {"dangles": 0}, {"no_lp": True}, {"max_bp_span": 20},
               {"temperature": 50.0, "dangles": 0, "no_lp": True, "max_bp_span": 30}]
HAIRPIN = "GGGAAAUCCCAGCUAGCUAGGGAUUUCCCAUGCAUCG"

rna = st.text(alphabet="ACGUTNacgutn", min_size=1, max_size=120)


@settings(max_examples=40, deadline=None)
@given(st.lists(rna, min_size=1, max_size=6), st.sampled_from(OPTION_SETS))
def test_cpu_engine_equals_viennarna(sequences, options):
    batch = gamut.fold(sequences, model="turner", device="cpu", threads=1, **options)
    assert isinstance(batch, TurnerBatch) and len(batch) == len(sequences)
    for k, sequence in enumerate(sequences):
        structure, energy = reference_mfe(sequence.upper(), **options)
        assert batch.structure(k) == structure and int(batch.energies_dcal[k]) == energy
        assert batch.energies[k] == energy / 100


@pytest.mark.parametrize("options", OPTION_SETS)
def test_partition_equals_viennarna(options):
    result = gamut.fold(HAIRPIN, model="turner", device="cpu", partition=True, **options)
    ensemble_energy, p = reference_pf(HAIRPIN, **options)
    assert isinstance(result, TurnerResult) and result.engine == "cpu"
    assert result.ensemble_energy == ensemble_energy
    np.testing.assert_array_equal(result.probabilities, p)
    assert (result.structure, result.energy_dcal) == reference_mfe(HAIRPIN, **options)


@settings(max_examples=25, deadline=None)
@given(st.text(alphabet="ACGU", min_size=1, max_size=90))
def test_ensemble_numbers_equal_viennarna(sequence):
    import RNA

    fc = RNA.fold_compound(sequence)
    structure, mfe = fc.mfe()
    fc.exp_params_rescale(mfe)
    pf_line, g = fc.pf()
    p = np.triu(np.array(fc.bpp())[1:, 1:], 1)
    assert ensemble.pf_structure(p) == pf_line
    centroid, distance = ensemble.centroid(p)
    assert (centroid, round(distance, 9)) == (fc.centroid()[0], round(fc.centroid()[1], 9))
    assert ensemble.diversity(p) == pytest.approx(fc.mean_bp_distance(), abs=1e-9)
    assert ensemble.kt(TurnerOptions()) == pytest.approx(fc.exp_params.kT / 1000, rel=1e-12)
    # RNAfold's frequency uses the single-precision energies; ViennaRNA's double one agrees to 1e-5
    frequency = ensemble.mfe_frequency(g, round(mfe * 100), TurnerOptions())
    assert frequency == pytest.approx(fc.pr_structure(structure), rel=1e-5)


def test_results_and_batch_api():
    records = [("hp", HAIRPIN), "ACGUN", "gggaaaccc"]
    batch = gamut.fold(records, model="turner", device="cpu", partition=True)
    assert batch.names == ["hp", "sequence_2", "sequence_3"] and list(batch.lengths) == [37, 5, 9]
    assert batch[-1].name == "sequence_3" and batch[-1].sequence == "gggaaaccc"
    assert [r.structure for r in batch[0:2]] == batch.structures[:2]
    assert batch[1].structure == "....." and batch[1].energy == 0.0 and batch[1].pair_list() == []
    first = batch[0]
    assert first.pair_list() == sorted(first.pair_list()) and len(first.pair_list()) == first.structure.count("(")
    i, j, p = first.pair_probabilities(0.5)
    assert np.all(i < j) and np.all(p >= 0.5) and np.all(p <= 1)
    table = batch.to_arrow()
    assert table.column_names == ["name", "length", "structure", "energy", "energy_dcal", "ensemble_energy"]
    assert table.column("structure").to_pylist() == batch.structures
    assert batch.to_pandas()["energy_dcal"].tolist() == batch.energies_dcal.tolist()
    with pytest.raises(IndexError):
        batch[3]
    plain = gamut.fold(["GGGAAACCC"] * 3, model="turner", device="cpu")
    assert plain.ensemble_energies is None and plain.names == ["sequence_1", "sequence_2", "sequence_3"]
    with pytest.raises(UsageError, match="partition"):
        plain[0].diversity


def test_model_options_are_checked():
    with pytest.raises(UsageError, match="Nussinov"):
        gamut.fold("GGGAAACCC", 3, model="turner")
    with pytest.raises(UsageError, match="model='turner'"):
        gamut.fold("GGGAAACCC", partition=True)
    with pytest.raises(UsageError, match="unknown model"):
        gamut.fold("GGGAAACCC", model="zuker")
    with pytest.raises(UsageError, match="unknown options"):
        gamut.fold("GGGAAACCC", model="turner", temprature=20)
    with pytest.raises(UsageError, match="dangles"):
        gamut.fold("GGGAAACCC", model="turner", dangles=1)
    with pytest.raises(UsageError, match="partition"):
        gamut.fold("GGGAAACCC", model="turner", partition=1)
    assert gamut.fold("GGGGAAACCCC", 3).pairs == 4  # the Nussinov default is unchanged


@pytest.mark.parametrize("sequences, message", [
    (["ACGU", ""], "sequence_2: empty sequence"),
    ([("a", "ACGU"), ("b", "ACRU")], "b: letter 'R' at position 3"),
    (["ACGU", "AC-U"], "sequence_2: letter '-' at position 3"),
    (["ACGÜ"], "sequence_1: letter 'Ü' at position 4"),
])
def test_bad_letters_name_the_record(sequences, message):
    with pytest.raises(InputError, match=message):
        gamut.fold(sequences, model="turner", device="cpu")


def test_letters_checked_end_to_end():
    raw, offsets = check_letters(["acgt", "NNu"])
    assert raw == b"acgtNNu" and offsets.tolist() == [0, 4, 7]


def test_too_long_for_memory(monkeypatch):
    monkeypatch.setattr(cpu, "available_memory", lambda: 1 << 20)
    with pytest.raises(InputError, match="x: folding 400 nt on the CPU needs about"):
        gamut.fold([("x", "ACGU" * 100)], model="turner", device="cpu")


def test_process_pool_keeps_input_order(monkeypatch):
    monkeypatch.setattr(cpu, "POOL_MIN_SECONDS", 0.0)
    sequences = [HAIRPIN[k:] + HAIRPIN[:k] for k in range(len(HAIRPIN))]
    with cpu.CpuEngine(threads=2) as engine:
        energies, structures, pf = engine.pf(sequences, TurnerOptions())
    alone = cpu.fold_chunk(sequences, TurnerOptions(), True)
    assert energies.tolist() == alone[0].tolist() and structures == alone[1]
    assert [r.ensemble_energy for r in pf] == alone[2].tolist()
    assert cpu.chunk_bounds(np.array([50] * 10 + [3000]), 4)[-1] == (10, 11)


def test_auto_takes_the_cpu_for_small_work():
    from gamut.folding.turner.engines import pick_device

    assert pick_device("auto", np.array([50] * 100)) == "cpu"
    with pytest.raises(UsageError, match="unknown device"):
        pick_device("gpu", np.array([50]))


def test_gpu_engine_plumbing_with_a_standin(monkeypatch):
    calls = install_standin_gpu(monkeypatch)
    sequences = [HAIRPIN, "ACGUACGUAC", "gggaaaccc"]
    gpu = gamut.fold(sequences, model="turner", device="cuda", partition=True, no_lp=True)
    cpu_batch = gamut.fold(sequences, model="turner", device="cpu", partition=True, no_lp=True)
    assert gpu.engine == "gpu" and [c[:2] for c in calls] == [("mfe", 3), ("pf", 3)]
    assert calls[0][2] == TurnerOptions(no_lp=True)
    assert gpu.structures == cpu_batch.structures and gpu.energies_dcal.tolist() == cpu_batch.energies_dcal.tolist()
    assert gpu[0].pf_structure == cpu_batch[0].pf_structure


def test_gpu_engine_inconsistent_result_is_reported(monkeypatch):
    install_standin_gpu(monkeypatch, broken=True)
    with pytest.raises(DeviceError, match="sequence_2 with the gpu Turner engine gave an inconsistent result"):
        gamut.fold(["GGGAAACCC", HAIRPIN], model="turner", device="cuda")


@settings(max_examples=50, deadline=None)
@given(st.lists(st.one_of(st.text("ACGU", min_size=1, max_size=4),
                          st.tuples(st.text("xyz", min_size=1, max_size=3), st.text("ACGU", min_size=1, max_size=4))),
                max_size=6))
def test_records_split_by_columns_as_one_by_one(items):
    """split_records: lists of strings kept, lists of pairs split by columns, mixed lists named as
    named_records names them."""
    from gamut.folding.turner.api import split_records
    from gamut.io.fasta import named_records

    sequences, names = split_records(items)
    if all(isinstance(item, str) for item in items):
        assert names is None and sequences is items
    else:
        records = named_records(items)
        assert list(sequences) == [s for _, s in records] and list(names) == [n for n, _ in records]


@pytest.mark.parametrize("items", [[("a", "ACGU"), ("b", 5)], [("a", "ACGU"), ("b", "AC", "x")], [("a", "AC"), b"AC"]])
def test_bad_pairs_are_named(items):
    from gamut.folding.turner.api import split_records

    with pytest.raises(UsageError, match=r"item 2: expected a sequence or a \(name, sequence\) pair"):
        split_records(items)


def _chunk_bounds_one_by_one(load, most):
    bounds, start, total = [], 0, 0.0
    for k, weight in enumerate(load):
        if k > start and (total + weight > 1.0 or k - start >= most):
            bounds.append((start, k))
            start, total = k, 0.0
        total += weight
    if start < len(load):
        bounds.append((start, len(load)))
    return bounds


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(1, 4000), max_size=60), st.booleans(), st.sampled_from(["cpu", "cuda"]))
def test_cli_chunks_as_the_records_one_by_one(lengths, partition, device):
    """The command line's chunks (by prefix sums) are those of adding the records one by one."""
    from gamut.folding.turner import cli

    lengths = np.array(lengths, np.int64)
    old = (cli.CHUNK_RECORDS, cli.CHUNK_LETTERS, cli.CHUNK_PROBABILITY_BYTES)
    try:
        cli.CHUNK_RECORDS, cli.CHUNK_LETTERS, cli.CHUNK_PROBABILITY_BYTES = 7, 5000, 8 * 3000 ** 2 + 1
        n = lengths.astype(np.float64)
        weights = [n / cli.CHUNK_LETTERS] + ([8 * n * n / cli.CHUNK_PROBABILITY_BYTES] if partition else [])
        if device == "cpu":
            weights.append(cpu.record_seconds(lengths, partition) / (cli.CHUNK_CPU_SECONDS * 2))
        load = np.maximum.reduce(weights) if len(lengths) else np.zeros(0)
        expected = _chunk_bounds_one_by_one(load.tolist(), cli.CHUNK_RECORDS)
        assert cli.chunk_bounds(lengths, device, partition, 2) == expected
    finally:
        cli.CHUNK_RECORDS, cli.CHUNK_LETTERS, cli.CHUNK_PROBABILITY_BYTES = old
