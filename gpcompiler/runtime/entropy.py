"""Random bits from OS entropy, and the choice of the noise source (docs/design.md, "Secure
noise"). Exact releases (exact.py) consume 64-bit words only.

Entropy: 64-bit words from the OS CSPRNG (``os.urandom``) for draws of fewer than 128 words;
for larger draws a fresh 256-bit key from ``os.urandom`` per draw, expanded by the SHAKE-128
XOF (FIPS 202, ``hashlib``), a standard CSPRNG construction with 128-bit security, about
twice as fast as ``os.urandom`` here.
"""
import hashlib
import numbers
import os

import numpy


class SecureGenerator:
    """OS-entropy random words: the default noise source of every release."""

    _SHAKE_WORDS = 128  # from this many words, SHAKE-128 expands a fresh OS key (faster)

    def _words(self, count):
        """``count`` random 64-bit words: os.urandom, or for ``_SHAKE_WORDS`` words or more
        SHAKE-128 keyed by 32 fresh bytes of os.urandom."""
        if count < self._SHAKE_WORDS:
            data = os.urandom(8 * count)
        else:
            data = hashlib.shake_128(os.urandom(32)).digest(8 * count)
        return numpy.frombuffer(data, dtype=numpy.uint64)


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
    if not (hasattr(rng, "_words") or hasattr(rng, "integers")):
        raise TypeError(f"rng must be None, an int seed or a numpy Generator, got {rng!r}")
    return rng
