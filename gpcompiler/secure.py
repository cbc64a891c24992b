"""Cryptographically secure noise from OS entropy, vectorized with NumPy.

The standard library's ``os.urandom`` (the OS CSPRNG) supplies 64-bit words; NumPy turns
them into uniforms with 53 random bits in (0, 1] (never 0), normals by Box-Muller,
exponentials and Laplace variates by inversion, and Gamma variates by Marsaglia-Tsang
rejection. Only the methods the mechanisms use are provided, with NumPy Generator
signatures, so a SecureGenerator can stand wherever a seeded Generator is accepted.

Floating point caveat: these are continuous samplers evaluated in float64. They are not
hardened against attacks on the low-order bits of floating-point noise (Mironov 2012); no
snapping is applied. Noise scales are rounded up, never down.
"""
import math
import os

import numpy


class SecureGenerator:
    """OS-entropy random variates with the numpy.random.Generator interface used here."""

    def _words(self, count):
        return numpy.frombuffer(os.urandom(8 * count), dtype=numpy.uint64)

    def random(self, size=None):
        """Uniform on (0, 1]: (k + 1) 2^-53 with k a uniform 53-bit integer."""
        count = int(numpy.prod(size)) if size is not None else 1
        values = ((self._words(count) >> numpy.uint64(11)).astype(numpy.float64) + 1.0) * 2.0 ** -53
        return values.reshape(size) if size is not None else float(values[0])

    def standard_normal(self, size=None):
        """Box-Muller, both outputs: sqrt(-2 ln u1) (cos, sin)(2 pi u2)."""
        count = int(numpy.prod(size)) if size is not None else 1
        half = (count + 1) // 2
        radius = numpy.sqrt(-2.0 * numpy.log(self.random(half)))
        angle = 2.0 * math.pi * self.random(half)
        values = numpy.concatenate([radius * numpy.cos(angle), radius * numpy.sin(angle)])[:count]
        return values.reshape(size) if size is not None else float(values[0])

    def laplace(self, loc=0.0, scale=1.0, size=None):
        """loc + scale * (sign) * Exp(1), the sign from an independent uniform."""
        count = int(numpy.prod(size)) if size is not None else 1
        sign = numpy.where(self.random(count) <= 0.5, -1.0, 1.0)
        values = loc + scale * sign * -numpy.log(self.random(count))
        return values.reshape(size) if size is not None else float(values[0])

    def gamma(self, shape, scale=1.0, size=None):
        """Gamma(shape, scale) for shape >= 1 by Marsaglia-Tsang (vectorized rejection)."""
        if shape < 1:
            raise ValueError("SecureGenerator.gamma supports shape >= 1")
        count = int(numpy.prod(size)) if size is not None else 1
        d = shape - 1.0 / 3.0
        c = 1.0 / math.sqrt(9.0 * d)
        out = numpy.empty(count)
        missing = numpy.arange(count)
        while missing.size:
            x = self.standard_normal(missing.size)
            v = (1.0 + c * x) ** 3
            u = self.random(missing.size)
            ok = (v > 0) & (numpy.log(u) < 0.5 * x * x + d - d * v + d * numpy.log(numpy.where(v > 0, v, 1.0)))
            out[missing[ok]] = d * v[ok]
            missing = missing[~ok]
        values = out * scale
        return values.reshape(size) if size is not None else float(values[0])


def default_generator(rng):
    """``rng`` if given (seeded, for tests), else a SecureGenerator (production)."""
    return SecureGenerator() if rng is None else rng
