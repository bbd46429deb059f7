"""Duplex energies: miRanda 3.3a's old Vienna library (golden files) and both engines' agreement."""
from __future__ import annotations

import os

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gamut.errors import InputError, UsageError
from gamut.scanning.energy import cpu as E
from gamut.scanning.energy.compiled_model import compiled_tables
from gamut.scanning.energy import tables as EP

FULL = os.environ.get("GAMUT_ENERGY_FULL") == "1"  # all rows through ViennaRNA as well (~1 min)


@pytest.fixture(scope="module")
def golden(data_dir) -> pd.DataFrame:
    frames = [pd.read_csv(data_dir / "energy" / name, sep="\t", keep_default_na=False)
              for name in ("duplex_30C.tsv", "random_30C.tsv")]
    return pd.concat(frames, ignore_index=True)


def _dcal(values) -> np.ndarray:
    return np.round(np.asarray(values, dtype=float) * 100).astype(np.int64)


# ------------------------------------------------------------------------------------------------
# Golden data (the old library's own energies and structures at 30 C)
# ------------------------------------------------------------------------------------------------
def test_golden_energies_compiled_all_rows(golden):
    got = E.duplex_energies_dcal(list(golden.sequence), engine="compiled")
    want = _dcal(golden.energy)
    bad = np.nonzero(got != want)[0]
    assert len(golden) == 19_000
    assert bad.size == 0, [(golden.sequence[k], want[k], got[k]) for k in bad[:5]]


def test_golden_energies_are_hundredths(golden):
    seqs = list(golden.sequence[:200])
    kcal = E.duplex_energies(seqs)
    assert kcal.dtype == np.float64
    assert np.array_equal(kcal, E.duplex_energies_dcal(seqs) / 100.0)
    assert np.array_equal(kcal, golden.energy[:200].to_numpy())


def test_golden_vienna_engine_energies_and_structures(golden):
    rows = golden if FULL else golden.iloc[::10]
    seqs, want_struct = list(rows.sequence), list(rows.structure)
    energies, structures = E.duplex_folds(seqs)
    assert np.array_equal(_dcal(energies), _dcal(rows.energy))
    differ = [k for k, (a, b) in enumerate(zip(structures, want_struct)) if a != b]
    # Where structures differ, the old library's structure must tie for the minimum.
    if differ:
        tied = E.structure_energies([seqs[k] for k in differ], [want_struct[k] for k in differ])
        assert np.array_equal(_dcal(tied), _dcal(energies[differ]))
    assert len(differ) <= max(2, len(seqs) // 1000)


# ------------------------------------------------------------------------------------------------
# Parameter rebuilding (spec 9.1), checked on published Turner 1999 entries
# ------------------------------------------------------------------------------------------------
F30 = (30 + 273.15) / (37 + 273.15)


def test_rescale_factor():
    assert EP.rescale_factor() == F30
    assert EP.rescale_factor(37.0) == 1.0


def test_rules_on_known_entries():
    t = compiled_tables()[0]
    # stacking CG/CG: G37 = -2.40, H = -10.60 kcal/mol (enthalpy rule, truncation)
    assert t.stack[1, 1] == int(-1060 - (-1060 + 240) * F30)
    # hairpin of 4 (entropic): 5.60 * f truncated
    assert t.hairpin[4] == int(560 * F30)
    # bulge of 1 (entropic), multiloop closing 3.40, per-branch 0.40, Ninio 0.50, max 3.00
    assert t.bulge[1] == int(380 * F30)
    scalars = dict(zip(("ninio", "max", "base", "closing", "intern", "au"), t.scalars))
    assert scalars == {"ninio": int(50 * F30), "max": 300, "base": 0,
                       "closing": int(340 * F30), "intern": int(40 * F30), "au": 50}
    # dangles: positive rescaled values become 0; CG 5' dangle of C: G=-0.30, H=+3.30
    assert t.dangle5[1, 2] == min(0, int(330 - (330 + 30) * F30))
    assert (t.dangle5 <= 0).all() and (t.dangle3 <= 0).all()
    # tetraloop GGGGAC: hairpin(4) + mismatch(GC; G, A) + bonus -3.00 with enthalpy -4.00
    mism = int(-710 - (-710 + 240) * F30)
    bonus = int(-400 - (-400 + 300) * F30)
    assert EP.tetraloop_energy_table()["GGGGAC"] == int(560 * F30) + mism + bonus
    assert t.lxc == pytest.approx(107.856 * F30, rel=0, abs=1e-12)


def test_parameter_file_has_equal_enthalpies():
    sections, _ = EP._parse(EP.miranda_parameter_file())
    for name in ("stack", "mismatch_hairpin", "int11", "int22", "dangle5", "hairpin"):
        assert sections[name] == sections[name + "_enthalpies"], name


def test_vienna_defaults_are_restored():
    import RNA

    seq = "GGGAAAUCCCAGCUAGCUAGCAUCGAUCGGCUAGCUAGC"
    before = RNA.fold_compound(seq).mfe()
    EP.vienna_parameters("miranda")
    EP.energy_tables("miranda")
    assert RNA.fold_compound(seq).mfe() == before


# ------------------------------------------------------------------------------------------------
# The compiled engine against ViennaRNA on random inputs (letters, case, linker, lengths)
# ------------------------------------------------------------------------------------------------
LETTERS = "ACGUacguTtXNn-KRy"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.text(alphabet=LETTERS, min_size=0, max_size=70), min_size=1, max_size=12))
def test_compiled_matches_vienna_random_letters(seqs):
    got = E.duplex_energies_dcal(seqs, engine="compiled", threads=2)
    want = E.duplex_energies_dcal(seqs, engine="vienna", threads=1)
    assert np.array_equal(got, want)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(alphabet="ACGU", min_size=8, max_size=22),
       st.text(alphabet="ACGUTacgut", min_size=8, max_size=25),
       st.text(alphabet="acgu", min_size=0, max_size=4))
def test_compiled_matches_vienna_duplex_shape(mirna, target, flank):
    seq = flank + mirna + "XXXXXXX" + target + flank
    got = E.duplex_energies_dcal([seq], engine="compiled")
    want = E.duplex_energies_dcal([seq], engine="vienna", threads=1)
    assert got[0] == want[0]


@pytest.mark.parametrize("loop", [0, 25, 31, 40, 70])
def test_long_hairpins_match(loop):
    seqs = ["GGGCGC" + "A" * loop + "GCGCCC", "gggcgc" + "u" * loop + "GCGCCC"]
    got = E.duplex_energies_dcal(seqs, engine="compiled")
    assert np.array_equal(got, E.duplex_energies_dcal(seqs, engine="vienna", threads=1))


def test_tetraloop_bonus_depends_on_letters_as_written():
    upper, lower, with_t = "GCGCGGAAACGCGC", "GCGCggaaacGCGC", "GCGCGGAAACGCGC".replace("A", "T")
    e = E.duplex_energies_dcal([upper, lower, with_t, "GCGCGGAAACGCGC".replace("U", "T")])
    ref = E.duplex_energies_dcal([upper, lower], engine="vienna", threads=1)
    assert np.array_equal(e[:2], ref)
    assert e[0] < e[1]          # GGAAAC is a special tetraloop only in upper case
    assert e[3] == e[0]         # no U in it, so no T either: unchanged


def test_linker_never_pairs_except_with_k():
    seq = "GGGGGGAAAAXXXXXXXAAAACCCCCC"
    with_k = seq.replace("CCCCCC", "KKKKKK")
    energies, structures = E.duplex_folds([seq, with_k])
    assert all(structures[0][k] == "." for k, ch in enumerate(seq) if ch == "X")
    assert any(structures[1][k] != "." for k, ch in enumerate(with_k) if ch == "X")
    assert all(structures[1][k] == "." for k, ch in enumerate(with_k) if ch == "G")
    assert np.array_equal(E.duplex_energies_dcal([seq, with_k]), _dcal(energies))


@pytest.mark.parametrize("side", ["5", "3"])
def test_x_counts_as_g_in_dangles(side):
    t = compiled_tables()[0]
    core = "GGGAAAACCC"  # one G-C helix closed by (G, C): pair type GC = 2
    if side == "5":
        x, n = E.duplex_energies_dcal(["X" + core, "N" + core])
        assert x - n == t.dangle5[2, 3] < 0   # X dangles like a G, N not at all
    else:
        x, n = E.duplex_energies_dcal([core + "X", core + "N"])
        assert x - n == t.dangle3[2, 3] < 0


def test_compiled_batch_equals_single_folds(golden):
    """Work buffers are reused (not cleared) across a chunk's strings: a batch of mixed lengths
    and letters must give every string the energy it gets on its own."""
    rng = np.random.default_rng(5)
    seqs = list(golden.sequence.sample(300, random_state=5))
    seqs += ["".join(rng.choice(list("ACGUacguXKN-"), size=n)) for n in rng.integers(0, 140, 200)]
    batch = E.duplex_energies_dcal(seqs, engine="compiled", threads=1)
    single = np.array([E.duplex_energies_dcal([s], engine="compiled")[0] for s in seqs])
    assert np.array_equal(batch, single)
    assert np.array_equal(E.duplex_energies_dcal(seqs[::-1], engine="compiled", threads=2),
                          batch[::-1])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.text("ACGUacguXK", max_size=12), min_size=1, max_size=8), st.data())
def test_distinct_strings_byte_for_byte(pool, data):
    """Repeated strings (case matters) are found by their bytes: keep/inverse rebuild the input."""
    from gamut.io.textcols import distinct_strings, take_strings

    picks = data.draw(st.lists(st.sampled_from(pool), max_size=40))
    raw = [p.encode() for p in picks]
    letters = np.frombuffer(b"".join(raw), np.uint8)
    offsets = np.concatenate([[0], np.cumsum([len(r) for r in raw])]).astype(np.int64)
    keep, inverse = distinct_strings(letters, offsets)
    want = list(dict.fromkeys(raw))  # first copies, in input order
    assert [raw[k] for k in keep] == want
    assert [want[i] for i in inverse] == raw
    sub, sub_off = take_strings(letters, offsets, keep)
    assert [sub[a:b].tobytes() for a, b in zip(sub_off[:-1], sub_off[1:])] == want


def test_distinct_strings_never_merges_on_a_hash_collision():
    """Equal hashes with different bytes stay apart (every hash forced equal)."""
    from gamut.io.textcols import _first_copies

    raw = [b"ACGU", b"ACGA", b"ACGU", b"", b"acgu", b"ACGA", b""]
    letters = np.frombuffer(b"".join(raw), np.uint8)
    offsets = np.concatenate([[0], np.cumsum([len(r) for r in raw])]).astype(np.int64)
    hashes = np.zeros(len(raw), np.uint64)
    first = _first_copies(letters, offsets, hashes)
    assert first.tolist() == [0, 1, 0, 3, 4, 1, 3]


def test_repeated_fold_strings_get_their_own_energies(golden):
    """Strings folded once per distinct string: every copy gets the energy it gets alone, and
    strings that differ only in case (the tetraloop rule reads case) are not merged."""
    rng = np.random.default_rng(9)
    base = list(golden.sequence.sample(40, random_state=9))
    base += [s.lower() for s in base[:10]] + ["", "GGGGAAAACCCC", "GGGGaaaaCCCC"]
    seqs = [base[k] for k in rng.integers(0, len(base), 400)]
    got = E.duplex_energies_dcal(seqs, engine="compiled", threads=2)
    alone = {s: E.duplex_energies_dcal([s], engine="compiled")[0] for s in set(seqs)}
    assert np.array_equal(got, np.array([alone[s] for s in seqs]))


# ------------------------------------------------------------------------------------------------
# API behaviour
# ------------------------------------------------------------------------------------------------
def test_order_threads_and_empty():
    seqs = ["GGGGAAAACCCC", "", "ACGU", "GCGCGCAAAAGCGCGC", "XXXXXXX"]
    one = E.duplex_energies(seqs, threads=1)
    two = E.duplex_energies(seqs, threads=2)
    assert np.array_equal(one, two)
    assert one[1] == 0 and one[2] == 0 and one[4] == 0
    single = [E.duplex_energies([s])[0] for s in seqs]
    assert np.array_equal(one, single)
    assert E.duplex_energies([]).shape == (0,)


def test_vienna2004_is_viennarna_default():
    import RNA

    seqs = ["GGGGAAAACCCCAUGCAUGCUAGC", "ACGUACGUAGCUAGCUAGCAUGCAUCGAUCGACGUAGC"]
    got = E.duplex_energies(seqs, model="vienna2004", threads=1)
    want = [round(RNA.fold_compound(s).mfe()[1], 2) for s in seqs]
    assert np.allclose(got, want, atol=1e-9)


def test_errors():
    with pytest.raises(UsageError):
        E.duplex_energies(["ACGU"], model="turner2004")
    with pytest.raises(UsageError):
        E.duplex_energies(["ACGU"], model="vienna2004", engine="compiled")
    with pytest.raises(UsageError):
        E.duplex_energies(["ACGU"], engine="gpu")
    with pytest.raises(UsageError):
        E.duplex_energies("ACGU")
    with pytest.raises(InputError):
        E.duplex_energies(["ACGU", 5])
    with pytest.raises(UsageError):
        E.duplex_energies(["ACGU"], threads=0)
    with pytest.raises(InputError):
        E.structure_energies(["ACGU"], ["..."])


def test_energy_tables_cache_round_trip(tmp_path, monkeypatch):
    """The miranda tables read back from the on-disk cache equal the ones built through ViennaRNA."""
    from gamut.scanning.energy import tables as energy_params

    monkeypatch.setenv("GAMUT_CACHE_DIR", str(tmp_path))
    built = energy_params.energy_tables("miranda")  # builds and writes the cache
    assert list(tmp_path.glob("energy-tables-miranda-*.npz"))
    cached = energy_params.energy_tables("miranda")
    fresh = energy_params._build_energy_tables("miranda")
    for a, b, c in zip(built, cached, fresh):
        assert np.array_equal(np.asarray(a), np.asarray(b)) and np.array_equal(np.asarray(b), np.asarray(c))
    next(tmp_path.glob("*.npz")).write_bytes(b"broken")  # a damaged cache is rebuilt
    assert all(np.array_equal(np.asarray(a), np.asarray(b)) for a, b in zip(energy_params.energy_tables(), fresh))
