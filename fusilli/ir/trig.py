"""``sin`` and ``tan`` scalar bodies with exact range reduction, for fused elementwise regions.

IREE expands ``math.sin`` / ``math.tan`` into polynomials whose argument
reduction is only good for moderate arguments: ``sin(1e9)`` came out as
``1.37e9`` and ``sin(1e30)`` as ``-inf``. These bodies reduce the argument
themselves, exactly, and evaluate on [-pi/4, pi/4].

The reduction is Payne-Hanek's idea in f64 arithmetic. An f32 (or f16/bf16)
argument ``x`` has at most 24 significant bits, and 2/pi is split into 24-bit
chunks ``c_i = TWO_OVER_PI_CHUNKS[i] * 2^-24(i+1)``; each product ``x * c_i``
then has at most 48 significant bits, so it is exact in f64, and so is its
remainder modulo 4. The sum of those remainders is ``x * 2/pi (mod 4)`` to
about 2^-50: its nearest integer is the quadrant and the rest times pi/2 the
reduced argument ``r``. Chunks whose product is a multiple of 4 contribute
exactly 0, and nine chunks leave a tail below 2^-88 for every finite f32.
sin r and cos r are then Taylor polynomials in f64 (IREE's f32 polynomials
lose relative accuracy for small results), rounded once to the element type.
f64 arguments (53 significant bits) do not fit the scheme and keep
``math.sin``/``math.tan``.
"""

from __future__ import annotations

import math as _pymath

from fusilli.ir import scalar as sc
from fusilli.ir.bindings import Value, arith, math

# 2/pi = sum_i TWO_OVER_PI_CHUNKS[i] * 2^(-24 (i + 1)): the leading 216 bits, as
# fdlibm's ipio2 table lists them (test_numerics_edges.py recomputes them from Machin's formula).
TWO_OVER_PI_CHUNKS = (0xA2F983, 0x6E4E44, 0x1529FC, 0x2757D1, 0xF534DD, 0xC0DB62, 0x95993C, 0x439041, 0xFE5163)

# Element types whose values have at most 24 significant bits (the products above stay exact).
REDUCIBLE_ELEMENTS = ("f32", "f16", "bf16")

_F32_MAX = 3.4028234663852886e38


def _f64(value: float) -> Value:
    return sc.constant("f64", value)


def _mod4(p: Value) -> Value:
    """``p - 4 * floor(p / 4)`` for p >= 0: exact for any f64 ``p`` (scaling by 4 is exact)."""
    quarter = math.FloorOp(arith.MulFOp(p, _f64(0.25)).result).result
    return arith.SubFOp(p, arith.MulFOp(quarter, _f64(4.0)).result).result


def quadrant_reduce(x: Value, elem: str) -> tuple[Value, Value]:
    """``(q, r)`` with ``|x| = (4k + q) * pi/2 + r``: ``q`` an i32 in 0..3, ``r`` an f64 in [-pi/4, pi/4]."""
    ax = sc.convert(math.AbsFOp(x).result, elem, "f64")
    total = _f64(0.0)
    # Smallest terms first: the partial sums stay as exact as f64 allows.
    for i in reversed(range(len(TWO_OVER_PI_CHUNKS))):
        chunk_value = TWO_OVER_PI_CHUNKS[i] * 2.0 ** (-24 * (i + 1))
        term = arith.MulFOp(ax, _f64(chunk_value)).result
        # Terms below 4 for every finite f32 need no reduction of their own (the last ones).
        total = arith.AddFOp(total, _mod4(term) if _F32_MAX * chunk_value >= 4.0 else term).result
    total = _mod4(total)
    q = math.RoundEvenOp(total).result
    r = arith.MulFOp(arith.SubFOp(total, q).result, _f64(_pymath.pi / 2)).result
    quadrant = arith.AndIOp(sc.convert(q, "f64", "si32"), sc.constant("si32", 3)).result
    return quadrant, r


def _taylor(r: Value, first_power: int, terms: int) -> Value:
    """sum_k (-1)^k r^(first_power + 2k) / (first_power + 2k)! in f64, by Horner's rule in r^2.

    On [-pi/4, pi/4], 6 terms of sin (r .. r^11) and 6 of cos (1 .. r^10) are within 2e-10,
    far below an f32 ulp.
    """
    r2 = arith.MulFOp(r, r).result
    powers = [first_power + 2 * k for k in range(terms)]
    acc = _f64((-1) ** (terms - 1) / _pymath.factorial(powers[-1]))
    for k in reversed(range(terms - 1)):
        acc = arith.AddFOp(arith.MulFOp(acc, r2).result, _f64((-1) ** k / _pymath.factorial(powers[k]))).result
    return arith.MulFOp(acc, r).result if first_power == 1 else acc


def _sin_cos(x: Value, elem: str) -> tuple[Value, Value, Value]:
    """``(quadrant, sin r, cos r)`` of ``|x|``'s reduction, in f64."""
    quadrant, r = quadrant_reduce(x, elem)
    return quadrant, _taylor(r, 1, 6), _taylor(r, 0, 6)


def _odd(quadrant: Value) -> Value:
    one = sc.constant("si32", 1)
    return arith.CmpIOp(arith.CmpIPredicate.eq, arith.AndIOp(quadrant, one).result, one).result


def _with_sign_of(value: Value, x: Value, elem: str) -> Value:
    """The f64 ``value`` of the function at ``|x|``, as ``elem``, negated where ``x`` has its
    sign bit set (sin and tan are odd; -0 gives -0)."""
    sign = sc.convert(math.CopySignOp(sc.constant(elem, 1.0), x).result, elem, "f64")
    return sc.convert(arith.MulFOp(value, sign).result, "f64", elem)


def reduced_sin(x: Value, elem: str) -> Value:
    """``sin(x)`` for an f32/f16/bf16 scalar ``x``: sin r, cos r, -sin r, -cos r by quadrant."""
    quadrant, s, c = _sin_cos(x, elem)
    magnitude = arith.SelectOp(_odd(quadrant), c, s).result
    upper = arith.CmpIOp(arith.CmpIPredicate.sge, quadrant, sc.constant("si32", 2)).result
    return _with_sign_of(arith.SelectOp(upper, arith.NegFOp(magnitude).result, magnitude).result, x, elem)


def reduced_tan(x: Value, elem: str) -> Value:
    """``tan(x)`` for an f32/f16/bf16 scalar ``x``: sin r / cos r, or -cos r / sin r in odd quadrants."""
    quadrant, s, c = _sin_cos(x, elem)
    odd = _odd(quadrant)
    numerator = arith.SelectOp(odd, arith.NegFOp(c).result, s).result
    denominator = arith.SelectOp(odd, s, c).result
    return _with_sign_of(arith.DivFOp(numerator, denominator).result, x, elem)
