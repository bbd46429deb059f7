"""ViennaRNA's answers for the Turner MFE tests (host build and GPU): the minimum free energy of a
sequence as RNAfold reads it (T as U, either case), whether its optimal structure is unique, and
the energy ViennaRNA gives a structure; plus the test sets (miRBase's human hairpins, random RNAs)."""
from __future__ import annotations

import gzip
import random
from pathlib import Path

from gamut.folding.turner.options import TurnerOptions

DATA = Path(__file__).resolve().parent / "data" / "fold"
#: The options every set is folded with: the default, then one change each, then some together.
OPTION_SETS = (
    TurnerOptions(),
    TurnerOptions(dangles=0),
    TurnerOptions(no_lp=True),
    TurnerOptions(temperature=25.0),
    TurnerOptions(temperature=50.0),
    TurnerOptions(max_bp_span=10),
    TurnerOptions(temperature=30.0, dangles=0, no_lp=True, max_bp_span=40),
)
#: Longest sequence whose optimal structure's uniqueness is checked (subopt with delta 0).
UNIQUE_UP_TO = 300


def rnafold_letters(sequence: str) -> str:
    """The sequence as RNAfold reads it (its default T-to-U conversion; upper case)."""
    return sequence.upper().replace("T", "U")


def dcal(kcal: float) -> int:
    return int(round(kcal * 100))


def check_folds(sequences: list[str], options: TurnerOptions, energies, structures: list[str]) -> None:
    """Assert: every energy is ViennaRNA's MFE (integer dcal/mol); every structure has that energy by
    ViennaRNA's evaluation; and it is ViennaRNA's own where the optimum is unique (short ones)."""
    import RNA

    md = options.model_details()
    assert len(energies) == len(structures) == len(sequences)
    for x, (seq, energy, structure) in enumerate(zip(sequences, energies, structures)):
        if not seq:  # ViennaRNA takes no empty sequence
            assert int(energy) == 0 and structure == ""
            continue
        fc = RNA.fold_compound(rnafold_letters(seq), md)
        ref_structure, ref_energy = fc.mfe()
        ref = dcal(ref_energy)
        where = f"sequence {x} ({len(seq)} nt, {options}): {seq}"
        assert int(energy) == ref, f"{where}: energy {int(energy)} != ViennaRNA's {ref}"
        assert len(structure) == len(seq) and set(structure) <= set("().")
        assert dcal(fc.eval_structure(structure)) == ref, f"{where}: {structure} is not optimal ({ref_structure})"
        if structure != ref_structure and len(seq) <= UNIQUE_UP_TO:
            optimal = fc.subopt(0)
            assert len(optimal) > 1, f"{where}: {structure} != {ref_structure}, the only optimal structure"


def hsa_hairpins() -> list[tuple[str, str]]:
    """miRBase's human hairpins (names and sequences; committed under tests/data/fold)."""
    records, name, parts = [], None, []
    with gzip.open(DATA / "mirbase_hsa_hairpins.fa.gz", "rt") as handle:
        for line in handle:
            line = line.strip()
            if line.startswith(">"):
                if name is not None:
                    records.append((name, "".join(parts)))
                name, parts = line[1:], []
            elif line:
                parts.append(line)
    if name is not None:
        records.append((name, "".join(parts)))
    return records


def random_rnas(count: int, low: int, high: int, seed: int) -> list[str]:
    """``count`` random RNAs of ``low`` .. ``high`` letters (A C G U)."""
    rng = random.Random(seed)
    return ["".join(rng.choice("ACGU") for _ in range(rng.randint(low, high))) for _ in range(count)]
