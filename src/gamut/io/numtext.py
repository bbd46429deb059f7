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


@njit(cache=True, nogil=True, parallel=True)
def _int_text(values, decimals):
    """Decimal text of int64 ``values``, followed by '.' and ``decimals`` zeros if ``decimals`` > 0
    (printf's ``%.Nf`` of the integer): one buffer and per-value start/length."""
    n = values.shape[0]
    tail = decimals + 1 if decimals > 0 else 0
    lengths = np.empty(n, np.int64)
    for k in prange(n):
        v = values[k]
        d = 1
        a = -v if v < 0 else v
        while a >= 10:
            a //= 10
            d += 1
        lengths[k] = d + (1 if v < 0 else 0) + tail
    starts, total = _packed_starts(lengths)
    buf = np.empty(total, np.uint8)
    for k in prange(n):
        v = values[k]
        if v < 0:
            buf[starts[k]] = 45  # '-'
            v = -v
        pos = starts[k] + lengths[k] - 1
        for _ in range(decimals):
            buf[pos] = 48  # '0'
            pos -= 1
        if tail:
            buf[pos] = 46  # '.'
            pos -= 1
        while True:
            buf[pos] = 48 + v % 10
            v //= 10
            pos -= 1
            if v == 0:
                break
    return buf, starts, lengths


@njit(cache=True, nogil=True)
def _scaled(v, scale, limit):
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
    if M > limit:
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


@njit(cache=True, nogil=True, parallel=True)
def _fixed_text(values, decimals):
    """``printf("%.{decimals}f")`` of float64 ``values``, exactly (round half to even on the exact
    binary value, as glibc does), in integer arithmetic. Rows whose scaled value does not fit
    64-bit integers are flagged in ``ok`` (the caller formats those in Python)."""
    n = values.shape[0]
    scale = 1
    for _ in range(decimals):
        scale *= 10
    limit = 9223372036854775807 // scale
    q_all = np.zeros(n, np.int64)
    neg = np.zeros(n, np.bool_)
    ok = np.ones(n, np.bool_)
    lengths = np.zeros(n, np.int64)
    for k in prange(n):
        v = values[k]
        neg[k] = _is_negative(v)
        q, fits = _scaled(v, scale, limit)
        if not fits:
            ok[k] = False
            continue
        q_all[k] = q
        digits = 1
        t = q // scale
        while t >= 10:
            t //= 10
            digits += 1
        lengths[k] = digits + (1 + decimals if decimals > 0 else 0) + (1 if neg[k] else 0)
    starts, total = _packed_starts(lengths)  # a row not ok has length 0
    buf = np.empty(total, np.uint8)
    for k in prange(n):
        if not ok[k]:
            continue
        pos = starts[k] + lengths[k] - 1
        q = q_all[k]
        for _ in range(decimals):
            buf[pos] = 48 + q % 10
            q //= 10
            pos -= 1
        if decimals > 0:
            buf[pos] = 46  # '.'
            pos -= 1
        while True:
            buf[pos] = 48 + q % 10
            q //= 10
            pos -= 1
            if q == 0:
                break
        if neg[k]:
            buf[pos] = 45  # '-'
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
    q_all = np.zeros(n, np.int64)
    x_all = np.zeros(n, np.int64)
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
        zeros = 0
        while zeros < digits - 1 and q % 10 == 0:
            q //= 10
            zeros += 1
        kept = digits - zeros  # significant digits printed
        q_all[k] = q
        x_all[k] = x
        if -4 <= x < digits:
            if x >= 0:
                whole = x + 1
                frac = kept - whole if kept > whole else 0
                lengths[k] = neg + whole + (1 + frac if frac > 0 else 0)
            else:
                lengths[k] = neg + 2 + (-x - 1) + kept  # 0.000ddd
        else:
            ex = -x if x < 0 else x
            exp_digits = 2 if ex < 100 else 3
            lengths[k] = neg + 1 + (1 + kept - 1 if kept > 1 else 0) + 2 + exp_digits
    starts, total = _packed_starts(lengths)
    buf = np.empty(total, np.uint8)
    for k in prange(n):
        if not ok[k]:
            continue
        pos = starts[k]
        end = starts[k] + lengths[k]
        v = values[k]
        if _is_negative(v):
            buf[pos] = 45  # '-'
            pos += 1
        if v == 0:
            buf[pos] = 48
            continue
        q = q_all[k]
        x = x_all[k]
        kept = 1
        t = q
        while t >= 10:
            t //= 10
            kept += 1
        if -4 <= x < digits:
            if x >= 0:
                # digits of q, a point after x + 1 of them (zeros appended if q is shorter)
                whole = x + 1
                p = end - 1
                t = q
                frac = kept - whole if kept > whole else 0
                for _ in range(frac):
                    buf[p] = 48 + t % 10
                    t //= 10
                    p -= 1
                if frac > 0:
                    buf[p] = 46
                    p -= 1
                pad = whole - kept if whole > kept else 0
                for _ in range(pad):
                    buf[p] = 48
                    p -= 1
                while p >= pos:
                    buf[p] = 48 + t % 10
                    t //= 10
                    p -= 1
            else:
                buf[pos] = 48
                buf[pos + 1] = 46
                for z in range(-x - 1):
                    buf[pos + 2 + z] = 48
                p = end - 1
                t = q
                for _ in range(kept):
                    buf[p] = 48 + t % 10
                    t //= 10
                    p -= 1
        else:
            ex = -x if x < 0 else x
            exp_digits = 2 if ex < 100 else 3
            p = end - 1
            for _ in range(exp_digits):
                buf[p] = 48 + ex % 10
                ex //= 10
                p -= 1
            buf[p] = 45 if x < 0 else 43  # '-' / '+'
            buf[p - 1] = 101  # 'e'
            p -= 2
            t = q
            for _ in range(kept - 1):
                buf[p] = 48 + t % 10
                t //= 10
                p -= 1
            if kept > 1:
                buf[p] = 46
                p -= 1
            buf[p] = 48 + t
    return buf, starts, lengths, ok
