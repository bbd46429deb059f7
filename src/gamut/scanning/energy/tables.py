"""Energy parameters of miRanda 3.3a's bundled Vienna library, rebuilt from ViennaRNA's own tables.

miRanda folds at 30 C with the Turner 1999 set. The old library rescales the 37 C values to 30 C
with its own rules (spec 9.1), truncating to integers:

- purely entropic terms (loop initiation tables, multiloop terms, Ninio, the large-loop
  coefficient): ``G37 * f``;
- enthalpy-based terms (stacks, mismatches, dangles, 1x1/2x1/2x2 loops, tetraloop bonuses with one
  common enthalpy): ``H - (H - G37) * f``, and positive dangles become 0;
- the terminal AU/GU penalty is not rescaled;

with ``f = (T + 273.15) / 310.15``. :func:`miranda_parameter_file` writes those 30 C integers as a
ViennaRNA parameter file with enthalpies equal to the energies, so ViennaRNA's own rescaling
(``H - (H - G) * f``) leaves them unchanged; folding it at 30 C then only rescales the large-loop
coefficient, as ``lxc37 * f`` exactly like the old library.
The source values are ViennaRNA's shipped Turner 1999 file (``RNA.parameter_set_rna_turner1999``).
"""
from __future__ import annotations

import functools
import os
import re
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator, NamedTuple

import numpy as np

MIRANDA_TEMPERATURE = 30.0
KELVIN = 273.15
INF = 10_000_000  # ViennaRNA's "infinite" energy (dcal/mol)
MODELS = ("miranda", "vienna2004")

_PAIR_NAMES = ("CG", "GC", "GU", "UG", "AU", "UA")
_BASE_INDEX = {"A": 1, "C": 2, "G": 3, "U": 4}


def rescale_factor(temperature: float = MIRANDA_TEMPERATURE) -> float:
    """The old library's ``(T + 273.15) / (37 + 273.15)``."""
    return (temperature + KELVIN) / (37.0 + KELVIN)


def _parse(text: str) -> tuple[dict[str, list[list[str]]], list[str]]:
    """Sections of a ViennaRNA v2.0 parameter file as rows of tokens (comments removed)."""
    sections: dict[str, list[list[str]]] = {}
    order: list[str] = []
    current = None
    for line in text.splitlines():
        if line.startswith("# "):
            current = line[2:].strip()
            sections[current] = []
            order.append(current)
            continue
        tokens = re.sub(r"/\*.*?\*/", "", line).split()
        if current is not None and tokens:
            sections[current].append(tokens)
    return sections, order


def _number(token: str):
    if token == "INF":
        return None
    return float(token) if "." in token else int(token)


def _grid(sections: dict[str, list[list[str]]], name: str) -> list[list]:
    return [[_number(t) for t in row] for row in sections[name]]


def _map2(g_rows: list[list], h_rows: list[list], fn: Callable) -> list[list]:
    if [len(r) for r in g_rows] != [len(r) for r in h_rows]:
        raise ValueError("energy and enthalpy tables differ in shape")
    return [[fn(g, h) for g, h in zip(rg, rh)] for rg, rh in zip(g_rows, h_rows)]


def _old_rules(sections: dict[str, list[list[str]]], f: float) -> dict[str, list[list]]:
    """The 30 C integer tables (keyed by section name) under the old library's rules."""

    def enthalpic(g, h):
        return None if g is None else int(h - (h - g) * f)

    def entropic(g):
        return None if g is None else int(g * f)

    def dangle(g, h):
        # INF dangles (unknown neighbour) rescale to a huge positive number, which becomes 0.
        value = 1 if g is None else int(h - (h - g) * f)
        return 0 if value > 0 else value

    new: dict[str, list[list]] = {}
    for name in ("stack", "mismatch_hairpin", "int11", "int21", "int22"):
        new[name] = _map2(_grid(sections, name), _grid(sections, name + "_enthalpies"), enthalpic)
    # The old library has one interior mismatch table (also used for 1xn and 2x3 loops).
    interior = _map2(_grid(sections, "mismatch_internal"),
                     _grid(sections, "mismatch_internal_enthalpies"), enthalpic)
    for name in ("mismatch_internal", "mismatch_internal_1n", "mismatch_internal_23"):
        new[name] = interior
    for name in ("dangle5", "dangle3"):
        new[name] = _map2(_grid(sections, name), _grid(sections, name + "_enthalpies"), dangle)
    # With dangles=1 a stem with both neighbours unpaired gets dangle5 + dangle3 (each rescaled).
    d5, d3 = new["dangle5"], new["dangle3"]
    both = [[d5[t][i] + d3[t][j] for j in range(5)] for t in range(len(d5)) for i in range(5)]
    new["mismatch_multi"] = both
    new["mismatch_exterior"] = both
    for name in ("hairpin", "bulge", "internal"):
        new[name] = [[entropic(g) for g in row] for row in _grid(sections, name)]
    slope, _, cap = _grid(sections, "NINIO")[0]
    new["NINIO"] = [[entropic(slope), entropic(slope), cap]]
    cu, _, cc, _, ci, _ = _grid(sections, "ML_params")[0]
    new["ML_params"] = [[entropic(cu), entropic(cu), entropic(cc), entropic(cc),
                         entropic(ci), entropic(ci)]]
    duplex_init, _, terminal_au, _, lxc, lxc_h = _grid(sections, "Misc")[0]
    # ViennaRNA reads no LXC from the file: it uses lxc37 * f, the old library's rule.
    new["Misc"] = [[entropic(duplex_init), entropic(duplex_init), terminal_au, terminal_au,
                    lxc, lxc_h]]
    new["Tetraloops"] = _tetraloops(sections, new, f)
    new["Triloops"] = [row for row in sections["Triloops"]]
    new["Hexaloops"] = [row for row in sections["Hexaloops"]]
    if new["Triloops"] or new["Hexaloops"]:
        raise ValueError("unexpected triloop/hexaloop entries in the Turner 1999 set")
    return new


def _tetraloops(sections: dict[str, list[list[str]]], new: dict[str, list[list]],
                f: float) -> list[list]:
    """Total 30 C energies of the special tetraloops: hairpin(4) + mismatch + rescaled bonus.

    ViennaRNA's file stores totals at 37 C; the bonus is recovered by subtracting the loop and
    mismatch terms, and its enthalpy (the old library's single tetraloop enthalpy) likewise.
    """
    hp37 = [v for row in _grid(sections, "hairpin") for v in row]
    hp30 = [v for row in new["hairpin"] for v in row]
    mm37 = _grid(sections, "mismatch_hairpin")
    mmh = _grid(sections, "mismatch_hairpin_enthalpies")
    mm30 = new["mismatch_hairpin"]
    rows = []
    for loop, total37, total_h in sections["Tetraloops"]:
        ptype = _PAIR_NAMES.index(loop[0] + loop[5])
        row, col = ptype * 5 + _BASE_INDEX[loop[1]], _BASE_INDEX[loop[4]]
        bonus37 = int(total37) - hp37[4] - mm37[row][col]
        bonus_h = int(total_h) - mmh[row][col]
        bonus30 = int(bonus_h - (bonus_h - bonus37) * f)
        total30 = hp30[4] + mm30[row][col] + bonus30
        rows.append([loop, total30, total30])
    return rows


def _format(value) -> str:
    return "INF" if value is None else str(value)


@functools.lru_cache(maxsize=4)
def miranda_parameter_file(temperature: float = MIRANDA_TEMPERATURE) -> str:
    """ViennaRNA parameter file holding the old library's Turner 1999 energies at ``temperature``.

    Energies and enthalpies are equal, so ViennaRNA folding at ``temperature`` leaves them unchanged
    and rescales only the large-loop coefficient (the old library's way).
    """
    import RNA

    sections, order = _parse(RNA.parameter_set_rna_turner1999)
    new = _old_rules(sections, rescale_factor(temperature))
    lines = ["## RNAfold parameter file v2.0", ""]
    for name in order:
        if name == "END":
            continue
        base = name[: -len("_enthalpies")] if name.endswith("_enthalpies") else name
        lines.append("# " + name)
        for row in new.get(base, sections[name]):
            lines.append(" ".join(_format(v) for v in row))
        lines.append("")
    lines.append("# END")
    return "\n".join(lines) + "\n"


@contextmanager
def _vienna_defaults(model: str) -> Iterator[None]:
    """Temporarily make ``model``'s parameters ViennaRNA's defaults, restoring the previous ones."""
    import RNA

    with tempfile.TemporaryDirectory() as tmp:
        saved = os.path.join(tmp, "saved.par")
        RNA.params_save(saved)
        try:
            if model == "miranda":
                RNA.params_load_from_string(miranda_parameter_file(), "gamut-miranda-30C")
            else:
                RNA.params_load_RNA_Turner2004()
            yield
        finally:
            RNA.params_load(saved)


def vienna_model_details(model: str):
    """``RNA.md`` for a model: miranda = the old 30 C tables folded at 30 C, dangles=1;
    vienna2004 = ViennaRNA's defaults (Turner 2004, 37 C, dangles=2)."""
    import RNA

    check_model(model)
    md = RNA.md()
    md.temperature = MIRANDA_TEMPERATURE if model == "miranda" else 37.0
    md.dangles = 1 if model == "miranda" else 2
    md.special_hp = 1
    md.noLP = 0
    md.noGU = 0
    return md


def vienna_parameters(model: str):
    """A ViennaRNA ``RNA.param`` object for ``model`` (the library's defaults are left as found)."""
    import RNA

    md = vienna_model_details(model)
    with _vienna_defaults(model):
        return RNA.param(md)


def vienna_exp_parameters(model: str):
    """A ViennaRNA ``RNA.exp_param`` object (Boltzmann factors) for ``model``, with ViennaRNA's
    smoothing of them on (its default, as RNAplfold folds), whatever the library's global setting."""
    import RNA

    md = vienna_model_details(model)
    md.pf_smooth = 1
    with _vienna_defaults(model):
        return RNA.exp_param(md)


def check_model(model: str) -> None:
    """Raise UsageError for an unknown energy model name."""
    if model not in MODELS:
        from gamut.errors import UsageError

        raise UsageError(f"unknown energy model {model!r} (choose from {', '.join(MODELS)})")


class EnergyTables(NamedTuple):
    """Integer energy tables (dcal/mol) as ViennaRNA holds them, for the compiled engine."""

    stack: np.ndarray          # [8, 8]
    hairpin: np.ndarray        # [31]
    bulge: np.ndarray          # [31]
    interior: np.ndarray       # [31]
    mismatch_h: np.ndarray     # [8, 5, 5]
    mismatch_i: np.ndarray     # [8, 5, 5]
    dangle5: np.ndarray        # [8, 5]
    dangle3: np.ndarray        # [8, 5]
    int11: np.ndarray          # [8, 8, 5, 5]
    int21: np.ndarray          # [8, 8, 5, 5, 5]
    int22: np.ndarray          # [8, 8, 5, 5, 5, 5]
    scalars: np.ndarray        # ninio, max_ninio, ml_base, ml_closing, ml_intern, terminal_au
    lxc: float
    tetraloops: np.ndarray     # [k, 6] uint8 letters (closing pair + loop, upper case, U)
    tetraloop_e: np.ndarray    # [k]


def vienna_table(value, shape: tuple[int, ...], dtype=np.int64) -> np.ndarray:
    """A copy of a ViennaRNA table (ints, or doubles with ``dtype`` float64) of ``shape``: SWIG
    exposes small ones as tuples, larger ones as C pointers."""
    if type(value).__name__ == "SwigPyObject":
        import ctypes

        count = int(np.prod(shape))
        c_type = ctypes.c_double if np.dtype(dtype).kind == "f" else ctypes.c_int
        view = (c_type * count).from_address(int(value))
        arr = np.ctypeslib.as_array(view).astype(dtype).reshape(shape)
    else:
        arr = np.array(value, dtype=dtype)
    if arr.shape != shape:
        raise ValueError(f"unexpected ViennaRNA table shape {arr.shape}, wanted {shape}")
    return arr


def flat_tables(parts: list[tuple[str, np.ndarray]], prefix: str, dtype,
                total: str | None = None) -> tuple[np.ndarray, list[str]]:
    """Tables end to end in one read-only buffer of ``dtype`` for a kernel, and where each begins as
    ``-D{prefix}_{NAME}={offset}`` compiler options (and ``-D{total}={size}`` when named). An
    integer table whose values do not fit ``dtype`` is an error naming it."""
    arrays, defines, offset = [], [], 0
    bounds = np.iinfo(dtype) if np.dtype(dtype).kind in "iu" else None
    for name, table in parts:
        flat = np.ascontiguousarray(table).ravel()
        if bounds is not None and flat.size and (flat.min() < bounds.min or flat.max() > bounds.max):
            raise ValueError(f"table {name} does not fit {np.dtype(dtype).name}")
        defines.append(f"-D{prefix}_{name}={offset}")
        arrays.append(flat.astype(dtype))
        offset += flat.size
    if total is not None:
        defines.append(f"-D{total}={offset}")
    values = np.concatenate(arrays)
    values.setflags(write=False)
    return values, defines


def loop_keys(loops: str, width: int) -> np.ndarray:
    """ViennaRNA's special hairpins (a string of closing pair and loop, ``width`` letters each) as
    base-5 numbers of their letters' codes (A, C, G, U: 1..4), as the kernels key them."""
    codes = {"A": 1, "C": 2, "G": 3, "U": 4}
    keys = []
    for loop in loops.split():
        if len(loop) != width or not set(loop) <= set(codes):
            raise ValueError(f"unexpected special hairpin {loop!r} (wanted {width} letters of ACGU)")
        key = 0
        for letter in loop:
            key = key * 5 + codes[letter]
        keys.append(key)
    return np.array(keys, np.int64)


def _int_array(value, shape: tuple[int, ...]) -> np.ndarray:
    """A ViennaRNA energy table as int32, its "infinite" entries at :data:`INF`."""
    return np.minimum(vienna_table(value, shape), INF).astype(np.int32)


def _cache_file() -> Path | None:
    """Where the built miranda tables are kept between runs (building them evaluates every
    tabulated loop through ViennaRNA, too slow for every process start):
    :func:`gamut.cache.cache_root`, keyed by the ViennaRNA version and this module's source."""
    import hashlib
    from importlib import metadata

    try:
        version = metadata.version("ViennaRNA")
    except metadata.PackageNotFoundError:
        return None
    from gamut.cache import cache_root

    root = cache_root()
    key = hashlib.sha256(Path(__file__).read_bytes() + version.encode()).hexdigest()[:16]
    return root / f"energy-tables-miranda-{key}.npz"


def energy_tables(model: str = "miranda") -> EnergyTables:
    """Tables for the compiled dangles=1 engine (only the miranda model is supported there);
    built through ViennaRNA once and then read from a small on-disk cache."""
    if model != "miranda":
        check_model(model)
        raise ValueError(f"the compiled engine implements the miranda model only, not {model!r}")
    cache = _cache_file()
    if cache is not None and cache.exists():
        try:
            with np.load(cache) as data:
                return EnergyTables(**{f: (float(data[f]) if f == "lxc" else data[f]) for f in EnergyTables._fields})
        except (OSError, ValueError, KeyError):
            pass  # a damaged cache file is rebuilt below
    tables = _build_energy_tables(model)
    if cache is not None:
        try:
            cache.parent.mkdir(parents=True, exist_ok=True)
            tmp = cache.with_name(f".{cache.name}.{os.getpid()}.tmp.npz")
            np.savez(tmp, **tables._asdict())
            os.replace(tmp, cache)
        except OSError:
            pass  # read-only home: build every time
    return tables


def _build_energy_tables(model: str) -> EnergyTables:
    P = vienna_parameters(model)  # kept alive while its C tables are copied
    ninio = np.array(P.ninio, dtype=np.int64)
    loops = P.Tetraloops.split()
    scalars = np.array([ninio[2], _max_ninio(), P.MLbase, P.MLclosing, P.MLintern[1],
                        P.TerminalAU], dtype=np.int32)
    if len(set(P.MLintern[1:7])) != 1:
        raise ValueError("per-type multiloop terms are not supported")
    return EnergyTables(
        stack=_int_array(P.stack, (8, 8)),
        hairpin=_int_array(P.hairpin, (31,)),
        bulge=_int_array(P.bulge, (31,)),
        interior=_int_array(P.internal_loop, (31,)),
        mismatch_h=_int_array(P.mismatchH, (8, 5, 5)),
        mismatch_i=_int_array(P.mismatchI, (8, 5, 5)),
        dangle5=_int_array(P.dangle5, (8, 5)),
        dangle3=_int_array(P.dangle3, (8, 5)),
        int11=_int_array(P.int11, (8, 8, 5, 5)),
        int21=_int_array(P.int21, (8, 8, 5, 5, 5)),
        int22=_int_array(P.int22, (8, 8, 5, 5, 5, 5)),
        scalars=scalars,
        lxc=float(P.lxc),
        tetraloops=np.array([list(s.encode()) for s in loops], dtype=np.uint8).reshape(-1, 6),
        tetraloop_e=np.array(P.Tetraloop_E[: len(loops)], dtype=np.int32),
    )


def _max_ninio() -> int:
    """MAX_NINIO of the Turner 1999 file (not rescaled)."""
    import RNA

    sections, _ = _parse(RNA.parameter_set_rna_turner1999)
    return int(_grid(sections, "NINIO")[0][2])


def tetraloop_energy_table(model: str = "miranda") -> dict[str, int]:
    """Special tetraloop (closing pair + loop) -> total hairpin energy in dcal/mol."""
    P = vienna_parameters(model)
    loops = P.Tetraloops.split()
    return dict(zip(loops, (int(e) for e in P.Tetraloop_E[: len(loops)])))
