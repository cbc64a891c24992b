"""Cryptographically secure noise from OS entropy, vectorized with NumPy (docs/design.md,
Secure noise).

The standard library's ``os.urandom`` (the OS CSPRNG) supplies 64-bit words. Uniforms reach
every binade of (0, 1): a geometric exponent e (P[e = k] = 2^-k) and a 52-bit mantissa give
u = (1 + m 2^-52) 2^-e, so P[u < 2^-k] = 2^-k for every k and the tails of the samplers
below reach the limits of float64. Normals come from Box-Muller, Laplace variates from a
random sign and an Exp(1) by inversion, Gamma variates from Marsaglia-Tsang rejection. Only
the methods the mechanisms use are provided, with NumPy Generator signatures, so a
SecureGenerator can stand wherever a seeded Generator is accepted.

Floating point caveat: these are continuous samplers evaluated in float64. They are not
hardened against attacks on the low-order bits of floating-point noise (Mironov 2012); no
snapping is applied. Noise scales are rounded up, never down.
"""
import math
import numbers
import os

import numpy


class SecureGenerator:
    """OS-entropy random variates with the numpy.random.Generator interface used here."""

    @staticmethod
    def _count(size):
        """How many variates a NumPy ``size`` (None, an int or a shape) asks for."""
        if size is None:
            return 1
        return math.prod(size) if isinstance(size, (tuple, list)) else int(size)

    def _words(self, count):
        return numpy.frombuffer(os.urandom(8 * count), dtype=numpy.uint64)

    def _exponents(self, words):
        """Geometric exponents e >= 1, P[e = k] = 2^-k: one plus the leading zero bits of
        the top 12 bits T of ``words`` (for T >= 1, 1035 minus the exponent field of the
        float T), continued with fresh 64-bit words while they are 0."""
        top = (words >> numpy.uint64(52)).astype(numpy.float64)
        exponents = 1035 - (top.view(numpy.int64) >> 52)
        zero = (top == 0).nonzero()[0]  # P = 2^-12
        if zero.size:
            exponents[zero] = 12 + self._more_zeros(zero.size)
        return exponents

    def _uniforms(self, words):
        """u = (2^52 + m) 2^-(52 + e): m the low 52 bits of each word, e its geometric
        exponent. The float's bits are built directly (exponent field 1023 - e, mantissa m),
        and by ldexp where u is subnormal (e > 1022)."""
        exponents = self._exponents(words)
        bits = (1023 - exponents).view(numpy.uint64) << numpy.uint64(52)
        bits |= words & numpy.uint64((1 << 52) - 1)
        values = bits.view(numpy.float64)
        deep = (exponents > 1022).nonzero()[0]  # P = 2^-1022
        if deep.size:
            mantissa = (words[deep] & numpy.uint64((1 << 52) - 1)).astype(numpy.float64)
            values[deep] = numpy.ldexp(mantissa + 2.0 ** 52, -52 - exponents[deep])
        return values

    def _more_zeros(self, count):
        """Leading zero bits plus one of fresh 64-bit words, 64 more for each word that is 0."""
        extra = numpy.zeros(count, dtype=numpy.int64)
        pending = numpy.arange(count)
        while pending.size:
            fresh = self._words(pending.size)
            extra[pending] += [65 - w.bit_length() if w else 64 for w in fresh.tolist()]
            pending = pending[fresh == 0]
        return extra

    def random(self, size=None):
        """Uniform on (0, 1): u = (2^52 + m) 2^-(52 + e), m a uniform 52-bit mantissa and
        e a geometric exponent, so every binade [2^-k, 2^(1-k)) has probability 2^-k."""
        count = self._count(size)
        values = self._uniforms(self._words(count))
        return values.reshape(size) if size is not None else float(values[0])

    def standard_normal(self, size=None):
        """Box-Muller, both outputs (_box_muller), all the uniforms from one draw of OS
        entropy."""
        count = self._count(size)
        values = self._box_muller(self.random(2 * ((count + 1) // 2)))[:count]
        return values.reshape(size) if size is not None else float(values[0])

    def _box_muller(self, u):
        """Normals sqrt(-2 ln u1) (cos, sin)(2 pi u2) from the halves u1, u2 of the uniforms
        u (used up). cos and sin come from one tangent, t = tan(pi u2):
        (cos, sin)(2 pi u2) = (1 - t^2, 2 t) / (1 + t^2)."""
        half = u.size // 2
        radius = numpy.log(u[:half])
        radius *= -2.0
        numpy.sqrt(radius, out=radius)
        t = u[half:]
        t *= math.pi
        numpy.tan(t, out=t)
        values = numpy.empty(2 * half)
        x, y = values[:half], values[half:]
        numpy.multiply(t, t, out=x)
        numpy.add(x, 1.0, out=y)
        numpy.divide(radius, y, out=radius)  # radius / (1 + t^2)
        numpy.subtract(1.0, x, out=x)
        x *= radius
        numpy.multiply(t, radius, out=y)
        y *= 2.0
        return values

    def laplace(self, loc=0.0, scale=1.0, size=None):
        """loc + scale * sign * Exp(1): the sign is one random bit, Exp(1) = -ln u."""
        count = self._count(size)
        sign = numpy.where(self._words(count) >> numpy.uint64(63), -1.0, 1.0)
        values = loc + scale * sign * -numpy.log(self.random(count))
        return values.reshape(size) if size is not None else float(values[0])

    def gamma(self, shape, scale=1.0, size=None):
        """Gamma(shape, scale) for shape >= 1 by Marsaglia-Tsang (vectorized rejection). A
        round draws the normals and uniforms of 1/16 more candidates than are missing (at
        least 95% are accepted) from one draw of OS entropy and keeps the first accepted."""
        if shape < 1:
            raise ValueError("SecureGenerator.gamma supports shape >= 1")
        count = self._count(size)
        d = shape - 1.0 / 3.0
        c = 1.0 / math.sqrt(9.0 * d)
        out = numpy.empty(count)
        done = 0
        while done < count:
            draw = count - done + (count - done) // 16 + 2
            u = self.random(2 * draw + draw % 2)
            x = self._box_muller(u[:draw + draw % 2])[:draw]
            v = (1.0 + c * x) ** 3
            ok = (v > 0) & (numpy.log(u[-draw:]) < 0.5 * x * x + d - d * v
                            + d * numpy.log(numpy.where(v > 0, v, 1.0)))
            accepted = v[ok][:count - done]
            out[done:done + accepted.size] = d * accepted
            done += accepted.size
        values = out * scale
        return values.reshape(size) if size is not None else float(values[0])


def default_generator(rng):
    """The noise source: None -> SecureGenerator (OS entropy, production); an int seed ->
    numpy.random.default_rng(seed) (tests, demos); a Generator or SecureGenerator as is."""
    if rng is None:
        return SecureGenerator()
    if isinstance(rng, (numpy.random.Generator, SecureGenerator)):
        return rng
    if isinstance(rng, numbers.Integral) and not isinstance(rng, bool):
        if rng < 0:
            raise ValueError(f"a seed must be a non-negative integer, got {rng}")
        return numpy.random.default_rng(int(rng))
    if not all(hasattr(rng, name) for name in ("standard_normal", "laplace", "gamma")):
        raise TypeError(f"rng must be None, an int seed or a numpy Generator, got {rng!r}")
    return rng
