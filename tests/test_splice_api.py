"""``gamut.splice`` API: defaults, scoring options, results, batch mode and bad inputs."""
from __future__ import annotations

import numpy as np
import pytest
from splice_helpers import brute_force, rescore

import gamut
from gamut.errors import InputError, UsageError
from gamut.splicing.api import splice_many
from gamut.splicing.model import ScoreParams, decode, encode, make_case

BASE = "TTTACGTACGGGGGGCCATGCATTTTTTGGAACCTTAAA"
EXONS = [(3, 10), (15, 23), (28, 36), (5, 18), (30, 33)]
TARGET = "ACGTACGCATGCAGAACCTT"


def codes(text):
    return encode(text)


def test_defaults_and_result_fields():
    result = gamut.splice(BASE, EXONS, TARGET, device="cpu")
    params = ScoreParams()
    assert (params.match, params.mismatch, params.gap) == (1, -1, -2)
    assert result.score == brute_force(codes(BASE), EXONS, codes(TARGET), params.matrix, params.gap)
    assert result.chain == [0, 1, 2]
    assert result.exons == [EXONS[k] for k in result.chain]
    assert rescore(result, codes(BASE), codes(TARGET), params.matrix, params.gap) == result.score
    assert result.alignment.base.replace("-", "") == "".join(BASE[s:e] for s, e in result.exons)
    assert result.alignment.target.replace("-", "") == TARGET
    assert result.alignment.cigar.count("N") == 2
    spans = result.target_spans
    assert spans[0][0] == 0 and spans[-1][1] == len(TARGET)
    assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:]))


@pytest.mark.parametrize("match,mismatch,gap", [(2, -3, -1), (5, -4, -10), (0, -1, -1)])
def test_scoring_options_override_defaults(match, mismatch, gap):
    params = ScoreParams(match, mismatch, gap)
    result = gamut.splice(BASE, EXONS, TARGET, match=match, mismatch=mismatch, gap=gap, device="cpu")
    assert result.score == brute_force(codes(BASE), EXONS, codes(TARGET), params.matrix, params.gap)
    assert rescore(result, codes(BASE), codes(TARGET), params.matrix, gap) == result.score


def test_custom_matrix_and_ambiguity_codes():
    matrix = np.full((4, 4), -2) + np.eye(4, dtype=int) * 5
    matrix[0, 2] = matrix[2, 0] = 1  # transitions milder
    params = ScoreParams(gap=-3, matrix=matrix)
    assert params.matrix[4].tolist() == [-2] * 5  # N scores the matrix minimum
    base = BASE.replace("GGGG", "NNRY")
    result = gamut.splice(base, EXONS, TARGET.lower().replace("t", "u"), gap=-3, matrix=matrix, device="cpu")
    assert result.score == brute_force(codes(base), EXONS, codes(TARGET), params.matrix, -3)


def test_reference_and_fast_engines_agree_via_api():
    a = gamut.splice(BASE, EXONS, TARGET, engine="reference")
    b = gamut.splice(BASE, EXONS, TARGET, engine="fast")
    assert (a.score, a.chain, a.alignment.base, a.alignment.target) == (b.score, b.chain, b.alignment.base, b.alignment.target)


def test_splice_many_batch_mode_matches_single_calls():
    rng = np.random.default_rng(0)
    cases = []
    for i in range(12):
        base = decode(rng.integers(0, 4, 80).astype(np.uint8))
        exons = [(int(s), int(s) + int(rng.integers(1, 15))) for s in rng.integers(0, 60, 6)]
        target = decode(rng.integers(0, 4, int(rng.integers(1, 30))).astype(np.uint8))
        cases.append((base, exons, target, f"c{i}"))
    seen = []
    results = splice_many(cases, device="cpu", batch_size=5, progress=seen.append)
    assert seen == [5, 5, 2]
    for (base, exons, target, name), r in zip(cases, results):
        single = gamut.splice(base, exons, target, device="cpu")
        assert (r.score, r.chain, r.name) == (single.score, single.chain, name)


@pytest.mark.parametrize(
    "exons,message",
    [
        ([(5, 5)], "exon 0"),
        ([(3, 2)], "exon 0"),
        ([(-1, 4)], "exon 0"),
        ([(0, 4), (10, 100)], "exon 1"),
        ([], "no candidate exons"),
    ],
)
def test_bad_exons_are_rejected(exons, message):
    with pytest.raises(InputError, match=message):
        gamut.splice(BASE, exons, TARGET, device="cpu")


def test_unsorted_and_overlapping_exons_are_accepted():
    shuffled = [EXONS[i] for i in (4, 2, 0, 3, 1)]
    a = gamut.splice(BASE, EXONS, TARGET, device="cpu")
    b = gamut.splice(BASE, shuffled, TARGET, device="cpu")
    assert a.score == b.score
    assert [shuffled[k] for k in b.chain] == [EXONS[k] for k in a.chain]


def test_bad_sequences_and_parameters():
    with pytest.raises(InputError, match="empty target"):
        gamut.splice(BASE, EXONS, "", device="cpu")
    with pytest.raises(InputError, match="empty base"):
        gamut.splice("", [(0, 1)], TARGET, device="cpu")
    with pytest.raises(InputError, match="unknown letter 'X' at position 3"):
        gamut.splice(BASE, EXONS, "ACXT", device="cpu")
    with pytest.raises(UsageError, match="gap must be negative"):
        gamut.splice(BASE, EXONS, TARGET, gap=0, device="cpu")
    with pytest.raises(UsageError, match="unknown engine"):
        gamut.splice(BASE, EXONS, TARGET, engine="magic")
    with pytest.raises(InputError, match="overflow"):
        make_case("A" * 30_000, [(0, 5)], "A" * 10, ScoreParams(match=10_000, mismatch=-10_000, gap=-10_000))
