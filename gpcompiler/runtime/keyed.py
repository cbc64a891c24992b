"""Addressed random words from a key (docs/reference/randomness.md): the same release in every
target for the same key, for reproducible and conformance releases only (a key known to
others makes the noise known: docs/threat-model.md).

Word (row, index, level) is the little-endian 64-bit integer at bytes 8 index .. 8 index + 7
of SHAKE128(key || row || level) (FIPS 202), row 8 bytes and level 4 bytes little-endian: a
PRF of the key at that address. row: the release row; index: the uniform's place in the
row's layout (runtime/exact.py); level: 0 for the fast path's word, 1, 2, ... for each
64-bit extension in refinement.
"""
import hashlib

import numpy


class KeyedGenerator:
    """Words by address from a 256-bit key. Each exact release takes the next rows: a call
    with R rows uses the row addresses row, ..., row + R - 1 (C order over the batch axes)
    and advances ``row`` by R, so splitting a batch into consecutive calls, or releasing row
    r alone with KeyedGenerator(key, row=r), gives the same bits."""

    def __init__(self, key, row=0):
        if isinstance(key, str):
            try:
                key = bytes.fromhex(key)
            except ValueError:
                raise ValueError("a key must be 64 hexadecimal digits (256 bits)") from None
        if not isinstance(key, bytes) or len(key) != 32:
            raise ValueError("a key must be 32 bytes or 64 hexadecimal digits (256 bits)")
        if isinstance(row, bool) or not isinstance(row, int) or not 0 <= row < 1 << 64:
            raise ValueError(f"a row address must be an integer in [0, 2^64), got {row!r}")
        self._key, self.row = key, row

    def _reserve(self, rows):
        """The addresses of the next ``rows`` rows (a list of ints), taken."""
        first = self.row
        if first + rows > 1 << 64:
            raise ValueError("the row addresses of this key are exhausted (2^64 rows)")
        self.row = first + rows
        return list(range(first, first + rows))

    def _stream(self, row, level, count):
        """Words (row, 0..count-1, level) as little-endian bytes: one SHAKE128 output."""
        message = self._key + row.to_bytes(8, "little") + level.to_bytes(4, "little")
        return hashlib.shake_128(message).digest(8 * count)

    def _row_words(self, rows, count):
        """Words (row, 0..count-1, 0) for each row address: an array (len(rows), count)."""
        data = b"".join(self._stream(row, 0, count) for row in rows)
        return numpy.frombuffer(data, dtype="<u8").astype(numpy.uint64).reshape(len(rows), count)

    def _addressed(self, addresses):
        """The words at the addresses (row, index, level), in order: one SHAKE128 output per
        (row, level)."""
        wanted = {}
        for row, index, level in addresses:
            wanted[row, level] = max(wanted.get((row, level), 0), index + 1)
        streams = {key: self._stream(*key, count) for key, count in wanted.items()}
        return numpy.array([int.from_bytes(streams[row, level][8 * index:8 * index + 8], "little")
                            for row, index, level in addresses], dtype=numpy.uint64)

    def _words(self, count):
        """Sequential words are not addressed: only exact releases take a key."""
        raise TypeError("a KeyedGenerator gives words by address, to exact releases only "
                        "(privatize, project_and_privatize); use an int seed or OS entropy here")
