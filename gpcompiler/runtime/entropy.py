"""Random bits from OS entropy, and the choice of the noise source (docs/design.md, "Secure
noise"). Exact releases (exact.py) consume 64-bit words only.

Entropy: 64-bit words from OpenSSL's CSPRNG through Python's ``ssl.RAND_bytes`` (NIST SP
800-90A CTR_DRBG with AES-256, seeded and reseeded from the OS, reseeded after a fork; about
5 GB/s with AES instructions, 15 times SHAKE-128's speed here), or from ``os.urandom`` where
Python was built without OpenSSL.
"""
import numbers
import os

import numpy


_DRAW = 1 << 30  # bytes per call of ssl.RAND_bytes (it takes a C int)


def _random_bytes(count):
    """``count`` bytes of OpenSSL's CSPRNG (ssl.RAND_bytes, in pieces of at most _DRAW
    bytes; one piece is returned as drawn, not copied), or of os.urandom without it."""
    try:
        import ssl
    except ImportError:
        return os.urandom(count)
    return b"".join(ssl.RAND_bytes(min(_DRAW, count - start)) for start in range(0, count, _DRAW))


class SecureGenerator:
    """OS-entropy random words: the default noise source of every release."""

    def _words(self, count):
        """``count`` random 64-bit words (read only)."""
        return numpy.frombuffer(_random_bytes(8 * count), dtype=numpy.uint64)


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
