"""[curve] outside = "hold" as a map of samples (docs/clipping.md, "Held curves"): the curve
that holds its first and last values out to the ends lo, hi of the curve interval is, on
[lo, hi], exactly the piecewise-linear curve of the samples (lo, y_first), (t, y)...,
(hi, y_last), zero outside them. Every module with this option applies the map once, to
the whole curve, and then projects and clips that curve as a curve zero outside its samples,
in whatever metric; the map depends on no metric."""
import numpy


def held_times(t, interval):
    """The times t (..., S) with lo first and hi last (t as given when S = 0: no samples is
    the zero function)."""
    if t.shape[-1] == 0:
        return t
    ends = numpy.ones(t.shape[:-1] + (1,))
    return numpy.concatenate([interval[0] * ends, t, interval[1] * ends], axis=-1)


def held_samples(t, y, interval, value_axes):
    """(times, values) of the held curve: held_times, and the values y (..., S), or
    (..., S, n) when ``value_axes`` is 1, with the first and last repeated. One sample is
    the constant function on [lo, hi]; a sample at lo or hi gives a repeated time of equal
    values (no jump)."""
    if t.shape[-1] == 0:
        return t, y
    axis = y.ndim - 1 - value_axes
    return (held_times(t, interval),
            numpy.concatenate([y.take([0], axis), y, y.take([-1], axis)], axis=axis))
