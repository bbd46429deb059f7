"""gamut.numerals: the one number parser of every option, and argparse taking ``-1e9`` as a value."""
from __future__ import annotations

import argparse
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from gamut.cli import OneLineParser, build_parser
from gamut.errors import UsageError
from gamut.numerals import NEGATIVE_NUMBER, WHOLE_MAX, NumberError, number, number_type, parse_number


def written(n: int, style: int, zeros: int) -> str:
    """The whole number ``n`` written in one of several styles that all mean it."""
    sign = "-" if n < 0 else ""
    digits = str(abs(n))
    if style == 0:
        return str(n)
    if style == 1:
        return f"{sign or '+'}{'0' * zeros}{digits}"
    if style == 2:
        return f"{n}.{'0' * zeros}"
    if style == 3:  # mantissa and exponent: 1234 as 1.234e3, 1234000e-3, ...
        return f"{sign}{digits[0]}.{digits[1:] or '0'}e{len(digits) - 1}"
    if style == 4:
        return f"{sign}{digits}{'0' * zeros}E-{zeros}"
    return f"  {n}\t"


@given(st.integers(-WHOLE_MAX, WHOLE_MAX), st.integers(0, 5), st.integers(0, 4))
def test_whole_numbers_in_every_style(n, style, zeros):
    text = written(n, style, zeros)
    assert parse_number(text, whole=True) == n and type(parse_number(text, whole=True)) is int
    assert parse_number(text) == float(n)


@given(st.floats(allow_nan=False, allow_infinity=False), st.sampled_from(["{!r}", "{:e}", "{:.17g}", "{:+.3E}", "{:f}"]))
def test_reals_read_as_python_reads_their_text(x, style):
    text = style.format(x)
    if not math.isfinite(float(text)):  # rounded past the largest double: refused
        with pytest.raises(NumberError, match="expected a finite number"):
            parse_number(text)
        return
    assert parse_number(text) == float(text)
    if style == "{!r}":
        assert parse_number(text) == x  # round trip


@pytest.mark.parametrize("text, whole, expected", [
    ("2e9", True, 2_000_000_000), ("2E+9", True, 2_000_000_000), ("3.0", True, 3), ("-0", True, 0),
    ("1.5e1", True, 15), ("12500e-2", True, 125), (".5", False, 0.5), ("5.", False, 5.0), ("+.5e-1", False, 0.05),
    ("-2.5e1", False, -25.0), ("1e-400", False, 0.0), ("20000000000000000000001", False, 2e22),
])
def test_accepted(text, whole, expected):
    assert parse_number(text, whole=whole) == expected


def test_whole_numbers_are_read_exactly():
    """Not through a double, which would round 2**53 + 1 to 2**53."""
    assert parse_number("9007199254740993", whole=True) == 2**53 + 1
    assert parse_number("9.007199254740993e15", whole=True) == 2**53 + 1
    assert parse_number("9223372036854775807", whole=True) == WHOLE_MAX
    assert parse_number("92233720368547758.07e2", whole=True) == WHOLE_MAX


@pytest.mark.parametrize("text, whole, message", [
    ("abc", False, "expected a number, got 'abc'"),
    ("", True, "expected a whole number, got ''"),
    ("4x", False, "expected a number, got '4x'"),
    ("1_000", True, "expected a whole number, got '1_000'"),
    ("1,000", False, "expected a number, got '1,000'"),
    ("0x10", True, "expected a whole number, got '0x10'"),
    ("\u0663", True, "expected a whole number, got '\u0663'"),  # an Arabic-Indic three: Python's int() reads it
    ("e5", False, "expected a number, got 'e5'"),
    ("1e", False, "expected a number, got '1e'"),
    ("1.5", True, "expected a whole number, got '1.5'"),
    ("1e-3", True, "expected a whole number, got '1e-3'"),
    ("nan", False, "expected a finite number, got 'nan'"),
    ("-Infinity", False, "expected a finite number, got '-Infinity'"),
    ("inf", True, "expected a whole number, got 'inf'"),
    ("1e999", False, "expected a finite number, got '1e999'"),
    ("1e30", True, f"expected a whole number from -{WHOLE_MAX} to {WHOLE_MAX}, got '1e30'"),
    ("-1e99999999", True, f"expected a whole number from -{WHOLE_MAX} to {WHOLE_MAX}, got '-1e99999999'"),
    ("1\n2", True, "expected a whole number, got '1\\n2'"),  # one line whatever the text holds
])
def test_refused(text, whole, message):
    with pytest.raises(NumberError) as caught:
        parse_number(text, whole=whole)
    assert str(caught.value) == message


@pytest.mark.parametrize("text, rule, message", [
    ("0", dict(whole=True, at_least=1), "expected a whole number of at least 1, got '0'"),
    ("-1", dict(at_least=0), "expected a number of at least 0, got '-1'"),
    ("nan", dict(at_least=0), "expected a finite number of at least 0, got 'nan'"),
    ("2.5", dict(at_most=2), "expected a number of at most 2, got '2.5'"),
    ("0.5", dict(at_least=0.75, at_most=2), "expected a number from 0.75 to 2, got '0.5'"),
    ("1e19", dict(whole=True, at_least=1), f"expected a whole number from 1 to {WHOLE_MAX}, got '1e19'"),
])
def test_bounds(text, rule, message):
    with pytest.raises(NumberError) as caught:
        parse_number(text, **rule)
    assert str(caught.value) == message
    assert parse_number("1", **rule) == 1  # within the bounds


def test_values_from_python():
    assert parse_number(np.int64(5), whole=True) == 5 and parse_number(2.0, whole=True) == 2
    assert parse_number(np.float32(2.5)) == 2.5 and parse_number(Fraction(1, 4)) == 0.25 and parse_number(3) == 3.0
    for value, whole in ((True, True), (2.5, True), (float("nan"), False), (float("inf"), False), (10**400, False),
                         (None, False), ("x", False), ([1], True)):
        with pytest.raises(NumberError):
            parse_number(value, whole=whole)


def test_errors_name_the_option():
    with pytest.raises(UsageError, match="^--retries: expected a whole number of at least 0, got '-1'$"):
        number("-1", "--retries", whole=True, at_least=0)
    convert = number_type(whole=True)
    with pytest.raises(argparse.ArgumentTypeError, match="^expected a whole number, got 'x'$"):
        convert("x")


@pytest.mark.parametrize("text", ["-1e9", "-2.5e1", "-9", "-.5", "-5.", "-1E+3", "-inf", "-NaN", "-Infinity"])
def test_negative_numbers_are_values(text):
    assert NEGATIVE_NUMBER.match(text)


@pytest.mark.parametrize("text", ["-sc", "-e5", "--1", "-1e", "-1x", "-", "-W", "-u", "-in", "-1e9 "])
def test_options_are_not_negative_numbers(text):
    assert not NEGATIVE_NUMBER.match(text)


@pytest.mark.parametrize("joined", [False, True])
def test_negative_values_with_exponents_after_options(joined):
    """argparse's own pattern took -1e9 for an option ('expected one argument'); OneLineParser and
    its sub-parsers take it as the option's value, written --opt VALUE or --opt=VALUE."""
    options = {"--score-threshold": "-1e9", "--energy-threshold": "-2.5e1", "--gap-open": "-9", "--scale": "-.5E1",
               "--gap-extend": "-4e0"}
    argv = ["scan", "q.fa", "r.fa"]
    for option, value in options.items():
        argv += [f"{option}={value}"] if joined else [option, value]
    args = build_parser().parse_args(argv)
    assert (args.score_threshold, args.energy_threshold, args.gap_open, args.scale, args.gap_extend) == (
        -1e9, -25.0, -9, -5.0, -4)
    assert build_parser().parse_args(["scan", "q.fa", "r.fa", "-sc", "-1e9"]).score_threshold == -1e9
    parser = OneLineParser(prog="p")
    parser.add_argument("--x", type=number_type())
    assert parser.parse_args(["--x", "-1e-3"]).x == -0.001


def test_negative_non_numbers_after_options_still_need_a_value(capsys):
    with pytest.raises(SystemExit) as caught:
        build_parser().parse_args(["scan", "q.fa", "r.fa", "--score-threshold", "--noenergy"])
    assert caught.value.code == 2
    assert "argument --score-threshold/-sc: expected one argument" in capsys.readouterr().err


def test_nan_after_an_option_is_refused_as_a_number(capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args(["scan", "q.fa", "r.fa", "--energy-threshold", "-nan"])
    assert "expected a finite number, got '-nan'" in capsys.readouterr().err


@given(st.integers(-(2**53), 2**53))
def test_whole_reals_are_floats_of_the_same_value(n):
    assert parse_number(str(n)) == n and isinstance(parse_number(str(n)), float)
    assert parse_number(f"{n}e-3") == float(f"{n}e-3")


def test_env_switch_reads_on_and_off_words_and_refuses_others(monkeypatch):
    from gamut.numerals import env_switch

    monkeypatch.delenv("GAMUT_TEST_SWITCH", raising=False)
    assert env_switch("GAMUT_TEST_SWITCH", True) is True and env_switch("GAMUT_TEST_SWITCH", False) is False
    for word, want in (("0", False), ("Off", False), ("false", False), ("no", False), ("1", True), ("ON", True),
                       ("yes", True), (" true ", True), ("", True)):
        monkeypatch.setenv("GAMUT_TEST_SWITCH", word)
        assert env_switch("GAMUT_TEST_SWITCH", True) is want, word
    monkeypatch.setenv("GAMUT_TEST_SWITCH", "maybe")
    with pytest.raises(UsageError, match="GAMUT_TEST_SWITCH"):
        env_switch("GAMUT_TEST_SWITCH", True)
