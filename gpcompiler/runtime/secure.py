"""Cryptographically secure noise from OS entropy, vectorized with NumPy (docs/design.md,
Secure noise).

Entropy: 64-bit words from runtime/entropy.py (one draw per block of normals). Uniforms
reach every binade of (0, 1): a geometric exponent e (P[e = k] = 2^-k) and a 52-bit
mantissa give u = (1 + m 2^-52) 2^-e, so P[u < 2^-k] = 2^-k for every k and the tails of
the samplers below reach the limits of float64. Normals come from Box-Muller (the radius
from such a uniform, the angle from a 55-bit grid), computed in blocks that stay in cache,
Laplace variates from a random sign and an Exp(1) by inversion, Gamma variates from
Marsaglia-Tsang rejection. Only the methods the mechanisms use are provided, with NumPy
Generator signatures, so a SecureGenerator can stand wherever a seeded Generator is
accepted.

These float64 samplers serve simulations (the auditor's batched runs, experiments) only:
they are not hardened against attacks on low-order bits (Mironov 2012). Every release is
drawn by gpcompiler/runtime/exact.py instead, exactly rounded to a public lattice.
"""
import math

import numpy

from . import entropy
from .entropy import default_generator  # noqa: F401 (the public noise source)


class SecureGenerator(entropy.SecureGenerator):
    """OS-entropy random variates with the numpy.random.Generator interface used here."""

    _BLOCK = 16384  # normals per block of Box-Muller: its arrays stay in the L2 cache

    @staticmethod
    def _count(size):
        """How many variates a NumPy ``size`` (None, an int or a shape) asks for."""
        if size is None:
            return 1
        return math.prod(size) if isinstance(size, (tuple, list)) else int(size)

    def _uniforms(self, words, out=None):
        """u = (2^52 + m) 2^-(52 + e): m the low 52 bits of each word, e its geometric
        exponent, one plus the leading zero bits of its top 12 bits T. For T >= 1 the float
        T 2^-12 has the exponent field 1023 - e exactly, and its mantissa is replaced by m;
        T = 0 (P = 2^-12) continues in fresh words (_deep_uniform)."""
        out = numpy.empty(words.size) if out is None else out
        numpy.multiply(words >> numpy.uint64(52), 2.0 ** -12, out=out)
        deep = () if out.all() else (out == 0).nonzero()[0].tolist()
        bits = out.view(numpy.uint64)
        bits &= numpy.uint64(0x7FF << 52)
        bits |= words & numpy.uint64((1 << 52) - 1)
        for i in deep:
            out[i] = self._deep_uniform(int(words[i]))
        return out

    def _deep_uniform(self, word):
        """The uniform of a word whose top 12 bits are 0: e = 12 + the leading zero bits plus
        one of the stream of fresh words, u by ldexp, exact (rounded where u is subnormal)."""
        e = 12
        fresh = 0
        while not fresh:  # a word is 0 w.p. 2^-64, on random bits only
            fresh = int(self._words(1)[0])
            e += 65 - fresh.bit_length() if fresh else 64
        return math.ldexp((1 << 52) + (word & ((1 << 52) - 1)), -52 - e)

    def random(self, size=None):
        """Uniform on (0, 1): u = (2^52 + m) 2^-(52 + e), m a uniform 52-bit mantissa and
        e a geometric exponent, so every binade [2^-k, 2^(1-k)) has probability 2^-k."""
        count = self._count(size)
        values = self._uniforms(self._words(count))
        return values.reshape(size) if size is not None else float(values[0])

    def standard_normal(self, size=None):
        """Box-Muller (_box_muller) in blocks of ``_BLOCK`` normals, each from its own
        draw of entropy."""
        count = self._count(size)
        values = numpy.empty(count + count % 2)
        for start in range(0, values.size, self._BLOCK):
            block = values[start:start + self._BLOCK]
            words = self._words(block.size)
            self._uniforms(words[:block.size // 2], out=block[:block.size // 2])
            self._box_muller(words[block.size // 2:], block)
        values = values[:count]
        return values.reshape(size) if size is not None else float(values[0])

    def _box_muller(self, angle, out):
        """Normals r (cos, sin)(theta) into out (2n,), which holds in out[:n] the uniforms u
        of the radius r = sqrt(-2 ln u) (_uniforms, every binade). The angle
        theta = pi (k 2^-54 + b) comes from the n words ``angle``, k their top 54 bits as a
        signed integer and b their lowest bit: uniform on a grid of 2^55 points. cos and sin
        come from one tangent t = tan(pi k 2^-55), |t| <= 1: with w = (-1)^b 2r / (1 + t^2),
        the pair is (w - (-1)^b r, t w) = (-1)^b r (1 - t^2, 2t) / (1 + t^2)."""
        n = angle.size
        x, y = out[:n], out[n:]
        numpy.log(x, out=x)
        x *= -8.0
        numpy.sqrt(x, out=x)  # 2r
        bits = x.view(numpy.uint64)
        bits ^= angle << numpy.uint64(63)  # (-1)^b 2r
        numpy.multiply(angle.view(numpy.int64) >> 10, math.pi * 2.0 ** -55, out=y)
        numpy.tan(y, out=y)
        w = numpy.multiply(y, y)
        w += 1.0
        numpy.divide(x, w, out=w)
        y *= w
        x *= 0.5
        numpy.subtract(w, x, out=x)
        return out

    def laplace(self, loc=0.0, scale=1.0, size=None):
        """loc + scale * sign * Exp(1): the sign is one random bit, Exp(1) = -ln u."""
        count = self._count(size)
        sign = numpy.where(self._words(count) >> numpy.uint64(63), -1.0, 1.0)
        values = loc + scale * sign * -numpy.log(self.random(count))
        return values.reshape(size) if size is not None else float(values[0])

    def gamma(self, shape, scale=1.0, size=None):
        """Gamma(shape, scale) for shape >= 1 by Marsaglia-Tsang (vectorized rejection). A
        round draws the normals and uniforms of 1/16 more candidates than are missing (at
        least 95% are accepted) from one draw of entropy and keeps the first accepted:
        candidate d v, v = (1 + c x)^3, x normal, accepted if v > 0 and
        ln u < x^2 / 2 + d (1 - v + ln v)."""
        if shape < 1:
            raise ValueError("SecureGenerator.gamma supports shape >= 1")
        count = self._count(size)
        d = shape - 1.0 / 3.0
        c = 1.0 / math.sqrt(9.0 * d)
        out = numpy.empty(count)
        done = 0
        while done < count:  # >= 95% accepted per round, on random bits only
            draw = count - done + (count - done) // 16 + 2
            pairs = (draw + 1) // 2
            words = self._words(draw + 2 * pairs)
            u = numpy.empty(draw + 2 * pairs)  # acceptance uniforms, then the normals
            self._uniforms(words[:draw + pairs], out=u[:draw + pairs])
            x = self._box_muller(words[draw + pairs:], u[draw:])[:draw]
            v = c * x
            v += 1.0
            positive = v > 0
            v *= v * v
            bound = numpy.log(numpy.where(positive, v, 1.0))
            bound -= v
            bound += 1.0
            bound *= d
            x *= x
            x *= 0.5
            bound += x
            ok = positive & (numpy.log(u[:draw]) < bound)
            accepted = v[ok][:count - done]
            out[done:done + accepted.size] = accepted
            done += accepted.size
        values = out * (d * scale)
        return values.reshape(size) if size is not None else float(values[0])

