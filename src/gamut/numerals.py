"""Numbers given as options: the one parser every numeric option of every ``gamut`` command uses.

A numeral is an optional sign, decimal digits with an optional point and an optional exponent:
``140``, ``-20.5``, ``+.5``, ``5.``, ``2e9``, ``-2.5E1`` (spaces around it are ignored). A *whole*
number is one whose value is whole, however it is written: ``2e9`` and ``3.0`` are, ``1.5`` is
not. Refused, each with a one-line message that names the option and the text: ``nan``, ``inf``
and numbers beyond a double's range (no option means them), digit separators (``1_000``,
``1,000``: a comma also separates list items, as in ``--gpus 0,1``), hexadecimal, and anything
after the number (``4x``).

Written here rather than with ``float()``/``int()`` on the text: those accept ``nan``,
``infinity`` and ``1_000``, and ``int`` refuses ``2e9``; whole numbers are read exactly
(:class:`decimal.Decimal`), never through a double that would round ``2e22 + 1``.
"""
from __future__ import annotations

import math
import numbers
import os
import re
from decimal import Decimal
from typing import Callable, Union

from gamut.errors import UsageError

Number = Union[int, float]

_UNSIGNED = r"(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
_NON_FINITE = r"(?:nan|inf(?:inity)?)"
#: A numeral as this module reads it (after the spaces around it are stripped).
NUMERAL = re.compile(rf"[+-]?{_UNSIGNED}")
#: What a command line means as a negative number rather than an option (``-1e9``, ``-.5``; also
#: ``-nan`` and ``-inf``, so that they are refused as numbers): :class:`gamut.cli.OneLineParser`.
NEGATIVE_NUMBER = re.compile(rf"-(?:{_UNSIGNED}|{_NON_FINITE})$", re.IGNORECASE)
_NAN_OR_INF = re.compile(rf"[+-]?{_NON_FINITE}", re.IGNORECASE)
#: The largest whole number an option takes (the engines count in 64-bit integers).
WHOLE_MAX = 2**63 - 1
#: Decimal exponents beyond this are out of any double's range (and never whole numbers we take).
_LARGEST_EXPONENT = 400


class NumberError(ValueError):
    """A value that is not the number an option takes; the message says what was expected."""


def parse_number(value: object, *, whole: bool = False, at_least: Number | None = None,
                 at_most: Number | None = None) -> Number:
    """``value`` (text, or a number from the Python API) as a number: an ``int`` when ``whole``,
    else a ``float``, within ``[at_least, at_most]`` where given. Raises :class:`NumberError`
    (``expected a whole number of at least 1, got '0'``)."""
    rule = _Rule(whole, at_least, at_most)
    number = _read_text(value, rule) if isinstance(value, str) else _read_value(value, rule)
    if (at_least is not None and number < at_least) or (at_most is not None and number > at_most):
        raise rule.error(value)
    if whole and abs(number) > WHOLE_MAX:
        raise rule.in_64_bits().error(value)
    return number


def number(value: object, option: str, *, whole: bool = False, at_least: Number | None = None,
           at_most: Number | None = None) -> Number:
    """:func:`parse_number`, a failure raised as a one-line :class:`UsageError` naming ``option``
    (``--retries: expected a whole number of at least 0, got '-1'``)."""
    try:
        return parse_number(value, whole=whole, at_least=at_least, at_most=at_most)
    except NumberError as exc:
        raise UsageError(f"{option}: {exc}") from None


def env_count(name: str, default: int, *, at_most: int | None = None) -> int:
    """A whole count of at least 1 (and at most ``at_most``) from environment variable ``name``;
    ``default`` when it is unset or empty; else a one-line :class:`UsageError` naming the variable."""
    raw = os.environ.get(name, "").strip()
    return int(number(raw, name, whole=True, at_least=1, at_most=at_most)) if raw else default


def env_switch(name: str, default: bool) -> bool:
    """An on/off setting from environment variable ``name`` (0/no/off/false or 1/yes/on/true, any
    case); ``default`` when it is unset or empty; else a one-line :class:`UsageError` naming it."""
    raw = os.environ.get(name, "").strip().lower()
    if not raw:
        return default
    if raw in ("0", "no", "off", "false"):
        return False
    if raw in ("1", "yes", "on", "true"):
        return True
    raise UsageError(f"{name} must be 0/no/off/false or 1/yes/on/true, got '{os.environ[name]}'")


def number_type(*, whole: bool = False, at_least: Number | None = None,
                at_most: Number | None = None) -> Callable[[str], Number]:
    """An argparse ``type=`` reading the option's text with :func:`parse_number` (argparse names
    the option: ``argument --retries: expected a whole number of at least 0, got '-1'``)."""
    import argparse

    def convert(text: str) -> Number:
        try:
            return parse_number(text, whole=whole, at_least=at_least, at_most=at_most)
        except NumberError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    convert.__name__ = "whole number" if whole else "number"
    return convert


def shown(value: object) -> str:
    """``value`` as an error message quotes it: on one line whatever it holds."""
    text = value if isinstance(value, str) else str(value)
    return f"'{text}'" if text.isprintable() else ascii(text)


class _Rule:
    """What an option takes, and the message when a value is not that."""

    def __init__(self, whole: bool, at_least: Number | None, at_most: Number | None) -> None:
        self.whole, self.at_least, self.at_most = whole, at_least, at_most

    def in_64_bits(self) -> _Rule:
        """The rule with the 64-bit range of whole numbers as bounds where it has none."""
        return _Rule(self.whole, -WHOLE_MAX if self.at_least is None else self.at_least,
                     WHOLE_MAX if self.at_most is None else self.at_most)

    def error(self, value: object, finite: bool = False) -> NumberError:
        kind = "a whole number" if self.whole else "a finite number" if finite else "a number"
        if self.at_least is not None and self.at_most is not None:
            kind += f" from {_bound(self.at_least)} to {_bound(self.at_most)}"
        elif self.at_least is not None:
            kind += f" of at least {_bound(self.at_least)}"
        elif self.at_most is not None:
            kind += f" of at most {_bound(self.at_most)}"
        return NumberError(f"expected {kind}, got {shown(value)}")


def _bound(x: Number) -> str:
    return str(int(x)) if float(x).is_integer() and abs(x) < 2**64 else repr(float(x))


def _read_text(text: str, rule: _Rule) -> Number:
    stripped = text.strip()
    if _NAN_OR_INF.fullmatch(stripped):
        raise rule.error(text, finite=True)
    if not NUMERAL.fullmatch(stripped):
        raise rule.error(text)
    exact = Decimal(stripped)
    too_large = exact.adjusted() > _LARGEST_EXPONENT
    if rule.whole:
        if not too_large and exact != exact.to_integral_value():
            raise rule.error(text)
        if too_large:
            raise rule.in_64_bits().error(text)
        return int(exact)
    value = float(stripped)
    if not math.isfinite(value):
        raise rule.error(text, finite=True)
    return value


def _read_value(value: object, rule: _Rule) -> Number:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise rule.error(value)
    if isinstance(value, numbers.Integral):
        whole = int(value)
        if rule.whole:
            return whole
        if abs(whole) > 2**1023:  # beyond a double's range
            raise rule.error(value, finite=True)
        return float(whole)
    try:
        real = float(value)
    except OverflowError:  # a Fraction beyond a double's range
        raise rule.error(value, finite=True) from None
    if not math.isfinite(real):
        raise rule.error(value, finite=True)
    if rule.whole:
        if not real.is_integer():
            raise rule.error(value)
        return int(real)
    return real


__all__ = ["NEGATIVE_NUMBER", "NUMERAL", "NumberError", "number", "number_type", "parse_number", "shown"]
