"""The projection-weight build of the generated modules before issue 14, kept as the
reference the benchmarks time and the tests compare with: atoms laid out m-minor
(numpy.sinc; the Legendre recurrence writing strided columns), weighted node sums by
``sum(w * e, axis=1)``, ``reduceat`` for every piece, the Gauss rule computed per call.
Modules whose orthonormal basis is their sinc or Legendre atoms (sinc_ecg, monomial32)."""
import numpy


def original_atoms(module, x, p):
    """The atoms of ``module`` at x as the original code computed them: shape (..., m)."""
    size = module._ATOMS_SIZE
    if hasattr(module, "_SINC_SHIFTS"):
        return numpy.sinc(x[..., None] - module._SINC_SHIFTS)
    lo, hi = module._domain(p)
    u = (2.0 * x - lo - hi) / (hi - lo)
    out = numpy.empty(x.shape + (size,))
    out[..., 0] = 1.0
    out[..., 1] = u
    for k in range(1, size - 1):
        out[..., k + 1] = ((2 * k + 1) * u * out[..., k] - k * out[..., k - 1]) / (k + 1)
    return out * numpy.sqrt((2.0 * numpy.arange(size) + 1.0) / (hi - lo))


def original_weights(module, t, p):
    """(S, m) projection weights of the grid t, built as before issue 14."""
    out = numpy.zeros((t.size, module.BASIS_SIZE))
    for run in numpy.split(numpy.arange(t.size), numpy.flatnonzero(numpy.diff(t) == 0) + 1):
        if run.size >= 2:
            out[run] = _run_weights(module, t[run], p)
    return out


def _run_weights(module, t, p):
    h = numpy.diff(t)
    blocks = list(module._sub_pieces(t, h, p))  # the blocks of sub-pieces, all at once
    piece, start, width = (numpy.concatenate([block[i] for block in blocks]) for i in range(3))
    order = blocks[0][3]
    xi, w = numpy.polynomial.legendre.leggauss(order)
    first = numpy.searchsorted(piece, numpy.arange(h.size))
    s = start[:, None] + width[:, None] * (xi + 1.0) / 2.0
    x = t[piece][:, None] + s * h[piece][:, None]
    wt = (h[piece] * width)[:, None] * w / 2.0
    left = numpy.empty((piece.size, module.BASIS_SIZE))
    right = numpy.empty((piece.size, module.BASIS_SIZE))
    rows = max(1, (1 << 22) // (order * module._ATOMS_SIZE))
    for begin in range(0, piece.size, rows):
        block = slice(begin, begin + rows)
        e = original_atoms(module, x[block], p)
        ws = (wt[block] * s[block])[..., None]
        wl = wt[block][..., None] - ws
        left[block] = numpy.sum(wl * e, axis=1)
        right[block] = numpy.sum(ws * e, axis=1)
    out = numpy.zeros((t.size, module.BASIS_SIZE))
    out[:-1] += numpy.add.reduceat(left, first, axis=0)
    out[1:] += numpy.add.reduceat(right, first, axis=0)
    return out
