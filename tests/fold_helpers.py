"""Independent checks for folding tests: brute-force optimum and structure validation."""
from __future__ import annotations

from functools import lru_cache

PAIRS = {("A", "U"), ("U", "A"), ("G", "C"), ("C", "G"), ("G", "U"), ("U", "G")}


def rna(sequence: str) -> str:
    return sequence.upper().replace("T", "U")


def brute_force_pairs(sequence: str, min_loop: int) -> int:
    """Largest pair count over every non-crossing structure, enumerated one by one (tiny inputs)."""
    s = rna(sequence)

    def counts(i: int, j: int):
        """Yield the pair count of every structure on s[i..j]."""
        if i >= j:
            yield 0
            return
        yield from counts(i + 1, j)  # s[i] unpaired
        for k in range(i + min_loop + 1, j + 1):
            if (s[i], s[k]) in PAIRS:
                inside = list(counts(i + 1, k - 1))
                for right in counts(k + 1, j):
                    for left in inside:
                        yield 1 + left + right

    return max(counts(0, len(s) - 1))


def slow_max_pairs(sequence: str, min_loop: int) -> int:
    """Memoised 'first base unpaired or paired with k' recurrence (a different decomposition)."""
    return slow_interval_pairs(sequence, min_loop)(0, len(sequence) - 1) if sequence else 0


def slow_interval_pairs(sequence: str, min_loop: int):
    """``best(i, j)``: the maximum pair count of ``sequence[i..j]`` by the slow recurrence."""
    s = rna(sequence)

    @lru_cache(maxsize=None)
    def best(i: int, j: int) -> int:
        if j - i < min_loop + 1:
            return 0
        value = best(i + 1, j)
        for k in range(i + min_loop + 1, j + 1):
            if (s[i], s[k]) in PAIRS:
                value = max(value, 1 + best(i + 1, k - 1) + best(k + 1, j))
        return value

    return best


def check_structure(sequence: str, structure: str, pairs: int, min_loop: int) -> None:
    """Assert ``structure`` is balanced, non-crossing, pairs only AU/GC/GU with loops >= min_loop."""
    s = rna(sequence)
    assert len(structure) == len(s)
    assert set(structure) <= set("(.)")
    stack: list[int] = []
    found = 0
    for pos, ch in enumerate(structure):
        if ch == "(":
            stack.append(pos)
        elif ch == ")":
            assert stack, f"unmatched ')' at {pos}"
            i = stack.pop()
            assert (s[i], s[pos]) in PAIRS, f"{s[i]}{s[pos]} at {i},{pos} cannot pair"
            assert pos - i - 1 >= min_loop, f"loop of {pos - i - 1} < {min_loop} at {i},{pos}"
            found += 1
    assert not stack, "unmatched '('"
    assert found == pairs
