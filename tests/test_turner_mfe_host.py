"""The GPU MFE engine's kernels (turner_mfe.cu) built for the CPU and driven by gpu_mfe's planning,
against ViennaRNA (RNA.fold, eval_structure, subopt): energies identical in dcal/mol, structures
optimal and RNAfold's own where the optimum is unique, for every option; both schedules (batch
blocks looping over sequences, long sequences by diagonals)."""
from __future__ import annotations

import pytest

pytest.importorskip("RNA")

import numpy as np  # noqa: E402
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from turner_mfe_host import HostRunner, build_turner_mfe_host  # noqa: E402
from turner_mfe_reference import OPTION_SETS, check_folds, hsa_hairpins, random_rnas  # noqa: E402

from gamut.errors import InputError  # noqa: E402
from gamut.folding.turner import gpu_mfe  # noqa: E402
from gamut.folding.turner.energy_tables import turner_tables  # noqa: E402
from gamut.folding.turner.gpu_mfe import SequenceMemoryError, mfe_batch  # noqa: E402
from gamut.folding.turner.options import TurnerOptions  # noqa: E402

OPTION_IDS = [f"T{o.temperature:g}-d{o.dangles}-lp{int(not o.no_lp)}-span{o.max_bp_span}" for o in OPTION_SETS]


@pytest.fixture(scope="module")
def library(tmp_path_factory) -> str:
    return build_turner_mfe_host(tmp_path_factory.mktemp("turner_mfe"))


def fold(library: str, sequences: list[str], options: TurnerOptions, *, sms: int = 1, long_from: int | None = None):
    runner = HostRunner(library, sms=sms)
    kwargs = {} if long_from is None else {"long_from": long_from}
    energies, structures = mfe_batch(sequences, options, runner=runner, **kwargs)
    assert energies.dtype == np.int32
    return energies, structures, runner


letters = st.text(alphabet=st.sampled_from("ACGUACGUACGUacgutTN"), min_size=1, max_size=200)


@pytest.mark.parametrize("options", OPTION_SETS, ids=OPTION_IDS)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sequences=st.lists(letters, min_size=1, max_size=6))
def test_random_batches_equal_viennarna(library, options, sequences):
    energies, structures, _ = fold(library, sequences, options)
    check_folds(sequences, options, energies, structures)


@pytest.mark.parametrize("options", OPTION_SETS, ids=OPTION_IDS)
def test_human_mirbase_hairpins(library, options):
    """Every human hairpin with the default options; 300 of them with each other option."""
    records = hsa_hairpins()
    sequences = [s for _, s in records]
    if options != TurnerOptions():
        sequences = sequences[::5][:300]
    energies, structures, runner = fold(library, sequences, options, sms=2)
    assert [k for k, *_ in runner.launches] == ["batch"] * len(runner.launches)
    check_folds(sequences, options, energies, structures)


@pytest.mark.parametrize("options", [OPTION_SETS[0], OPTION_SETS[1], OPTION_SETS[2], OPTION_SETS[4]],
                         ids=[OPTION_IDS[0], OPTION_IDS[1], OPTION_IDS[2], OPTION_IDS[4]])
def test_long_random_rnas_by_diagonals(library, options):
    """600-1000 nt: the long schedule (by diagonals) and, for the same sequences, the batch one."""
    sequences = random_rnas(2, 600, 1000, seed=46)
    long_e, long_s, runner = fold(library, sequences, options, long_from=600)
    assert [k for k, *_ in runner.launches] == ["long", "long"]
    check_folds(sequences, options, long_e, long_s)
    batch_e, batch_s, runner = fold(library, sequences, options, long_from=2000)
    assert [k for k, *_ in runner.launches] == ["batch"]
    np.testing.assert_array_equal(batch_e, long_e)


def test_mixed_lengths_in_one_call(library):
    """Lengths of every class and both schedules in one call; blocks loop over more sequences than
    there are blocks, reusing their work areas; results come back in the callers' order."""
    options = TurnerOptions()
    sequences = random_rnas(150, 1, 90, seed=1) + random_rnas(20, 100, 300, seed=2) + random_rnas(2, 350, 420, seed=3)
    order = np.random.default_rng(0).permutation(len(sequences))
    sequences = [sequences[x] for x in order]
    energies, structures, runner = fold(library, sequences, options, long_from=350)
    kinds = [k for k, *_ in runner.launches]
    assert kinds.count("long") == 2 and kinds.count("batch") >= 3
    first = runner.launches[0]
    assert first[1] > first[3]  # more sequences than blocks
    check_folds(sequences, options, energies, structures)


def test_special_and_large_hairpins(library):
    """Every tetra-, tri- and hexaloop of the tables in a stem (also written with T), and hairpins of
    31-150 letters (ViennaRNA's extrapolation by lxc * log(size / 30))."""
    import RNA

    params = RNA.param(TurnerOptions().model_details())
    loops = params.Tetraloops.split() + params.Triloops.split() + params.Hexaloops.split()
    sequences = ["GGAC" + loop + "GUCC" for loop in loops]
    sequences += [s.replace("U", "T") for s in sequences[:5]]
    sequences += ["GGGGC" + "A" * size + "GCCCC" for size in range(31, 151, 7)]
    for options in (TurnerOptions(), TurnerOptions(temperature=50.0)):
        energies, structures, _ = fold(library, sequences, options)
        check_folds(sequences, options, energies, structures)


def test_sequences_without_pairs(library):
    sequences = ["", "A", "NNNNNNNNNNNN", "AAAAAAAAAAAAAAAA", "GGGAAACC", "gggnnnccc"]
    energies, structures, _ = fold(library, sequences, TurnerOptions())
    assert energies.tolist()[:4] == [0, 0, 0, 0]
    assert structures[:4] == ["." * len(s) for s in sequences[:4]]
    check_folds(sequences, TurnerOptions(), energies, structures)


def test_empty_calls_need_no_device():
    energies, structures = mfe_batch([], TurnerOptions())
    assert energies.shape == (0,) and structures == []
    energies, structures = mfe_batch(["", ""], TurnerOptions())
    assert energies.tolist() == [0, 0] and structures == ["", ""]


def test_bad_letters_name_the_sequence():
    with pytest.raises(InputError, match=r"sequence 2: letter 'X' at position 4"):
        mfe_batch(["ACGU", "GGGAAACCC", "ACGXU"], TurnerOptions())
    with pytest.raises(InputError, match=r"sequence 0: letter 'é' at position 1"):
        mfe_batch(["éACGU"], TurnerOptions())


def test_too_long_for_the_memory_at_hand(library):
    runner = HostRunner(library, free_bytes=10_000_000)
    with pytest.raises(SequenceMemoryError, match=r"sequence 1 \(3,000 nt\) needs .* GB of GPU memory"):
        mfe_batch(["ACGU", "A" * 3000], TurnerOptions(), runner=runner, long_from=1000)
    runner = HostRunner(library, free_bytes=1_000_000)
    with pytest.raises(SequenceMemoryError, match=r"sequences of 900 letters need"):
        mfe_batch(["A" * 900], TurnerOptions(), runner=runner)


def test_tables_layout_is_the_same_for_every_option():
    """One compiled module serves every option: only the values change."""
    layouts = {turner_tables(o).defines for o in OPTION_SETS}
    assert len(layouts) == 1
    assert not np.array_equal(turner_tables(OPTION_SETS[0]).values, turner_tables(OPTION_SETS[3]).values)


def test_work_area_matches_the_kernel(library):
    runner = HostRunner(library)
    for n in (1, 5, 50, 1000):
        for no_lp in (False, True):
            assert runner.lib.host_tmfe_work_ints(n, int(no_lp)) == gpu_mfe.work_ints(n, no_lp)


def test_interior_candidates_are_every_gap_pair_once(library):
    """The traceback's candidate x of a pair's interior loops: every (u1, u2) with u1 + u2 <= 30 once."""
    runner = HostRunner(library)
    got = [divmod(runner.lib.host_tmfe_gaps(x), 100) for x in range(496)]
    assert sorted(got) == sorted((u1, u2) for u1 in range(31) for u2 in range(31 - u1))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sequences=st.lists(st.text(alphabet=st.sampled_from("ACGUacgutTN"), min_size=0, max_size=120), max_size=8))
def test_flat_structures_equal_the_list_form(library, sequences):
    """mfe_batch_flat: the same energies, and the list form's structures end to end at the
    sequences' offsets, whether the sequences come as strings or packed."""
    from gamut.io.packed import PackedSequences

    energies, structures = mfe_batch(sequences, TurnerOptions(), runner=HostRunner(library))
    offsets = np.zeros(len(sequences) + 1, np.int64)
    np.cumsum([len(s) for s in sequences], out=offsets[1:])
    for given_as in (sequences, PackedSequences("".join(sequences).encode(), offsets)):
        flat_e, flat_s, flat_offsets = gpu_mfe.mfe_batch_flat(given_as, TurnerOptions(), runner=HostRunner(library))
        assert flat_s.dtype == np.uint8 and flat_e.dtype == np.int32
        np.testing.assert_array_equal(flat_e, energies)
        np.testing.assert_array_equal(flat_offsets, offsets)
        assert flat_s.tobytes() == "".join(structures).encode()


@given(st.binary(max_size=64))
def test_codes_by_translate_equal_the_table(raw):
    """encode_letters (bytes.translate) gives CODES' codes, and refuses what CODES marks 255."""
    from gamut.folding.turner.energy_tables import CODES

    offsets = np.array([0, len(raw)], np.int64)
    expected = CODES[np.frombuffer(raw, np.uint8)]
    if (expected == 255).any():
        at = int(np.flatnonzero(expected == 255)[0])
        with pytest.raises(InputError, match=rf"sequence 0: letter .* at position {at + 1} "):
            gpu_mfe.encode_letters(raw, offsets)
    else:
        np.testing.assert_array_equal(gpu_mfe.encode_letters(raw, offsets), expected)
