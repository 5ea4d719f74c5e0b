"""The regularised incomplete beta function and its quantiles, accurate in float32 at large
parameters (the Clopper-Pearson interval of a proportion of 10^6 trials).

`jax.scipy.special.betainc` forms log B(a, b) as lgamma(a) + lgamma(b) - lgamma(a + b): in
float32 the lgammas of 10^5-10^6 carry absolute errors of 0.06-1, so I_x(2, 10^6) came out 0.14
where it is 0.26. Here the factor ``x^a (1 - x)^b / B(a, b)`` is formed without that
cancellation (Stirling's series, as DiDonato & Morris 1992 do): its logarithm is

    -(a rl(u) + b rl(v)) + log(a b / (2 pi (a + b))) / 2 - (d(a) + d(b) - d(a + b))

with u = x (a + b) / a - 1, v = (1 - x) (a + b) / b - 1 (a u + b v = 0 exactly), rl(t) = t -
log(1 + t) >= 0 and d(z) = lgamma(z) - ((z - 1/2) log z - z + log(2 pi) / 2) Stirling's
remainder; then Lentz's continued fraction (Numerical Recipes' betacf), which takes a few dozen
terms at the quantiles an interval needs. A quantile is found by bisecting the bit patterns of
the non-negative floats (their order is the floats' order): 31 steps in float32 give the float
where the function crosses the level, to full relative precision (1e-30 as well as 0.5).
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
from jax.scipy.special import ndtri

from jaxmetrics._src.core.typing import Array

# continued-fraction terms at most (the loop stops when the fraction has converged): a few dozen
# at the 2.5% and 97.5% quantiles of Beta(k, n - k + 1) for n up to 10^7, a few hundred where
# the fraction is evaluated above its fast side
_MAX_TERMS = 3000
_HALF_LOG_TWO_PI = 0.5 * math.log(2 * math.pi)
_SERIES_LIMIT = 2e4
_MAX_SERIES = 30_000


def _SERIES_REACH(a):  # noqa: N802 (a constant's rule)
    return 8 * jnp.sqrt(a) + 20


def _log1p_remainder(t: Array) -> Array:
    """rl(t) = t - log(1 + t) for t > -1, without cancellation near 0: with w = t / (2 + t),
    log(1 + t) = 2 atanh(w), so rl(t) = t w - 2 (w^3 / 3 + w^5 / 5 + ...)."""
    w = t / (2 + t)
    w2 = w * w
    series = jnp.zeros_like(w)
    for k in range(12, 0, -1):  # |w| <= 1/3 here: 12 terms leave < 1e-12
        series = series * w2 + 1 / (2 * k + 1)
    small = t * w - 2 * w * w2 * series
    return jnp.where(jnp.abs(t) < 0.5, small, t - jnp.log1p(t))


def _stirling_remainder(z: Array) -> Array:
    """d(z) = lgamma(z) - ((z - 1/2) log z - z + log(2 pi) / 2): by its series for z >= 10,
    from lgamma below (small there, so float32's lgamma is accurate enough)."""
    large = jnp.maximum(z, 10.0)
    inverse = 1 / large
    square = inverse * inverse
    series = inverse * (1 / 12 - square * (1 / 360 - square * (1 / 1260 - square / 1680)))
    small = jnp.minimum(z, 10.0)
    direct = jax.lax.lgamma(small) - ((small - 0.5) * jnp.log(small) - small + _HALF_LOG_TWO_PI)
    return jnp.where(z >= 10, series, direct)


def _log_factor(x: Array, a: Array, b: Array) -> Array:
    """log(x^a (1 - x)^b / B(a, b)), for 0 < x < 1 and a, b > 0. 1 - x is never formed (it
    would round x away where x is small): v = -u a / b, as a u + b v = 0."""
    total = a + b
    u = (x * total - a) / a
    v = -u * (a / b)
    spread = a * _log1p_remainder(u) + b * _log1p_remainder(v)
    stirling = _stirling_remainder(a) + _stirling_remainder(b) - _stirling_remainder(total)
    root = 0.5 * (jnp.log(a) + jnp.log(b) - jnp.log(total)) - _HALF_LOG_TWO_PI
    return root - spread - stirling


def continued_fraction(x: Array, a: Array, b: Array) -> Array:
    """Lentz's evaluation of the continued fraction of I_x(a, b) (DLMF 8.17.22; Numerical
    Recipes' betacf), fast for x < (a + 1) / (a + b + 2), to float precision or `_MAX_TERMS`
    terms. Each element stops where it has converged: rounding would otherwise drift the ones
    that converged first while the loop runs on for the slowest (also the unpaired DeLong
    test's Student t tail)."""
    tiny = jnp.finfo(x.dtype).tiny * 16
    eps = jnp.finfo(x.dtype).eps

    def guard(value):
        return jnp.where(jnp.abs(value) < tiny, tiny, value)

    def step(d, c, h, a_m):
        d = 1 / guard(1 + a_m * d)
        c = guard(1 + a_m / c)
        return d, c, h * d * c, d * c

    def going(state):
        m, _, _, _, active = state
        return (m <= _MAX_TERMS) & jnp.any(active)

    def body(state):  # (elements whose fraction has converged are kept as they are)
        m, d0, c0, h0, active = state
        even = m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m))
        d, c, h, _ = step(d0, c0, h0, even)
        odd = -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))
        d, c, h, change = step(d, c, h, odd)
        keep = lambda new, old: jnp.where(active, new, old)  # noqa: E731
        return m + 1, keep(d, d0), keep(c, c0), keep(h, h0), active & (jnp.abs(change - 1) > eps)

    d = 1 / guard(1 - (a + b) * x / (a + 1))
    one = jnp.ones_like(x)
    start = (jnp.ones((), x.dtype), d, one, d, jnp.ones(x.shape, bool))
    return jax.lax.while_loop(going, body, start)[3]


def _series(x: Array, a: Array, b: Array) -> Array:
    """The hypergeometric series of I_x(a, b) over its factor: sum over k of
    ((a + b)_k / (a + 1)_k) x^k, whose terms are all positive (no cancellation); summed until
    the terms, past their largest, add nothing (or `_MAX_SERIES` terms)."""
    eps = jnp.finfo(x.dtype).eps

    def done(k, term, total):
        past_peak = (a + b + k - 1) * x < a + k
        return past_peak & (term < eps * total)

    def going(state):
        k, term, total = state
        return (k < _MAX_SERIES) & ~jnp.all(done(k, term, total))

    def body(state):
        k, term, total = state
        adding = ~done(k, term, total)
        term = jnp.where(adding, term * ((a + b + k - 1) * x / (a + k)), term)
        return k + 1, term, jnp.where(adding, total + term, total)

    one = jnp.ones_like(x)
    return jax.lax.while_loop(going, body, (jnp.ones((), x.dtype), one, one))[2]


def regularized_beta(a: Array, b: Array, x: Array) -> Array:
    """I_x(a, b), the regularised incomplete beta function (the CDF of Beta(a, b) at x), for
    a, b > 0 and x in [0, 1]; arrays of one shape and float type."""
    inside = (x > 0) & (x < 1)
    x_in = jnp.where(inside, x, 0.5)
    factor = jnp.exp(_log_factor(x_in, a, b))
    total = a + b
    lower = x_in < (a + 1) / (total + 2)  # the fraction converges fast on this side
    # above it, 1 - x is exact only from x = 1/2 on: a small x there (the upper end of an
    # interval of 10^6 trials with few successes) is summed by the series instead, which takes
    # about (a + b) x terms, affordable for a up to `_SERIES_LIMIT`, and x up to some 8 spreads
    # past the mean (further up, where I is 1 to float precision, its terms would overflow)
    small = ~lower & (x_in < 0.5) & (a <= _SERIES_LIMIT)
    summed = small & (total * x_in < a + _SERIES_REACH(a))
    first, second = jnp.where(lower, a, b), jnp.where(lower, b, a)
    fraction = continued_fraction(jnp.where(lower, x_in, 1 - x_in), first, second)
    tail = factor / first * fraction  # I_x(a, b) below, I_(1 - x)(b, a) above
    value = jnp.where(lower, tail, 1 - tail)
    value = jnp.where(summed, factor / a * _series(jnp.where(summed, x_in, 0.0), a, b), value)
    value = jnp.where(small & ~summed, 1.0, value)  # past the series' reach: 1 to the float
    return jnp.where(inside, jnp.clip(value, 0, 1), jnp.where(x <= 0, 0.0, 1.0))


def beta_quantile(q: Array, a: Array, b: Array) -> Array:
    """The smallest float x in [0, 1] with I_x(a, b) >= q (arrays of one shape and float type),
    by bisection over the floats' bit patterns. Where a and b both pass 10^9 the distribution's
    spread is below 10^-4.5 of its mean and its skew below 10^-4: the normal quantile is then
    exact to the float (and the bisection, whose u loses its digits there, is not used)."""
    unsigned = jnp.uint64 if q.dtype == jnp.float64 else jnp.uint32
    bits = lambda value: jax.lax.bitcast_convert_type(value, unsigned)  # noqa: E731
    floats = lambda value: jax.lax.bitcast_convert_type(value, q.dtype)  # noqa: E731
    steps = 8 * jnp.dtype(unsigned).itemsize - 1

    def halve(_, bounds):
        low, high = bounds  # I(floats(low)) < q <= I(floats(high)), in bit patterns
        middle = low + (high - low) // 2
        below = regularized_beta(a, b, floats(middle)) < q
        return jnp.where(below, middle, low), jnp.where(below, high, middle)

    start = (jnp.zeros(q.shape, unsigned), jnp.broadcast_to(bits(jnp.ones((), q.dtype)), q.shape))
    _, high = jax.lax.fori_loop(0, steps, halve, start)
    total = a + b
    mean = a / total
    spread = jnp.sqrt(mean * (b / total) / (total + 1))
    normal = jnp.clip(mean + ndtri(q) * spread, 0, 1)
    return jnp.where(jnp.minimum(a, b) > 1e9, normal, floats(high))
