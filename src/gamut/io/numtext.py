"""Numbers as text in compiled code, exactly as Python and C's printf write them: integers
(``str(int)``), fixed point (``%.Nf``) and significant digits (``%.Ng``). Each kernel returns one
byte buffer, each row's start and length (rows packed end to end), and, where a row cannot be
decided in 64-bit arithmetic, a flag for the caller to format it in Python
(:class:`gamut.io.textcols.TextBuilder` does)."""
from __future__ import annotations

import math

import numpy as np
from numba import njit, prange


@njit(cache=True, nogil=True)
def _packed_starts(lengths):
    """Start of each string when strings of ``lengths`` are packed one after the other, and the total."""
    starts = np.empty(lengths.shape[0], np.int64)
    total = 0
    for k in range(lengths.shape[0]):
        starts[k] = total
        total += lengths[k]
    return starts, total


@njit(cache=True, nogil=True, inline="always")
def _digits_back(buf, pos, t, count):
    """Write the last ``count`` decimal digits of ``t`` backwards, the last one at ``buf[pos]``;
    return what is left of ``t`` and the position before the digits written."""
    for _ in range(count):
        buf[pos] = 48 + t % 10
        t //= 10
        pos -= 1
    return t, pos


@njit(cache=True, nogil=True, inline="always")
def _number_back(buf, pos, t):
    """Write every decimal digit of ``t`` >= 0 (at least one) backwards, the last one at
    ``buf[pos]``; return the position before them."""
    while True:
        buf[pos] = 48 + t % 10
        t //= 10
        pos -= 1
        if t == 0:
            return pos


@njit(cache=True, nogil=True, inline="always")
def _int_size(v, decimals):
    """Length of the decimal text of int64 ``v`` > INT64_MIN, with '.' and ``decimals`` zeros after it
    if ``decimals`` > 0 (printf's ``%.Nf`` of the integer)."""
    d = 1
    a = -v if v < 0 else v
    while a >= 10:
        a //= 10
        d += 1
    return d + (1 if v < 0 else 0) + (decimals + 1 if decimals > 0 else 0)


@njit(cache=True, nogil=True, inline="always")
def _int_put(buf, start, size, v, decimals):
    """Write that text (``size`` bytes, :func:`_int_size`) at ``buf[start]``."""
    if v < 0:
        buf[start] = 45  # '-'
        v = -v
    _, pos = _digits_back(buf, start + size - 1, 0, decimals)  # zeros
    if decimals > 0:
        buf[pos] = 46  # '.'
        pos -= 1
    _number_back(buf, pos, v)


@njit(cache=True, nogil=True, parallel=True)
def _int_text(values, decimals):
    """Decimal text of int64 ``values`` (each > INT64_MIN), followed by '.' and ``decimals`` zeros
    if ``decimals`` > 0 (printf's ``%.Nf`` of the integer): one buffer and per-value start/length."""
    n = values.shape[0]
    lengths = np.empty(n, np.int64)
    for k in prange(n):
        lengths[k] = _int_size(values[k], decimals)
    starts, total = _packed_starts(lengths)
    buf = np.empty(total, np.uint8)
    for k in prange(n):
        _int_put(buf, starts[k], lengths[k], values[k], decimals)
    return buf, starts, lengths


@njit(cache=True, nogil=True)
def _scaled(v, scale):
    """``round(|v| * scale)`` (half to even on the exact binary value) and whether it fits int64."""
    a = abs(v)
    if not math.isfinite(a):
        return np.int64(0), False
    # Fast path: t = a * scale in floating point is within 2^-53 t of the exact product, so where
    # its fraction is farther than 2^-51 t from one half, the exact product rounds the same way.
    t = a * scale
    if t < 4503599627370496.0:  # 2^52: floor and fraction are exact
        whole = math.floor(t)
        off_half = t - whole - 0.5
        if abs(off_half) > t * 4.440892098500626e-16:
            return np.int64(whole) + (1 if off_half > 0 else 0), True
    m, e = math.frexp(a)
    M = np.int64(m * 9007199254740992.0)  # m * 2^53, exact
    E = e - 53
    while M != 0 and (M & 1) == 0 and E < 0:
        M >>= 1
        E += 1
    if M > 9223372036854775807 // scale:  # (the slow path alone divides)
        return np.int64(0), False
    N = M * scale
    if E >= 0:
        if E > 62 or N > (9223372036854775807 >> E):
            return np.int64(0), False
        return N << E, True
    sh = -E
    if sh > 62:
        return np.int64(0), True
    q = N >> sh
    rem = N - (q << sh)
    half = np.int64(1) << (sh - 1)
    if rem > half or (rem == half and (q & 1) == 1):
        q += 1
    return q, True


@njit(cache=True, nogil=True, inline="always")
def _is_negative(v):
    """True for ``v < 0`` and for -0.0 (printf writes the sign of both)."""
    return v < 0 or (v == 0 and math.copysign(1.0, v) < 0)


@njit(cache=True, nogil=True, inline="always")
def _fixed_size(v, decimals, scale):
    """``printf("%.{decimals}f")`` of float64 ``v`` (``scale`` = 10**decimals) as its rounded scaled
    value, sign and length; length -1 where the scaled value does not fit 64-bit integers."""
    neg = _is_negative(v)
    q, fits = _scaled(v, scale)
    if not fits:
        return q, neg, -1
    digits = 1
    t = q // scale
    while t >= 10:
        t //= 10
        digits += 1
    return q, neg, digits + (1 + decimals if decimals > 0 else 0) + (1 if neg else 0)


@njit(cache=True, nogil=True, inline="always")
def _fixed_put(buf, start, size, q, neg, decimals):
    """Write that text (:func:`_fixed_size`'s ``q``, ``neg`` and ``size``) at ``buf[start]``."""
    q, pos = _digits_back(buf, start + size - 1, q, decimals)
    if decimals > 0:
        buf[pos] = 46  # '.'
        pos -= 1
    pos = _number_back(buf, pos, q)
    if neg:
        buf[pos] = 45  # '-'


@njit(cache=True, nogil=True, parallel=True)
def _fixed_text(values, decimals):
    """``printf("%.{decimals}f")`` of float64 ``values``, exactly (round half to even on the exact
    binary value, as glibc does), in integer arithmetic. Rows whose scaled value does not fit
    64-bit integers are flagged in ``ok`` (the caller formats those in Python)."""
    n = values.shape[0]
    scale = 1
    for _ in range(decimals):
        scale *= 10
    q_all = np.zeros(n, np.int64)
    neg = np.zeros(n, np.bool_)
    ok = np.ones(n, np.bool_)
    lengths = np.zeros(n, np.int64)
    for k in prange(n):
        q, negative, size = _fixed_size(values[k], decimals, scale)
        if size < 0:
            ok[k] = False
            continue
        q_all[k], neg[k], lengths[k] = q, negative, size
    starts, total = _packed_starts(lengths)  # a row not ok has length 0
    buf = np.empty(total, np.uint8)
    for k in prange(n):
        if ok[k]:
            _fixed_put(buf, starts[k], lengths[k], q_all[k], neg[k], decimals)
    return buf, starts, lengths, ok


#: Powers of ten exactly representable as float64 (10^0 .. 10^22).
_POW10 = np.array([10.0**k for k in range(23)])


@njit(cache=True, nogil=True)
def _significant(a, digits, pow10):
    """``(q, x, ok)``: ``a`` (finite, > 0) rounded to ``digits`` significant digits is
    ``q * 10^(x - digits + 1)`` with ``10^(digits-1) <= q < 10^digits``; ``ok`` is False where the
    floating-point scaling cannot tell the rounding (a tie within its error) or the exponent is
    beyond the table (the caller formats those in Python)."""
    x = int(math.floor(math.log10(a)))
    low = np.int64(1)
    for _ in range(digits - 1):
        low *= 10
    for _ in range(3):  # log10 may be one off, and rounding may carry into another digit
        d = digits - 1 - x  # decimals that keep `digits` significant digits
        if d >= 0:
            if d <= 22:
                t = a * pow10[d]
            elif d <= 44:
                t = (a * pow10[22]) * pow10[d - 22]
            else:
                return np.int64(0), 0, False
        else:
            if -d > 22:
                return np.int64(0), 0, False
            t = a / pow10[-d]
        whole = math.floor(t)
        frac = t - whole
        if abs(frac - 0.5) <= t * 1e-15:  # too close to a tie for float arithmetic to decide
            return np.int64(0), 0, False
        q = np.int64(whole) + (1 if frac > 0.5 else 0)
        if q >= low * 10:
            x += 1
        elif q < low:
            x -= 1
        else:
            return q, x, True
    return np.int64(0), 0, False


@njit(cache=True, nogil=True, parallel=True)
def _general_text(values, digits, pow10):
    """``printf("%.{digits}g")`` of float64 ``values``: ``digits`` significant digits, fixed
    notation for exponents -4 .. digits - 1 and ``d.ddde-XX`` otherwise, trailing zeros (and a
    bare point) removed. Rows the fast path cannot decide (ties within float error, zeros'
    signs aside; infinities, NaN, extreme exponents) are flagged in ``ok``."""
    n = values.shape[0]
    q_all = np.zeros(n, np.int64)  # the significant digits printed, trailing zeros dropped
    x_all = np.zeros(n, np.int64)  # the decimal exponent
    kept_all = np.zeros(n, np.int64)  # how many digits q has
    ok = np.ones(n, np.bool_)
    lengths = np.zeros(n, np.int64)
    for k in prange(n):
        v = values[k]
        if not math.isfinite(v):
            ok[k] = False
            continue
        neg = 1 if _is_negative(v) else 0
        if v == 0:
            lengths[k] = 1 + neg
            continue
        q, x, fine = _significant(abs(v), digits, pow10)
        if not fine:
            ok[k] = False
            continue
        kept = digits
        while kept > 1 and q % 10 == 0:
            q //= 10
            kept -= 1
        q_all[k], x_all[k], kept_all[k] = q, x, kept
        if 0 <= x < digits:  # ddd.ddd (zeros before the point where q is shorter)
            frac = kept - (x + 1) if kept > x + 1 else 0
            lengths[k] = neg + x + 1 + (1 + frac if frac > 0 else 0)
        elif -4 <= x < 0:  # 0.000ddd
            lengths[k] = neg + 1 - x + kept
        else:  # d.ddde+XX
            exp_digits = 2 if abs(x) < 100 else 3
            lengths[k] = neg + 1 + (kept if kept > 1 else 0) + 2 + exp_digits
    starts, total = _packed_starts(lengths)
    buf = np.empty(total, np.uint8)
    for k in prange(n):
        if not ok[k]:
            continue
        pos = starts[k]
        last = starts[k] + lengths[k] - 1
        v = values[k]
        if _is_negative(v):
            buf[pos] = 45  # '-'
            pos += 1
        if v == 0:
            buf[pos] = 48
            continue
        q, x, kept = q_all[k], x_all[k], kept_all[k]
        if 0 <= x < digits:
            frac = kept - (x + 1) if kept > x + 1 else 0
            t, p = _digits_back(buf, last, q, frac)
            if frac > 0:
                buf[p] = 46  # '.'
                p -= 1
            for _ in range(x + 1 - (kept - frac)):  # zeros before the point
                buf[p] = 48
                p -= 1
            _digits_back(buf, p, t, kept - frac)
        elif -4 <= x < 0:
            buf[pos] = 48
            buf[pos + 1] = 46
            for z in range(-x - 1):
                buf[pos + 2 + z] = 48
            _digits_back(buf, last, q, kept)
        else:
            exp_digits = 2 if abs(x) < 100 else 3
            _, p = _digits_back(buf, last, abs(x), exp_digits)
            buf[p] = 45 if x < 0 else 43  # '-' / '+'
            buf[p - 1] = 101  # 'e'
            t, p = _digits_back(buf, p - 2, q, kept - 1)
            if kept > 1:
                buf[p] = 46  # '.'
                p -= 1
            buf[p] = 48 + t
    return buf, starts, lengths, ok
