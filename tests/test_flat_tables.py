"""The kernels' flat tables (gamut.scanning.energy.tables.flat_tables) and special-hairpin keys,
which the energy, accessibility and Turner kernels all read their ViennaRNA tables through."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from gamut.scanning.energy.tables import flat_tables, loop_keys


@given(st.lists(arrays(np.int64, st.integers(0, 6), elements=st.integers(-2**31, 2**31 - 1)), min_size=1, max_size=5))
def test_each_table_is_found_at_its_offset(tables):
    parts = [(f"X{k}", t) for k, t in enumerate(tables)]
    values, defines = flat_tables(parts, "T", np.int32, total="T_ALL")
    assert values.dtype == np.int32 and not values.flags.writeable
    offsets = dict(d[2:].split("=") for d in defines)
    assert int(offsets["T_ALL"]) == values.size == sum(t.size for t in tables)
    for name, table in parts:
        start = int(offsets[f"T_{name}"])
        assert values[start:start + table.size].tolist() == table.tolist()


def test_a_table_that_does_not_fit_is_named():
    with pytest.raises(ValueError, match="table BIG does not fit int32"):
        flat_tables([("OK", np.array([1])), ("BIG", np.array([2**31]))], "T", np.int32)
    doubles, _ = flat_tables([("D", np.array([1e300]))], "T", np.float64)
    assert doubles.tolist() == [1e300]


def test_special_hairpins_are_base_5_numbers_of_their_codes():
    assert loop_keys("ACGU  UUUU", 4).tolist() == [1 * 125 + 2 * 25 + 3 * 5 + 4, 4 * 125 + 4 * 25 + 4 * 5 + 4]
    with pytest.raises(ValueError, match="unexpected special hairpin"):
        loop_keys("ACGUA", 4)
    with pytest.raises(ValueError, match="unexpected special hairpin"):
        loop_keys("ACGN", 4)
