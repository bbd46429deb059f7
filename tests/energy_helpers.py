"""Fold strings for the energy engine tests: golden rows and hypothesis strategies shaped the way
miRanda builds them (miRNA 3'->5' with lower-case flanks, the X linker, the site)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from hypothesis import strategies as st

DATA = Path(__file__).parent / "data" / "energy"


def golden_rows() -> pd.DataFrame:
    """All rows of the old library's golden energies (sequence, structure, energy)."""
    frames = [pd.read_csv(DATA / name, sep="\t", keep_default_na=False)
              for name in ("duplex_30C.tsv", "random_30C.tsv")]
    return pd.concat(frames, ignore_index=True)


def dcal(values) -> np.ndarray:
    return np.round(np.asarray(values, dtype=float) * 100).astype(np.int64)


# miRNA core upper case, flanks lower case; the site may carry T, N and lower case; the linker is
# seven X (sometimes with K letters around, which pair with X only).
_mirna = st.tuples(st.text("acgu", max_size=4), st.text("ACGU", min_size=8, max_size=24),
                   st.text("acgu", max_size=4)).map("".join)
_linker = st.sampled_from(["XXXXXXX", "XXXXXXX", "XXXXXXX", "KXXXXXXXK", "XXXKXXX", "xxxxxxx"])
_site = st.text("ACGTUacgtuNn-KRy", min_size=8, max_size=45)


@st.composite
def fold_strings(draw, min_len: int = 30, max_len: int = 80) -> str:
    """A miRanda-shaped fold string of min_len..max_len letters (every letter class)."""
    s = draw(_mirna) + draw(_linker) + draw(_site)
    if len(s) < min_len:
        s += draw(st.text("ACGUacgtN", min_size=min_len - len(s), max_size=min_len - len(s)))
    return s[:max_len]


any_letters = st.text("ACGUacguTtXxNn-KkRy", min_size=0, max_size=70)
