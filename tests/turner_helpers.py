"""ViennaRNA as the tests' reference for the Turner model, set up here without gamut's own code
(so that a test compares gamut with RNA, not gamut with itself), and a stand-in GPU engine."""
from __future__ import annotations

import math
import sys
import types

import numpy as np


def model(temperature=37.0, dangles=2, no_lp=False, max_bp_span=-1):
    import RNA

    md = RNA.md()
    md.temperature, md.dangles, md.noLP, md.max_bp_span = temperature, dangles, int(no_lp), max_bp_span
    return md


def as_rnafold_reads(sequence: str) -> str:
    """The sequence as RNAfold folds a record: upper case, T as U (RNA.fold_compound keeps a T,
    which then misses the special hairpins' bonuses)."""
    return sequence.upper().replace("T", "U")


def reference_mfe(sequence: str, **options) -> tuple[str, int]:
    """RNA's MFE structure and energy (integer dcal/mol)."""
    import RNA

    structure, energy = RNA.fold_compound(as_rnafold_reads(sequence), model(**options)).mfe()
    return structure, int(round(energy * 100))


def reference_pf(sequence: str, **options) -> tuple[float, np.ndarray]:
    """RNA's ensemble energy and the (n, n) upper-triangle pair probabilities."""
    import RNA

    fc = RNA.fold_compound(as_rnafold_reads(sequence), model(**options))
    _, energy = fc.mfe()
    fc.exp_params_rescale(energy)
    _, ensemble = fc.pf()
    return ensemble, np.triu(np.array(fc.bpp())[1:, 1:], 1)


def rnafold_text(sequence: str, header: str | None = None, partition: bool = False, **options) -> str:
    """What RNAfold 2.x prints for one record, each number from RNA's own functions (the layout of
    RNAfold's source: ``( %6.2f)``, `` [%6.2f]``, `` {%6.2f d=%.2f}``, the frequency line)."""
    import RNA

    fc = RNA.fold_compound(as_rnafold_reads(sequence), model(**options))
    structure, mfe = fc.mfe()
    lines = ([f">{header}"] if header is not None else []) + [sequence.replace("T", "U").replace("t", "u"),
                                                             f"{structure} ({mfe:6.2f})"]
    if partition:
        fc.exp_params_rescale(mfe)
        pf_line, ensemble = fc.pf()
        centroid, distance = fc.centroid()
        kt = fc.exp_params.kT / 1000.0
        lines += [f"{pf_line} [{ensemble:6.2f}]", f"{centroid} {{{fc.eval_structure(centroid):6.2f} d={distance:.2f}}}",
                  f" frequency of mfe structure in ensemble {math.exp((ensemble - mfe) / kt):g}; "
                  f"ensemble diversity {fc.mean_bp_distance():<6.2f}"]
    return "\n".join(lines) + "\n"


def install_standin_gpu(monkeypatch, *, broken: bool = False) -> list:
    """Make ``device="cuda"`` run a stand-in of the GPU kernels' modules (ViennaRNA, through the
    contract's ``mfe_batch`` / ``pf_batch``) on a machine without a GPU; returns the calls' log.
    ``broken`` returns an unbalanced structure, which must be caught."""
    from gamut.folding.turner import engines
    from gamut.folding.turner.results import PartitionResult

    calls: list = []

    def mfe_batch(sequences, options):
        calls.append(("mfe", len(sequences), options))
        folded = [reference_mfe(s, **_fields(options)) for s in sequences]
        structures = [s for s, _ in folded]
        if broken:
            structures[-1] = ")" + structures[-1][1:]
        return np.array([e for _, e in folded], np.int32), structures

    def mfe_batch_flat(sequences, options):
        energies, structures = mfe_batch(sequences, options)
        return energies, structures, None

    def pf_batch(sequences, options):
        calls.append(("pf", len(sequences), options))
        return [PartitionResult(*reference_pf(s, **_fields(options))) for s in sequences]

    for name, functions in (("gpu_mfe", (mfe_batch, mfe_batch_flat)), ("gpu_pf", (pf_batch,))):
        module = types.ModuleType(f"gamut.folding.turner.{name}")
        for function in functions:
            setattr(module, function.__name__, function)
        monkeypatch.setitem(sys.modules, module.__name__, module)
    monkeypatch.setattr(engines, "resolve_device", lambda device, analysis=None: "cuda" if device != "cpu" else "cpu")
    return calls


def _fields(options) -> dict:
    return dict(temperature=options.temperature, dangles=options.dangles, no_lp=options.no_lp,
                max_bp_span=options.max_bp_span)
