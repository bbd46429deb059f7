"""Site types and context columns (docs/scan.md, "Site types, context and genome coordinates"):
checked against a plain-Python classifier written from the definitions, on every golden case and
on generated pairs with planted sites of every type; the ``--site-types`` filter."""
from __future__ import annotations

import math
import random
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gamut.errors import UsageError
from gamut.scanning.engines import make_engine
from gamut.scanning.fasta import SeqRecord, read_miranda_fasta
from gamut.scanning.params import SITE_TYPES, ScanParams
from gamut.scanning.pipeline.pairs import ScanInput
from gamut.scanning.pipeline.scan_loop import scan_chunks
from gamut.scanning.sinks import sink_class
from gamut.scanning.sinks.columns import CONTEXT_COLUMNS, HIT_COLUMNS
from gamut.scanning.sinks.spec import OutputSpec

CASES = sorted(p for p in (Path(__file__).parent / "data" / "miranda").iterdir() if p.is_dir())
_ARGS = {"-sc": ("score_threshold", int), "-en": ("energy_threshold", int), "-scale": ("scale", float),
         "-go": ("gap_open", int), "-ge": ("gap_extend", int), "-trim": ("trim", int)}
WC = {("A", "U"), ("U", "A"), ("G", "C"), ("C", "G")}


# -- the independent classifier --------------------------------------------------------------
def norm(letter: str) -> str:
    letter = letter.upper()
    return "U" if letter == "T" else letter


def classify(mirna: str, reference: str, ref_start: int, ref_end: int, aln_mirna: str, aln_map: str,
             aln_utr: str) -> dict:
    """The definitions of docs/scan.md, one hit at a time, from strings."""
    t1 = ref_end + (len(aln_utr) - len(aln_utr.rstrip("-")))

    def ref_at(t: int) -> str | None:
        return reference[t - 1] if 1 <= t <= len(reference) else None

    def matches(p: int) -> bool:
        r = ref_at(t1 - (p - 1))
        return p <= len(mirna) and r is not None and (norm(mirna[p - 1]), norm(r)) in WC

    m = {p: matches(p) for p in range(2, 9)}
    a1 = (ref_at(t1) or "").upper() == "A"
    if all(m[p] for p in range(2, 8)):
        kind = ("8mer" if a1 else "7mer-m8") if m[8] else ("7mer-A1" if a1 else "6mer")
    elif all(m[p] for p in range(3, 9)) and not m[2]:
        kind = "offset-6mer"
    else:
        kind = "none"
    # miRNA positions counted from the right end of the query line (position 1), gaps skipped.
    position, supp = 0, 0
    for q, mark in zip(reversed(aln_mirna), reversed(aln_map)):
        if q != "-":
            position += 1
            supp += 13 <= position <= 16 and mark == "|"
    around = [reference[t - 1] for t in range(max(1, ref_start - 30), min(len(reference), ref_end + 30) + 1)
              if not ref_start <= t <= ref_end]
    au = 100.0 * sum(norm(x) in "AU" for x in around) / len(around) if around else math.nan
    return {"site_type": kind, "t1": t1, "dist_to_end": min(ref_start - 1, len(reference) - ref_end),
            "supp_pairs": supp, "local_au": round(au, 2)}


# -- running scans ---------------------------------------------------------------------------
def scan_frame(queries: list[SeqRecord], references: list[SeqRecord], **params):
    """The API's DataFrame of a scan (its sink driven directly)."""
    scan_input = ScanInput(queries, references, ScanParams(**params))
    sink = sink_class(None)(OutputSpec(scan_input))
    return sink.render(scan_chunks(scan_input, make_engine("cpu")), -1)


def case_params(case: Path) -> dict:
    args = (case / "args.txt").read_text().split()
    params: dict = {"noenergy": True}
    k = 0
    while k < len(args):
        if args[k] in _ARGS:
            name, kind = _ARGS[args[k]]
            params[name] = kind(args[k + 1])
            k += 2
        else:
            params["strict"] = params.get("strict", False) or args[k] == "-strict"
            k += 1
    return params


def check_against_classifier(frame, queries: list[SeqRecord], references: list[SeqRecord], trim: int = 0) -> None:
    q = {r.id: r.sequence.decode("latin-1") for r in queries}
    r = {x.id: x.sequence.decode("latin-1")[: trim or None] for x in references}
    assert list(frame.columns[: len(HIT_COLUMNS) + len(CONTEXT_COLUMNS)]) == [*HIT_COLUMNS, *CONTEXT_COLUMNS]
    for row in frame.itertuples(index=False):
        want = classify(q[row.query_id], r[row.reference_id], row.ref_start, row.ref_end, row.aln_mirna,
                        row.aln_map, row.aln_utr)
        got = {"site_type": row.site_type, "dist_to_end": row.dist_to_end, "supp_pairs": row.supp_pairs,
               "local_au": row.local_au}
        want.pop("t1")
        assert got["site_type"] == want["site_type"], (row, want)
        assert got["dist_to_end"] == want["dist_to_end"] and got["supp_pairs"] == want["supp_pairs"], (row, want)
        assert (math.isnan(got["local_au"]) and math.isnan(want["local_au"])) or \
            abs(got["local_au"] - want["local_au"]) < 0.011, (row, want)


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.name)
def test_golden_cases_match_the_plain_classifier(case):
    params = case_params(case)
    queries = read_miranda_fasta(case / "query.fa")
    references = read_miranda_fasta(case / "reference.fa")
    frame = scan_frame(queries, references, **params)
    check_against_classifier(frame, queries, references, params.get("trim", 0))


# -- planted sites ---------------------------------------------------------------------------
COMPLEMENT = {"A": "U", "C": "G", "G": "C", "U": "A"}


def plant(mirna: str, kind: str, left: str, right: str, rng: random.Random) -> tuple[str, int]:
    """A reference with a site of ``kind`` for ``mirna``: its reverse complement (so the whole
    miRNA pairs) with the seed letters changed to make the type; returns it and t1 (1-based)."""
    site = [COMPLEMENT[x] for x in reversed(mirna)]  # site[-p] faces miRNA position p
    L = len(mirna)
    a1 = kind in ("8mer", "7mer-A1")
    site[L - 1] = "A" if a1 else rng.choice("CG")
    if kind in ("7mer-A1", "6mer"):
        site[L - 8] = mirna[7]  # the miRNA's own letter: no Watson-Crick or G:U pair
    if kind == "offset-6mer":
        site[L - 2] = mirna[1]
    reference = left + "".join(site) + right
    return reference, len(left) + L


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_planted_sites_are_found_with_their_type_and_position(data):
    rng = random.Random(data.draw(st.integers(0, 2**32 - 1)))
    kind = data.draw(st.sampled_from(SITE_TYPES[:5]))
    length = data.draw(st.integers(20, 24))
    mirna = "".join(rng.choice("ACGU") for _ in range(length))
    left = "".join(rng.choice("ACGU") for _ in range(data.draw(st.integers(10, 60))))
    right = "".join(rng.choice("ACGU") for _ in range(data.draw(st.integers(10, 60))))
    reference, t1 = plant(mirna, kind, left, right, rng)
    queries = [SeqRecord("miR-p", "", mirna.encode())]
    references = [SeqRecord("ref", "", reference.replace("U", "T").encode())]
    frame = scan_frame(queries, references, noenergy=True)
    check_against_classifier(frame, queries, references)
    rows = frame[(frame["ref_start"] <= t1 - 7) & (frame["ref_end"] >= t1 - 1)]
    # The planted site is among the hits over the seed's letters (another alignment of the random
    # flanks may overlap it too: miRanda reports both when their diagonals differ, e.g. miRNA
    # GGCUUGGCCGCUUAAUUGGU), with its type and position.
    found = [(row.site_type, classify(mirna, reference, row.ref_start, row.ref_end, row.aln_mirna, row.aln_map,
                                      row.aln_utr)["t1"]) for row in rows.itertuples()]
    assert (kind, t1) in found, (mirna, reference, kind, frame)


def test_site_at_the_reference_end_faces_positions_past_it():
    """A site whose miRNA 5' end runs past the reference's end: t1 counts the '-' flank letters,
    and positions outside the reference do not match."""
    mirna = "UGGAAUGUAAGGAAGUGUGUGG"
    site = "".join(COMPLEMENT[x] for x in reversed(mirna))
    reference = "ACGUACGUAC" + site[:-1]  # the letter facing miRNA position 1 is cut off
    frame = scan_frame([SeqRecord("m", "", mirna.encode())], [SeqRecord("r", "", reference.encode())],
                       noenergy=True)
    assert len(frame) == 1 and frame.loc[0, "aln_utr"].endswith("-")
    assert frame.loc[0, "site_type"] == "7mer-m8"  # t1 is outside: no A there
    assert frame.loc[0, "dist_to_end"] == 0


# -- the filter ------------------------------------------------------------------------------
def test_site_types_option_is_validated():
    assert ScanParams(site_types="6mer, 8mer").site_types == ("8mer", "6mer")
    assert ScanParams(site_types=["none"]).site_types == ("none",)
    assert ScanParams().site_types is None
    with pytest.raises(UsageError, match=r"unknown site type \('9mer'\); choose from 8mer,7mer-m8"):
        ScanParams(site_types="8mer,9mer")
    with pytest.raises(UsageError, match="none given"):
        ScanParams(site_types=" , ")


def test_site_types_filter_keeps_only_those_types():
    case = next(c for c in CASES if c.name == "real_trim")
    queries = read_miranda_fasta(case / "query.fa")
    references = read_miranda_fasta(case / "reference.fa")
    everything = scan_frame(queries, references, noenergy=True, trim=600)
    assert len(set(everything["site_type"])) >= 3
    wanted = ("8mer", "offset-6mer")
    some = scan_frame(queries, references, noenergy=True, trim=600, site_types=",".join(wanted))
    expected = everything[everything["site_type"].isin(wanted)].reset_index(drop=True)
    assert len(some) > 0
    assert some["ref_start"].tolist() == expected["ref_start"].tolist()
    assert some["query_id"].tolist() == expected["query_id"].tolist()


def test_site_filter_applies_to_the_miranda_text():
    case = next(c for c in CASES if c.name == "real_trim")
    queries = read_miranda_fasta(case / "query.fa")
    references = read_miranda_fasta(case / "reference.fa")
    everything = scan_frame(queries, references, noenergy=True, trim=600)
    scan_input = ScanInput(queries, references, ScanParams(noenergy=True, trim=600, site_types="8mer"))
    sink = sink_class("miranda")(OutputSpec(scan_input, query_name="q", reference_name="r"))
    text = sink.render(scan_chunks(scan_input, make_engine("cpu")), -1).decode("latin-1")
    hits = [line for line in text.splitlines() if line.startswith(">") and not line.startswith(">>")]
    assert len(hits) == int((everything["site_type"] == "8mer").sum()) > 0


def test_context_columns_are_computed_in_compiled_code_for_every_hit():
    case = next(c for c in CASES if c.name == "real_default")
    queries = read_miranda_fasta(case / "query.fa")
    references = read_miranda_fasta(case / "reference.fa")
    frame = scan_frame(queries, references, noenergy=True)
    assert str(frame["site_type"].dtype) == "category"
    assert list(frame["site_type"].cat.categories) == list(SITE_TYPES)
    assert (frame["dist_to_end"] >= 0).all() and frame["supp_pairs"].between(0, 4).all()
    assert np.nanmax(frame["local_au"]) <= 100
